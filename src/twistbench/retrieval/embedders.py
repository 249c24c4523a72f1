"""The embedders `--embedder` chooses besides the built-in MiniLM: what they share, the reading
of a sentence-transformers directory's pooling for `onnx:DIR` (its ONNX runner is dense.py's,
the built-in model's), and `openai:MODEL`, an OpenAI-compatible /v1/embeddings endpoint.

The endpoint comes from the environment the LLM client reads (llm/client.py), with the same
TWIST_<ROLE>_* override its roles have, for the role EMBED: TWIST_EMBED_BASE_URL, else
TWIST_LLM_BASE_URL, else OPENAI_BASE_URL; the key likewise (TWIST_EMBED_API_KEY,
TWIST_LLM_API_KEY, OPENAI_API_KEY). The variables are read here, not through llm/, because
retrieval sits below llm in ARCHITECTURE.md's layers. A failed request or a reply that is not
one finite vector per text of one dimension raises EmbeddingError: never a zero vector.

Requests (`OpenAIEmbedder`): batches of OPENAI_BATCH texts, up to TWIST_EMBED_CONCURRENCY (4) of
them at once, results in input order. HTTP 429, 5xx and timeouts (TWIST_EMBED_TIMEOUT_S, 120 s a
request) are retried TWIST_EMBED_RETRIES (3) times with exponential backoff (1 s, 2 s, 4 s ...,
at most 30 s, jittered) or the wait the server's Retry-After asks (at most 60 s); then the
request fails with EmbeddingError. The dimension is the first reply's, or TWIST_EMBED_DIM when
set (every reply is checked against it): no request is sent just to learn it.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from twistbench.errors import InputError

OPENAI_BATCH = 64  # texts per /v1/embeddings request
OPENAI_TIMEOUT_S = 120.0  # per request: TWIST_EMBED_TIMEOUT_S
OPENAI_CONCURRENCY = 4  # requests in flight at once: TWIST_EMBED_CONCURRENCY
OPENAI_RETRIES = 3  # after the first try, on 429 / 5xx / timeout: TWIST_EMBED_RETRIES
BACKOFF_S, BACKOFF_MAX_S, RETRY_AFTER_MAX_S = 1.0, 30.0, 60.0


class EmbeddingError(RuntimeError):
    """An embedder failed or answered out of form (an error of the item, never a score)."""


class Embedder(Protocol):
    @property
    def dim(self) -> int: ...

    def model_id(self) -> str: ...

    def run(self, texts: list[str]) -> np.ndarray: ...


def onnx_settings(folder: Path) -> dict[str, object]:
    """Pooling, normalisation, token limit and width of a sentence-transformers directory, from
    modules.json (a Normalize module), 1_Pooling/config.json (or the folder modules.json names),
    sentence_bert_config.json (max_seq_length) and config.json (hidden_size). Without those
    files: mean pooling, L2 (the width is then learnt by embedding one text)."""
    settings: dict[str, object] = {"pooling": "mean", "normalize": True}
    pooling_dir = folder / "1_Pooling"
    modules = _json(folder / "modules.json")
    if isinstance(modules, list):
        types = [str(m.get("type", "")) for m in modules if isinstance(m, dict)]
        settings["normalize"] = any(t.endswith("Normalize") for t in types)
        for m in modules:
            if isinstance(m, dict) and str(m.get("type", "")).endswith("Pooling"):
                pooling_dir = folder / str(m.get("path", "1_Pooling"))
    pool = _json(pooling_dir / "config.json")
    if isinstance(pool, dict):
        if pool.get("pooling_mode_cls_token"):
            settings["pooling"] = "cls"
        elif pool.get("pooling_mode_max_tokens"):
            settings["pooling"] = "max"
        elif pool.get("pooling_mode_mean_tokens"):
            settings["pooling"] = "mean"
        else:
            raise InputError(str(pooling_dir / "config.json"), "no pooling mode this runner has",
                             field="pooling_mode_*",
                             expected="pooling_mode_mean_tokens, _cls_token or _max_tokens true")
    # the transformer's width, so a run whose texts are all cached loads no model (embed()
    # still checks every computed vector against it)
    config = _json(folder / "config.json")
    if isinstance(config, dict) and isinstance(config.get("hidden_size"), int):
        settings["dim"] = config["hidden_size"]
    st = _json(folder / "sentence_bert_config.json")
    if isinstance(st, dict) and isinstance(st.get("max_seq_length"), int):
        settings["max_tokens"] = st["max_seq_length"]
    return settings


def _json(path: Path) -> object:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"not readable JSON: {exc}", expected="a JSON file") from None


def onnx_files(folder: Path) -> tuple[Path, Path]:
    """model.onnx (or onnx/model.onnx, the layout of exported hub models) and tokenizer.json of
    a model directory; InputError naming what is missing."""
    if not folder.is_dir():
        raise InputError("--embedder", f"onnx:{folder}: not a directory",
                         expected="onnx:DIR, a folder with model.onnx and tokenizer.json")
    model = next((p for p in (folder / "model.onnx", folder / "onnx" / "model.onnx")
                  if p.is_file()), None)
    tokenizer = folder / "tokenizer.json"
    missing = [n for n, p in (("model.onnx", model), ("tokenizer.json", tokenizer))
               if p is None or not p.is_file()]
    if missing:
        raise InputError("--embedder", f"onnx:{folder}: no {' or '.join(missing)}",
                         expected="onnx:DIR, a folder with model.onnx and tokenizer.json")
    return model, tokenizer  # type: ignore[return-value]


def endpoint_from_env(env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(base URL, API key) of the embeddings endpoint; InputError when no base URL is set."""
    env = os.environ if env is None else env

    def first(*names: str) -> str:
        return next((env[n].strip() for n in names if env.get(n, "").strip()), "")

    base = first("TWIST_EMBED_BASE_URL", "TWIST_LLM_BASE_URL", "OPENAI_BASE_URL")
    if not base:
        raise InputError("--embedder", "openai:MODEL needs an endpoint",
                         field="TWIST_EMBED_BASE_URL",
                         expected="TWIST_EMBED_BASE_URL or TWIST_LLM_BASE_URL, e.g. "
                                  "http://localhost:8000/v1")
    return base.rstrip("/"), first("TWIST_EMBED_API_KEY", "TWIST_LLM_API_KEY", "OPENAI_API_KEY")


