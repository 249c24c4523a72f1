"""Opt-in paraphrasing of generated turns through an OpenAI-compatible endpoint (`twist build cs
--paraphrase URL`), through the LLM client (llm/client.py: retries on 429 / 5xx / timeouts,
Retry-After honoured, accounting) and its response cache, so a rebuild with the same seed,
endpoint and model is byte-identical and makes no call. Off by default: the committed keys are
template text.

Cache: `cache_dir`/responses.sqlite3, keyed on the canonical request (model, messages,
temperature; llm/cache.py). A cache written before the move (one JSON file per request in
`cache_dir`, named by the sha256 of {url, model, temperature, messages}) is still read first,
so a key paraphrased with it rebuilds byte-identically.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twistbench.errors import InputError
from twistbench.llm import LLMClient, LLMConfig, LLMError, ResponseCache


@dataclass(frozen=True)
class ParaphraseConfig:
    """An OpenAI-compatible endpoint that rewrites Track A turns (opt-in, off by default).

    base_url: e.g. "http://localhost:8000/v1" (POST {base_url}/chat/completions).
    model: the model name sent in each request.
    api_key_env: environment variable holding a bearer token (optional for local servers).
    cache_dir: the response cache's folder (see the module docstring).
    """

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    cache_dir: Path = Path(".twistbench-cache/paraphrase")
    temperature: float = 0.0
    timeout_s: float = 60.0
    max_attempts: int = 6


PARAPHRASE_SYSTEM = (
    "You rewrite one workplace message so that it says exactly the same thing in different words. "
    "Keep the speaker's stance, every fact, every name, number, date and product name exactly as "
    "written, and keep it about the same length. Reply with the rewritten message only."
)


MIN_LENGTH_RATIO, MAX_LENGTH_RATIO = 0.5, 2.0


def refusal(original: str, rewrite: str, protected: Sequence[str], *,
            max_words: int | None = None, keep_question: bool = False) -> str | None:
    """Why a model's rewrite of `original` may not replace it, or None when it may: it must be
    one non-empty line, 0.5-2.0 times the original's length, and hold every protected string
    the original holds, verbatim (a slot value, a chain state, a PII form the gold relies on).
    `max_words` caps its length in words; `keep_question` requires that it asks a question
    ('?') exactly when the original does (a turn whose answer must not be missing stays one
    that asks nothing). Shared by the paraphraser (TWIST-CS 1.0) and the LoCoMo 2.0 restyle
    pass (itemgen/locomo_restyle.py)."""
    if not rewrite:
        return "empty"
    if "\n" in rewrite:
        return "more than one line"
    ratio = len(rewrite) / max(len(original), 1)
    if not MIN_LENGTH_RATIO <= ratio <= MAX_LENGTH_RATIO:
        return f"length ratio {ratio:.2f} (allowed {MIN_LENGTH_RATIO}-{MAX_LENGTH_RATIO})"
    lost = [p for p in protected if p in original and p not in rewrite]
    if lost:
        return f"drops protected {lost[0]!r}"
    if max_words is not None and len(rewrite.split()) > max_words:
        return f"{len(rewrite.split())} words (at most {max_words})"
    if keep_question and ("?" in rewrite) != ("?" in original):
        return "asks a question" if "?" in rewrite else "no longer asks its question"
    return None


def rewrite_client(cfg: ParaphraseConfig | Any, option: str) -> LLMClient:
    """The LLM client of a rewriting pass (this paraphraser, the LoCoMo 2.0 restyle pass): `cfg`
    has base_url, model, api_key_env, cache_dir, temperature, timeout_s and max_attempts; the
    response cache lives in cache_dir/responses.sqlite3. A bad endpoint setting is an InputError
    on `option`, the command-line option that gave it."""
    try:
        config = LLMConfig(base_url=cfg.base_url, model=cfg.model,
                           api_key=os.environ.get(cfg.api_key_env, ""),
                           temperature=cfg.temperature, timeout_s=cfg.timeout_s,
                           max_attempts=cfg.max_attempts)
    except InputError as exc:
        raise InputError(option, exc.message, field=exc.field, expected=exc.expected) from None
    return LLMClient(config, cache=ResponseCache(Path(cfg.cache_dir) / "responses.sqlite3"))


class Paraphraser:
    """Rewrites turns through the endpoint, with the response cache and a safety check:
    a rewrite that drops a protected string (a slot value the gold relies on), changes length
    wildly, or is empty is refused and the original turn is kept (counted). A failed call
    stops the build (InputError): a key is never half paraphrased."""

    def __init__(self, cfg: ParaphraseConfig):
        self.cfg = cfg
        self._client = rewrite_client(cfg, "--paraphrase")
        self.rewritten = 0
        self.kept = 0
        self.calls = 0

    def messages(self, text: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": PARAPHRASE_SYSTEM},
                {"role": "user", "content": text}]

    def _legacy(self, text: str) -> str | None:
        """The reply a pre-move cache file holds for this request, if there is one."""
        req: dict[str, Any] = {"url": self.cfg.base_url.rstrip("/") + "/chat/completions",
                               "model": self.cfg.model, "temperature": self.cfg.temperature,
                               "messages": self.messages(text)}
        digest = hashlib.sha256(json.dumps(req, sort_keys=True).encode()).hexdigest()
        path = Path(self.cfg.cache_dir) / f"{digest}.json"
        if not path.exists():
            return None
        return json.loads(path.read_text(encoding="utf-8"))["content"]

    def _complete(self, text: str) -> str:
        legacy = self._legacy(text)
        if legacy is not None:
            return legacy
        try:
            reply = self._client.complete(self.messages(text))
        except LLMError as exc:
            raise InputError("--paraphrase", f"endpoint {self._client.config.endpoint} failed: "
                             f"{exc.message}", expected="an OpenAI-compatible "
                             "/chat/completions endpoint") from None
        self.calls += not reply.cached
        return reply.text

    def rewrite(self, text: str, protected: Sequence[str]) -> str:
        out = (self._complete(text) or "").strip()
        if refusal(text, out, protected) is None:
            self.rewritten += 1
            return out
        self.kept += 1
        return text

    def close(self) -> None:
        """Flush the cache and close the connections."""
        self._client.close()
