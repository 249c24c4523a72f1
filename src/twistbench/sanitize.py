"""Text that leaves the harness: secrets redacted, and terminal output that data cannot steer.

`Redactor` scrubs secrets from everything written to disk or printed. A secret is the value of an
option or environment variable whose name contains a secret word as a whole word (`api_key`,
`OPENAI_API_KEY`, `token`, `client_secret`, `password`; not `max_tokens` or `tokenizers`), and the
user-info part of any URL (`https://user:pw@host`). Each secret is redacted in every form it can
take on its way out: raw, JSON-escaped (once or twice, ASCII or not), as Python repr shows it,
URL-encoded, and as the prefix a cut message ends with.

`plain` makes a string safe to print on a terminal: rich markup is escaped (a system named
`[/]` prints as that, and cannot break the output) and control characters (ANSI escape sequences,
bells, carriage returns) from data are shown as visible escapes instead of being sent.

This module imports nothing of ours: the CLI, the runner and the audit all use it.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlsplit

from rich.markup import escape as markup_escape

REDACTED = "***redacted***"

# Whole words that make an option or variable name secret. "key" counts only as the last word
# (api_key, openai_key, ssh_key), never inside another word (monkey, keyboard) or alone in the
# middle (key_path).
_SECRET_WORDS = frozenset({
    "token", "secret", "password", "passwd", "passphrase", "pwd", "credential", "credentials",
    "bearer", "auth", "authorization", "cookie", "apikey", "privatekey", "accesskey",
    "secrets", "passwords", "passwds", "cookies",
})
# "tokens" is a secret word only after one of these (ACCESS_TOKENS), never alone (max_tokens).
_TOKENS_AFTER = frozenset({"access", "auth", "api", "bearer", "refresh", "session", "id"})
# Environment variables whose names look secret but hold the shell's working directory.
_SHELL_PATH_VARS = frozenset({"PWD", "OLDPWD"})
# Switch values of secret-named options (use_auth=true) are not secrets: redacting them would hide
# every "true" in every message.
_NOT_SECRET_VALUES = frozenset({"true", "false", "none", "null", "yes", "no"})
_MIN_OPTION_SECRET = 4  # shorter option values would redact ordinary words
_MIN_ENV_SECRET = 6
_MIN_PREFIX = 4  # the shortest tail of a cut message that is treated as a leaked prefix
# user:password@ or a bare token@ right after the scheme (https://TOKEN@host).
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@]+)@")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_words(name: str) -> list[str]:
    """'OPENAI_API_KEY' -> ['openai', 'api', 'key']; 'apiKey' -> ['api', 'key']."""
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", _CAMEL.sub("_", str(name))) if w]


def is_secret_name(name: str) -> bool:
    """True for names like api_key, OPENAI_API_KEY, access-token, clientSecret, password."""
    words = name_words(name)
    if not words:
        return False
    if any(w in _SECRET_WORDS for w in words):
        return True
    if any(w == "tokens" and i and words[i - 1] in _TOKENS_AFTER for i, w in enumerate(words)):
        return True
    return words[-1] in ("key", "keys") and len(words) > 1


def _userinfo_secrets(value: str) -> set[str]:
    """The password (and user:password) of a URL with credentials, e.g. endpoint options."""
    out: set[str] = set()
    for m in _USERINFO.finditer(value):
        info = m.group("userinfo")
        out.add(info)
        _, _, password = info.partition(":")
        if password:
            out.add(password)
    try:
        parts = urlsplit(value)
        if parts.password:
            out |= {parts.password, unquote(parts.password)}  # percent-encoded and as typed
        elif parts.username and "@" in parts.netloc:
            out |= {parts.username, unquote(parts.username)}  # a bare token as user-info
    except ValueError:
        pass
    return out


def _forms(secret: str) -> set[str]:
    """Every spelling of `secret` that can end up in a file or on a terminal."""
    once = json.dumps(secret, ensure_ascii=False)[1:-1]
    forms = {
        secret,
        once,
        json.dumps(secret)[1:-1],  # ensure_ascii=True: non-ASCII as \\uXXXX
        json.dumps(once, ensure_ascii=False)[1:-1],  # JSON inside JSON (an error message)
        json.dumps(json.dumps(secret)[1:-1])[1:-1],
        repr(secret)[1:-1],
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
    }
    return {f for f in forms if len(f) >= _MIN_PREFIX}


class Redactor:
    """Scrubs secrets from text and structures before they are written or printed.

    options: the system's options (name -> value); values of secret-named options are secrets,
    and so are credentials inside any option URL. environ: the environment (default os.environ);
    values of secret-named variables of at least 6 characters are secrets. Redaction is by value,
    so a secret echoed back inside a system's answer or an exception message is scrubbed too.
    """

    def __init__(self, options: Mapping[str, Any] | None = None,
                 environ: Mapping[str, str] | None = None):
        env = os.environ if environ is None else environ
        values: set[str] = set()
        for k, v in (options or {}).items():
            if v is None:
                continue
            text = str(v)
            if is_secret_name(str(k)) and len(text) >= _MIN_OPTION_SECRET \
                    and text.lower() not in _NOT_SECRET_VALUES:
                values.add(text)
            values |= _userinfo_secrets(text)
        values |= {v for k, v in env.items()
                   if k not in _SHELL_PATH_VARS and is_secret_name(k) and len(v) >= _MIN_ENV_SECRET}
        self._set(values)

    def extended(self, options: Mapping[str, Any]) -> Redactor:
        """A redactor for these secrets and those of `options` (e.g. a system's config)."""
        more = Redactor(options, environ={})
        out = Redactor({}, environ={})
        out._set(set(self.secrets) | set(more.secrets))
        return out

    def _set(self, values: set[str]) -> None:
        self.secrets = sorted(values, key=len, reverse=True)
        forms: set[str] = set()
        for s in self.secrets:
            forms |= _forms(s)
        # Longest first, so a secret that contains another is replaced whole.
        self._forms = sorted(forms, key=len, reverse=True)

    def text(self, s: str) -> str:
        """`s` with every form of every secret, and every URL's user-info, replaced."""
        if not isinstance(s, str):
            s = str(s)
        for form in self._forms:
            if form in s:
                s = s.replace(form, REDACTED)
        return _USERINFO.sub(lambda m: m.group("scheme") + REDACTED + "@", s)

    def _tail(self, s: str) -> str:
        """A text cut short that ends with the start of a secret loses that tail."""
        for form in self._forms:
            for n in range(len(form) - 1, _MIN_PREFIX - 1, -1):
                if s.endswith(form[:n]):
                    return s[:-n] + REDACTED
        return s

    def cut(self, s: str, limit: int) -> str:
        """Redact, then cut to `limit` characters, so no prefix of a secret survives the cut (and
        a message that arrives already cut loses a trailing start of a secret too)."""
        s = self.text(s)
        if len(s) <= limit:
            return self._tail(s)
        return self._tail(s[:limit]) + "…"

    def config(self, cfg: Any) -> Any:
        """Redact a structure: values under secret names entirely, every string by value."""
        if isinstance(cfg, Mapping):
            return {self.text(str(k)): (REDACTED if is_secret_name(str(k)) and v not in (None, "")
                                        else self.config(v)) for k, v in cfg.items()}
        if isinstance(cfg, (list, tuple)):
            return [self.config(v) for v in cfg]
        if isinstance(cfg, str):
            return self.text(cfg)
        return cfg

    def values(self, obj: Any) -> Any:
        """Redact every string in a JSON-like structure by value (keys included); names are not
        judged (a system's output field called `token` is data, not an option)."""
        if isinstance(obj, Mapping):
            return {self.text(str(k)): self.values(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.values(v) for v in obj]
        if isinstance(obj, str):
            return self.text(obj)
        return obj


# Control characters other than tab and newline, and the C1 range, are shown, not sent.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def control_free(s: str) -> str:
    """`s` with control characters (ESC, BEL, CR, ...) shown as \\xNN, and Unicode format
    characters (bidi overrides) as \\uNNNN, so data cannot move the cursor or hide text."""
    s = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", s)
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cf" else c for c in s)


def plain(value: Any) -> str:
    """Any value as text that is safe to hand to rich: markup escaped, controls made visible."""
    return markup_escape(control_free(safe_str(value)))


def safe_str(obj: Any) -> str:
    """str(obj) that never raises (an exception whose __str__ raises is still reported)."""
    try:
        s = str(obj)
    except Exception as exc:  # noqa: BLE001 - the object is the user's; anything can happen
        try:
            inner = type(exc).__name__
        except Exception:  # noqa: BLE001
            inner = "error"
        s = f"<unprintable: __str__ raised {inner}>"
    if not isinstance(s, str):
        return "<unprintable>"
    return str.__add__("", s)  # a plain str, whatever subclass __str__ returned


def type_name(obj: Any) -> str:
    """The class name of `obj`, never raising."""
    try:
        name = type(obj).__name__
        return name if isinstance(name, str) else "object"
    except Exception:  # noqa: BLE001
        return "object"
