"""The on-disk embedding cache: keys, round trips, many processes at once, and `embed` reading
and filling it (a fake model counts what is really computed)."""

from __future__ import annotations

import hashlib
import multiprocessing
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from twistbench.retrieval import dense, embcache
from twistbench.retrieval.embcache import EmbeddingCache, text_key

DIM = 8


def _vec(text: str) -> np.ndarray:
    """A vector determined by the text, so any stored row can be checked."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)


def test_key_is_sha256_of_model_and_text() -> None:
    assert text_key("m", "hello") == hashlib.sha256(b"1:mhello").digest()
    assert text_key("m", "hello") != text_key("m2", "hello")
    assert text_key("a", "b\0c") != text_key("a\0b", "c")  # no ambiguity across the separator
    assert len({text_key("m", t) for t in ("é", "e\u0301", "e")}) == 3  # no normalisation


def test_round_trip_first_write_kept_and_bad_rows_miss(tmp_path: Path) -> None:
    c = EmbeddingCache(tmp_path / "e.sqlite3", DIM)
    texts = ["a", "b", "a"]
    assert c.put_many("m", texts[:2], np.stack([_vec("a"), _vec("b")])) == 2
    got = c.get_many("m", texts)
    assert set(got) == {"a", "b"} and np.array_equal(got["a"], _vec("a"))
    assert c.get_many("other-model", ["a"]) == {}
    assert c.put_many("m", ["a"], np.ones((1, DIM))) == 0  # the first vector stays
    assert np.array_equal(c.get_many("m", ["a"])["a"], _vec("a"))
    with sqlite3.connect(c.path) as conn:  # a torn row (wrong size) is a miss, not garbage
        conn.execute("INSERT INTO vectors VALUES (?, ?)", (text_key("m", "torn"), b"\0" * 5))
    assert c.get_many("m", ["torn"]) == {}
    with pytest.raises(ValueError):
        c.put_many("m", ["x"], np.zeros((1, DIM + 1)))
    # 1,200 keys: the lookups go in several SELECTs
    many = [f"t{i}" for i in range(1200)]
    c.put_many("m", many, np.stack([_vec(t) for t in many]))
    assert len(c.get_many("m", many)) == 1200 and len(c) == 1203


def _writer(path: str, start: int) -> int:
    c = EmbeddingCache(path, DIM)
    texts = [f"text {i}" for i in range(start, start + 300)]
    written = 0
    for s in range(0, 300, 25):  # many small transactions interleave with the other writers
        chunk = texts[s:s + 25]
        got = c.get_many("m", chunk)
        todo = [t for t in chunk if t not in got]
        if todo:
            written += c.put_many("m", todo, np.stack([_vec(t) for t in todo]))
    return written


def test_concurrent_processes_store_each_text_once(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite3")
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(4) as pool:  # overlapping ranges: texts 100..399 are written by two or more
        written = pool.starmap(_writer, [(path, 0), (path, 100), (path, 200), (path, 100)])
    c = EmbeddingCache(path, DIM)
    texts = [f"text {i}" for i in range(500)]
    got = c.get_many("m", texts)
    assert sum(written) == len(c) == 500
    assert all(np.array_equal(got[t], _vec(t)) for t in texts)


class _FakeModel:
    """Stands in for the ONNX model: deterministic vectors, counts the texts it embeds."""

    dim = dense.DIM

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.id = "fake-model"

    def model_id(self) -> str:
        return self.id

    def run(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        v = np.stack([np.resize(_vec(t), dense.DIM) for t in texts])
        return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch, fresh_embedding_state: Path) -> _FakeModel:
    model = _FakeModel()
    monkeypatch.setattr(dense, "_active", model)
    return model


def test_embed_computes_each_distinct_text_once_across_processes(fake_model: _FakeModel,
                                                                 monkeypatch) -> None:
    texts = ["alpha", "beta", "alpha", "gamma"]
    first = dense.embed(texts)
    assert sorted(fake_model.texts) == ["alpha", "beta", "gamma"]
    # a new process: empty in-process cache, same file
    monkeypatch.setattr(dense, "_cache", dense.OrderedDict())
    monkeypatch.setattr(embcache, "_shared", {})
    again = dense.embed(texts + ["delta"])
    assert np.array_equal(again[:4], first)
    assert sorted(fake_model.texts) == ["alpha", "beta", "delta", "gamma"]  # only the new one
    # another model never reads these vectors
    monkeypatch.setattr(dense, "_cache", dense.OrderedDict())
    fake_model.id = "another-model"
    dense.embed(["alpha"])
    assert fake_model.texts.count("alpha") == 2
    # cache=False neither reads nor writes
    dense.embed(["epsilon"], cache=False)
    monkeypatch.setattr(dense, "_cache", dense.OrderedDict())
    dense.embed(["epsilon"])
    assert fake_model.texts.count("epsilon") == 2


def test_cache_off_and_unusable_cache(fake_model: _FakeModel, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv(embcache.ENV_CACHE, "off")
    dense.embed(["a"])
    assert embcache.shared_cache(dense.DIM) is None and not (tmp_path / "emb.sqlite3").exists()
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv(embcache.ENV_CACHE, str(blocker / "emb.sqlite3"))  # parent is a file
    monkeypatch.setattr(dense, "_cache", dense.OrderedDict())
    with pytest.warns(RuntimeWarning, match="embedding cache"):
        v = dense.embed(["a", "b"])
    assert v.shape == (2, dense.DIM) and fake_model.texts == ["a", "a", "b"]


def test_real_model_vectors_survive_the_disk_round_trip(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(embcache, "_shared", {})
    monkeypatch.setenv(embcache.ENV_CACHE, str(tmp_path / "emb.sqlite3"))
    monkeypatch.setattr(dense, "_cache", dense.OrderedDict())
    texts = ["I moved to Stockholm last spring.", "ok"]
    computed = dense.embed(texts)
    monkeypatch.setattr(dense, "_cache", dense.OrderedDict())
    before = dense.computed_texts
    assert np.array_equal(dense.embed(texts), computed) and dense.computed_texts == before
    assert "tokenizer=" in dense.model_id() and "max_tokens=256" in dense.model_id()