def settings_from_env(env: Mapping[str, str] | None = None) -> dict[str, float | int | None]:
    """OpenAIEmbedder's keyword settings from TWIST_EMBED_TIMEOUT_S, TWIST_EMBED_CONCURRENCY,
    TWIST_EMBED_RETRIES and TWIST_EMBED_DIM (unset: the defaults; dim None = learnt from the
    first reply); InputError naming the variable for a value out of range."""
    env = os.environ if env is None else env

    def number(name: str, kind: type, low: float, high: float) -> float | int | None:
        raw = env.get(name, "").strip()
        if not raw:
            return None
        try:
            value = kind(raw)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or not low <= value <= high:
            raise InputError(name, f"is {raw!r}", field=name,
                             expected=f"{'an integer' if kind is int else 'a number'} from "
                                      f"{low:g} to {high:g}")
        return value

    timeout = number("TWIST_EMBED_TIMEOUT_S", float, 0.001, 3600)
    concurrency = number("TWIST_EMBED_CONCURRENCY", int, 1, 64)
    retries = number("TWIST_EMBED_RETRIES", int, 0, 20)
    return {"timeout_s": OPENAI_TIMEOUT_S if timeout is None else timeout,
            "concurrency": OPENAI_CONCURRENCY if concurrency is None else concurrency,
            "retries": OPENAI_RETRIES if retries is None else retries,
            "dim": number("TWIST_EMBED_DIM", int, 1, 1 << 16)}


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """The wait a Retry-After header asks for, in seconds (delta-seconds or an HTTP date);
    None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _public_url(url: str) -> str:
    """The URL without credentials, query or fragment (it goes into manifests)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class _Retryable(Exception):
    """A failure worth another try (429, 5xx, a timeout); `wait_s` is the server's Retry-After."""

    def __init__(self, message: str, wait_s: float | None = None) -> None:
        super().__init__(message)
        self.wait_s = wait_s


