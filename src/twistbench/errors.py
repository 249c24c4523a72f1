"""Errors a user must be able to act on. The CLI turns InputError into one line and exit code 2."""

from __future__ import annotations

import json
from typing import Any


class InputError(Exception):
    """Bad input: names the file, the line or record, the field and what was expected."""

    exit_code = 2

    def __init__(
        self,
        file: str,
        message: str,
        *,
        where: str | None = None,
        field: str | None = None,
        expected: str | None = None,
    ):
        self.file = str(file)
        self.where = where
        self.field = field
        self.expected = expected
        self.message = message
        parts = [self.file]
        if where:
            parts.append(where)
        if field:
            parts.append(f"field {field!r}")
        text = ": ".join(parts) + f": {message}"
        if expected:
            text += f" (expected {expected})"
        super().__init__(text)


def pydantic_to_input_error(file: str, where: str, exc: Exception) -> InputError:
    """The first problem of a pydantic ValidationError as an InputError."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        errs = errors()
        if errs:
            first = errs[0]
            loc = ".".join(str(p) for p in first.get("loc", ())) or None
            extra = f" (+{len(errs) - 1} more)" if len(errs) > 1 else ""
            return InputError(file, first.get("msg", str(exc)) + extra, where=where, field=loc,
                              expected=_expected(first))
    return InputError(file, str(exc), where=where)


def _expected(err: dict) -> str | None:
    typ = err.get("type", "")
    if typ == "missing":
        return "a value for this required field"
    if typ == "extra_forbidden":
        return "no such field"
    return typ.replace("_", " ") or None


def decode_utf8(data: bytes, file: str, where: str | None = None) -> str:
    """Bytes as UTF-8 text; InputError naming the line and byte of the first bad sequence."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(file, f"not UTF-8 text: byte {exc.start} (line {line}) is "
                         f"{exc.object[exc.start:exc.start + 1]!r}", where=where,
                         expected="a UTF-8 text file") from None


def load_json(data: bytes | str, file: str, where: str | None = None,
              expected: str = "valid JSON") -> Any:
    """json.loads whose every failure is an InputError naming the file (and record): text that
    is not UTF-8, invalid JSON, and JSON nested too deeply for Python to read."""
    text = decode_utf8(data, file, where) if isinstance(data, bytes) else data
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(file, f"not valid JSON: {exc.msg} (line {exc.lineno} column "
                         f"{exc.colno})", where=where, expected=expected) from None
    except RecursionError:
        raise InputError(file, "JSON nested too deeply to read", where=where,
                         expected="JSON nested at most a few hundred levels") from None


def read_bytes(path: Any, what: str = "file") -> bytes:
    """A file's bytes; InputError (not a traceback) when it is missing, a folder or unreadable."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise InputError(str(path), f"cannot read the {what}: {exc.strerror or exc}",
                         expected=f"a readable {what}") from None
