"""Opt-in paraphrasing of generated turns through an OpenAI-compatible endpoint (`twist build cs
--paraphrase URL`), with a request-keyed on-disk cache so a rebuild is byte-identical and offline.
Off by default: the committed keys are template text.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from twistbench.errors import InputError


@dataclass(frozen=True)
class ParaphraseConfig:
    """An OpenAI-compatible endpoint that rewrites Track A turns (opt-in, off by default).

    base_url: e.g. "http://localhost:8000/v1" (POST {base_url}/chat/completions).
    model: the model name sent in each request.
    api_key_env: environment variable holding a bearer token (optional for local servers).
    cache_dir: on-disk cache, one JSON file per request keyed on the sha256 of the full request,
        so a rebuild with the same seed, endpoint and model is byte-identical and offline.
    transport: an httpx transport (tests use httpx.MockTransport); not part of the cache key.
    """

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    cache_dir: Path = Path(".twistbench-cache/paraphrase")
    temperature: float = 0.0
    timeout_s: float = 60.0
    transport: Any = None


PARAPHRASE_SYSTEM = (
    "You rewrite one workplace message so that it says exactly the same thing in different words. "
    "Keep the speaker's stance, every fact, every name, number, date and product name exactly as "
    "written, and keep it about the same length. Reply with the rewritten message only."
)


class Paraphraser:
    """Rewrites turns through the endpoint, with a request-keyed cache and a safety check:
    a rewrite that drops a protected string (a slot value the gold relies on), changes length
    wildly, or is empty is refused and the original turn is kept (counted)."""

    def __init__(self, cfg: ParaphraseConfig):
        self.cfg = cfg
        headers = {}
        key = os.environ.get(cfg.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(timeout=cfg.timeout_s, headers=headers,
                                    transport=cfg.transport)
        self.rewritten = 0
        self.kept = 0
        self.calls = 0

    def request(self, text: str) -> dict[str, Any]:
        return {"url": self.cfg.base_url.rstrip("/") + "/chat/completions",
                "model": self.cfg.model, "temperature": self.cfg.temperature,
                "messages": [{"role": "system", "content": PARAPHRASE_SYSTEM},
                             {"role": "user", "content": text}]}

    def _complete(self, req: dict[str, Any]) -> str:
        digest = hashlib.sha256(json.dumps(req, sort_keys=True).encode()).hexdigest()
        path = Path(self.cfg.cache_dir) / f"{digest}.json"
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))["content"]
        body = {k: v for k, v in req.items() if k != "url"}
        try:
            resp = self._client.post(req["url"], json=body)
            resp.raise_for_status()
            content = resp.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise InputError("--paraphrase", f"endpoint {req['url']} failed: {exc}",
                             expected="an OpenAI-compatible /chat/completions endpoint") from exc
        self.calls += 1
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"request": req, "content": content}, sort_keys=True),
                        encoding="utf-8")
        return content

    def rewrite(self, text: str, protected: Sequence[str]) -> str:
        out = (self._complete(self.request(text)) or "").strip()
        ok = (out and "\n" not in out and 0.5 <= len(out) / max(len(text), 1) <= 2.0
              and all(p in out for p in protected if p in text))
        if ok:
            self.rewritten += 1
            return out
        self.kept += 1
        return text