class OpenAIEmbedder:
    """An OpenAI-compatible /v1/embeddings endpoint (vLLM, Ollama, TEI), batched, `concurrency`
    requests at once, failures retried (module docstring). Its vectors are used as the server
    returns them (no normalisation of ours)."""

    def __init__(self, model: str, base_url: str, api_key: str = "", *,
                 batch_size: int = OPENAI_BATCH, timeout_s: float = OPENAI_TIMEOUT_S,
                 concurrency: int = OPENAI_CONCURRENCY, retries: int = OPENAI_RETRIES,
                 dim: int | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not model:
            raise InputError("--embedder", "openai: without a model name",
                             expected="openai:MODEL")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.concurrency = concurrency
        self.retries = retries
        self._configured_dim = dim  # TWIST_EMBED_DIM: every reply must match it
        self._dim: int | None = dim
        self._dim_lock = threading.Lock()
        self._sleep = sleep
        self.requests = 0  # sent, retries included (tests and diagnostics)

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIEmbedder({self.model!r}, {_public_url(self.base_url)!r})"

    def model_id(self) -> str:
        # The endpoint is part of the id: two servers may serve different weights under one name.
        return f"openai:{self.model} endpoint={_public_url(self.base_url)}"

    @property
    def known_dim(self) -> int | None:
        """The dimension if configured or seen in a reply, else None (dense.embed then learns
        it from the cache or from its first real batch)."""
        return self._dim

    @property
    def dim(self) -> int:
        if self._dim is None:  # only for a caller that needs it before any text is embedded
            self.run(["dimension"])
        return self._dim  # type: ignore[return-value]

    def run(self, texts: list[str]) -> np.ndarray:
        batches = [texts[i:i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        if len(batches) <= 1 or self.concurrency <= 1:
            parts = [self._request(b) for b in batches]
        else:
            with ThreadPoolExecutor(min(self.concurrency, len(batches)),
                                    thread_name_prefix="twist-embed") as pool:
                futures = [pool.submit(self._request, b) for b in batches]
                try:
                    parts = [f.result() for f in futures]  # input order, whatever finished first
                except BaseException:
                    for f in futures:
                        f.cancel()  # the first failure ends the call: no more requests
                    raise
        return np.concatenate(parts) if parts else np.zeros((0, self._dim or 0), np.float32)

    def _request(self, texts: list[str]) -> np.ndarray:
        """One batch, retried on 429 / 5xx / timeouts with backoff; EmbeddingError after the
        last try or at once for any other failure."""
        where = self.model_id()
        for attempt in range(self.retries + 1):
            try:
                return self._send(texts)
            except _Retryable as exc:
                if attempt == self.retries:
                    tries = f"{attempt + 1} attempt{'s' if attempt else ''}"
                    raise EmbeddingError(f"{where}: {exc} (gave up after {tries})") from None
                backoff = min(BACKOFF_MAX_S, BACKOFF_S * 2 ** attempt) * random.uniform(0.5, 1)
                wait = backoff if exc.wait_s is None else min(exc.wait_s, RETRY_AFTER_MAX_S)
                self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(self, texts: list[str]) -> np.ndarray:
        url = f"{self.base_url}/embeddings"
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        body = json.dumps({"model": self.model, "input": texts}).encode("utf-8")
        req = urllib.request.Request(url, data=body, headers=headers, method="POST")
        where = f"{self.model_id()}"
        self.requests += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # noqa: S310
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read(200).decode("utf-8", "replace").strip()
            if exc.code == 429 or 500 <= exc.code <= 599:
                raise _Retryable(f"HTTP {exc.code} {detail}",
                                 retry_after_s(exc.headers.get("Retry-After"))) from None
            raise EmbeddingError(f"{where}: HTTP {exc.code} {detail}") from None
        except TimeoutError:
            raise _Retryable(f"no reply within {self.timeout_s:g} s (TWIST_EMBED_TIMEOUT_S)") \
                from None
        except (urllib.error.URLError, OSError) as exc:
            if isinstance(getattr(exc, "reason", None), TimeoutError):
                raise _Retryable(f"no reply within {self.timeout_s:g} s "
                                 "(TWIST_EMBED_TIMEOUT_S)") from None
            raise EmbeddingError(f"{where}: request failed: {exc}") from None
        try:
            reply = json.loads(raw)
            rows = reply["data"]
            if not isinstance(rows, list) or len(rows) != len(texts):
                raise ValueError(f"{len(rows) if isinstance(rows, list) else 'no'} vectors "
                                 f"for {len(texts)} texts, expected one per text")
            # OpenAI's reply carries each vector's input index; order by it when present.
            if all(isinstance(r, dict) and isinstance(r.get("index"), int) for r in rows):
                rows = sorted(rows, key=lambda r: r["index"])
                if [r["index"] for r in rows] != list(range(len(texts))):
                    raise ValueError("indexes are not 0..n-1")
            vectors = [r["embedding"] for r in rows]
            if not vectors or not all(isinstance(v, list) and v for v in vectors):
                raise ValueError("an embedding is not a non-empty list")
            if len({len(v) for v in vectors}) != 1:
                raise ValueError("embeddings of different lengths")
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                       and math.isfinite(x) for v in vectors for x in v):
                raise ValueError("an embedding holds a value that is not a finite number")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EmbeddingError(f"{where}: malformed reply: {exc}") from None
        out = np.asarray(vectors, dtype=np.float32)
        with self._dim_lock:
            if self._dim is None:
                self._dim = out.shape[1]
        if out.shape[1] != self._dim:
            source = ("TWIST_EMBED_DIM" if self._configured_dim is not None
                      else "the endpoint's earlier replies")
            raise EmbeddingError(f"{where}: malformed reply: vectors of {out.shape[1]} "
                                 f"dimensions, expected {self._dim} ({source})")
        return out
