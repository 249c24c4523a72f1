"""Token and cost accounting for one client, in a form a run puts into its manifest.

Tokens come from the server's `usage` block. A server that sends none (some llama.cpp and
Ollama builds, streams without `include_usage`) gets an estimate of one token per four
characters, and the call is counted in `estimated_calls`, so a summary never passes an
estimate off as a measurement. Cost is computed only from prices the user gave (USD per
million tokens); without a price for a model its cost is None, never 0.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from twistbench.errors import InputError


@dataclass(frozen=True)
class ModelPrice:
    """USD per million prompt tokens and per million completion tokens."""

    prompt_per_mtok: float
    completion_per_mtok: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt_per_mtok
                + completion_tokens * self.completion_per_mtok) / 1e6

    @classmethod
    def parse(cls, text: str, source: str = "TWIST_LLM_PRICE_PER_MTOK") -> ModelPrice:
        """'0.15,0.60' -> prompt 0.15, completion 0.60 USD per million tokens."""
        parts = [p.strip() for p in text.split(",")]
        try:
            if len(parts) != 2:
                raise ValueError
            prompt, completion = float(parts[0]), float(parts[1])
        except ValueError:
            raise InputError(source, f"cannot read price {text!r}",
                             expected="'PROMPT,COMPLETION' in USD per million tokens, "
                                      "e.g. '0.15,0.60'") from None
        finite = math.isfinite(prompt) and math.isfinite(completion)
        if prompt < 0 or completion < 0 or not finite:
            raise InputError(source, f"price {text!r} is negative or not finite",
                             expected="two non-negative numbers")
        return cls(prompt, completion)


def estimate_tokens(text: str) -> int:
    """Rough token count of a text: one token per four characters (OpenAI's rule of thumb)."""
    return math.ceil(len(text) / 4) if text else 0


def estimate_prompt_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Rough prompt tokens of a chat: content estimate plus the chat format's ~4 per message."""
    total = 2
    for message in messages:
        content = message.get("content") or ""
        if not isinstance(content, str):  # content parts: count their text
            content = " ".join(str(part.get("text", "")) for part in content
                               if isinstance(part, Mapping))
        total += 4 + estimate_tokens(content)
    return total


@dataclass
class _ModelTally:
    requests: int = 0
    network_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_calls: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    served_as: Counter = field(default_factory=Counter)


_TALLY_FIELDS = [f for f in _ModelTally.__dataclass_fields__ if f != "served_as"]


class UsageMeter:
    """Thread-safe counters. Tokens of cache hits are kept apart: they cost nothing this run."""

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None):
        self.prices = dict(prices or {})
        self._lock = threading.Lock()
        self._models: dict[str, _ModelTally] = {}
        self._errors: Counter = Counter()
        self._retries: Counter = Counter()
        self._events: Counter = Counter()  # json_fallback, cache_miss, cache_write_error
        self._cache_enabled = False

    def _tally(self, model: str) -> _ModelTally:
        tally = self._models.get(model)
        if tally is None:
            tally = self._models[model] = _ModelTally()
        return tally

    def record_request(self, model: str) -> None:
        with self._lock:
            self._tally(model).requests += 1

    def record(self, *, model: str, served_model: str | None, prompt_tokens: int,
               completion_tokens: int, estimated: bool, cached: bool) -> None:
        """A reply obtained (from the network or the cache), whatever its content."""
        with self._lock:
            tally = self._tally(model)
            if cached:
                tally.cache_hits += 1
                tally.cached_prompt_tokens += prompt_tokens
                tally.cached_completion_tokens += completion_tokens
                return
            tally.network_calls += 1
            tally.prompt_tokens += prompt_tokens
            tally.completion_tokens += completion_tokens
            tally.estimated_calls += int(estimated)
            if served_model:
                tally.served_as[served_model] += 1

    def record_error(self, kind: str) -> None:
        with self._lock:
            self._errors[kind] += 1

    def record_retry(self, reason: str) -> None:
        with self._lock:
            self._retries[reason] += 1

    def record_event(self, name: str) -> None:
        """Count `json_fallback`, `cache_miss` or `cache_write_error`."""
        with self._lock:
            self._events[name] += 1

    def enable_cache(self) -> None:
        with self._lock:
            self._cache_enabled = True

    def summary(self) -> dict[str, Any]:
        """JSON-ready totals and per-model figures for a run manifest."""
        with self._lock:
            tallies = self._models.values()

            def total(name: str) -> int:
                return sum(getattr(t, name) for t in tallies)

            by_model: dict[str, Any] = {}
            costs: list[float | None] = []
            for name, t in sorted(self._models.items()):
                price = self.prices.get(name)
                cost = price.cost(t.prompt_tokens, t.completion_tokens) if price else None
                if t.network_calls:
                    costs.append(cost)
                by_model[name] = {
                    **{f: getattr(t, f) for f in _TALLY_FIELDS},
                    "served_as": dict(sorted(t.served_as.items())),
                    "price_per_mtok": ([price.prompt_per_mtok, price.completion_per_mtok]
                                       if price else None),
                    "cost_usd": cost,
                }
            hits, misses = total("cache_hits"), self._events["cache_miss"]
            return {
                "requests": total("requests"),
                "network_calls": total("network_calls"),
                "errors": dict(sorted(self._errors.items())),
                "retries": dict(sorted(self._retries.items())),
                "json_mode_fallbacks": self._events["json_fallback"],
                "cache": {
                    "enabled": self._cache_enabled,
                    "hits": hits,
                    "misses": misses,
                    "hit_rate": hits / (hits + misses) if hits + misses else None,
                    "write_errors": self._events["cache_write_error"],
                },
                "tokens": {
                    "prompt": total("prompt_tokens"),
                    "completion": total("completion_tokens"),
                    "estimated_calls": total("estimated_calls"),
                    "cached_prompt": total("cached_prompt_tokens"),
                    "cached_completion": total("cached_completion_tokens"),
                },
                # None unless every model that made calls has a price: never a partial sum.
                "cost_usd": (sum(c for c in costs if c is not None)
                             if all(c is not None for c in costs) else None),
                "by_model": by_model,
            }
