"""The shipped-vectors tier (retrieval/shipped.py) and the committed file of TWIST-CS 2.0."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest

from twistbench.cli import run_cli
from twistbench.datasets.keyfile import read_key, write_key
from twistbench.datasets.paths import cs2_key_path, shipped_vectors_files, shipped_vectors_path
from twistbench.datasets.twist_cs import load_cs_dataset
from twistbench.retrieval import dense, embcache, shipped, turn_text
from twistbench.systems.flat_rag import FlatRAG

SAMPLE_SEED = 18  # issue 18
SAMPLE_SIZE = 40


class _FakeModel:
    """A model whose vector of a text is a pure function of the text; records what it ran."""

    dim = 8

    def __init__(self, model_id: str = "fake-model") -> None:
        self.texts: list[str] = []
        self.id = model_id

    def model_id(self) -> str:
        return self.id

    def run(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return np.stack([_vec(t) for t in texts])


def _vec(text: str, salt: str = "") -> np.ndarray:
    rng = np.random.default_rng(list((salt + text).encode()))
    v = rng.standard_normal(_FakeModel.dim).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch, fresh_embedding_state: Path) -> _FakeModel:
    model = _FakeModel()
    monkeypatch.setattr(dense, "_active", model)
    return model


def _ship(path: Path, model_id: str, texts: list[str], key_sha256: str = "k" * 64,
          salt: str = "shipped") -> np.ndarray:
    vectors = np.stack([_vec(t, salt) for t in texts])
    shipped.write(path, model_id=model_id, key_files=["key.json"], key_sha256s=[key_sha256],
                  texts=texts, vectors=vectors)
    return vectors


def test_write_is_deterministic_and_reads_back_exactly(tmp_path: Path) -> None:
    texts = ["beta", "alpha", "a longer text, with punctuation: ok?", "é ü ß"]
    vectors = _ship(tmp_path / "a.npz", "m", texts)
    _ship(tmp_path / "b.npz", "m", texts[::-1])  # rows sorted by text key: same bytes
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    file = shipped.ShippedVectors(tmp_path / "a.npz", "k" * 64)
    got = file.get_many("m", texts + ["not shipped"])
    assert list(got) == texts  # the one unknown text is a miss
    assert all(np.array_equal(got[t], vectors[i]) for i, t in enumerate(texts))
    assert got["alpha"].dtype == np.float32


def test_lookup_order_in_process_then_shipped_then_disk_then_model(fake_model: _FakeModel,
                                                                   tmp_path: Path,
                                                                   monkeypatch) -> None:
    # the disk cache holds a vector for "alpha" too (another value), so the order is visible
    disk = embcache.shared_cache(_FakeModel.dim)
    assert disk is not None
    disk.put_many("fake-model", ["alpha", "gamma"], np.stack([_vec("alpha", "disk"),
                                                              _vec("gamma", "disk")]))
    vectors = _ship(tmp_path / "s.npz", "fake-model", ["alpha", "beta"])
    shipped.offer(tmp_path / "s.npz", "k" * 64)
    hits, misses = shipped.hits, shipped.misses
    out = dense.embed(["alpha", "beta", "gamma", "delta", "alpha"])
    assert np.array_equal(out[0], vectors[0]) and np.array_equal(out[1], vectors[1])
    assert np.array_equal(out[2], _vec("gamma", "disk"))  # not shipped: from disk
    assert np.array_equal(out[3], _vec("delta")) and fake_model.texts == ["delta"]
    assert np.array_equal(out[4], out[0])
    assert (shipped.hits - hits, shipped.misses - misses) == (2, 2)
    # the shipped tier is read-only: nothing of it is copied into the disk cache
    assert set(disk.get_many("fake-model", ["alpha", "beta"])) == {"alpha"}
    # next call: the in-process cache answers before any tier
    monkeypatch.setattr(shipped, "get_many", lambda *a: pytest.fail("tier asked again"))
    assert np.array_equal(dense.embed(["beta"])[0], vectors[1])


def test_another_model_id_never_reads_the_vectors(fake_model: _FakeModel,
                                                  tmp_path: Path) -> None:
    _ship(tmp_path / "s.npz", "fake-model", ["alpha"])
    shipped.offer(tmp_path / "s.npz", "k" * 64)
    fake_model.id = "fake-model v2"  # a changed model (or an onnx:/openai: embedder)
    out = dense.embed(["alpha"])
    assert np.array_equal(out[0], _vec("alpha")) and fake_model.texts == ["alpha"]
    assert not shipped._files[(str((tmp_path / "s.npz").resolve()), "k" * 64)].vectors_read


def test_a_re_recorded_key_skips_the_file_with_a_warning(fake_model: _FakeModel,
                                                         tmp_path: Path) -> None:
    _ship(tmp_path / "s.npz", "fake-model", ["alpha"], key_sha256="a" * 64)
    shipped.offer(tmp_path / "s.npz", "b" * 64)  # the key loaded is not the one written from
    with pytest.warns(RuntimeWarning, match="written for the key.s. with sha256 a{64}"):
        out = dense.embed(["alpha"])
    assert np.array_equal(out[0], _vec("alpha")) and fake_model.texts == ["alpha"]


def test_off_switch_and_broken_file(fake_model: _FakeModel, tmp_path: Path,
                                    monkeypatch) -> None:
    monkeypatch.setenv(embcache.ENV_CACHE, "off")  # each miss goes to the model
    _ship(tmp_path / "s.npz", "fake-model", ["alpha"])
    shipped.offer(tmp_path / "s.npz", "k" * 64)
    monkeypatch.setenv(shipped.ENV_SWITCH, "0")
    dense.embed(["alpha"])
    assert fake_model.texts == ["alpha"]
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    shipped.withdraw()
    monkeypatch.setenv(shipped.ENV_SWITCH, "1")
    monkeypatch.setattr(dense, "_cache", dense.OrderedDict())
    shipped.offer(tmp_path / "bad.npz", "k" * 64)
    with pytest.warns(RuntimeWarning, match="bad.npz not used"):
        dense.embed(["alpha"])
    assert fake_model.texts == ["alpha", "alpha"]


# --- the committed file of TWIST-CS 2.0 ---------------------------------------------------------


@pytest.fixture(scope="module")
def committed() -> Path:
    path = shipped_vectors_path(cs2_key_path(), dense.BUILTIN.model_id())
    assert shipped_vectors_files(cs2_key_path()) == [path], "rewrite: scripts/ship_key_vectors.py"
    return path


def test_committed_file_names_the_committed_keys_and_the_builtin_model(committed: Path) -> None:
    keys = [cs2_key_path(), cs2_key_path(include_crisis=True)]
    with np.load(committed) as npz:
        # each read_key checks the key against its .sha256: a rebuilt key fails here
        assert list(npz["key_sha256s"]) == [read_key(k)[1] for k in keys]
        assert list(npz["key_files"]) == [k.name for k in keys]
        assert str(npz["model_id"]) == dense.BUILTIN.model_id()
        assert npz["vectors"].dtype == np.float32 and npz["vectors"].shape[1] == dense.DIM


def test_loading_either_builtin_key_offers_the_file(committed: Path) -> None:
    from twistbench import cli

    for crisis in (False, True):
        shipped.withdraw()
        ds, _ = cli._dataset(None, None, None, crisis)  # what `twist run` loads
        assert shipped._offered() == [[str(committed.resolve()), ds.key_sha256]]
    shipped.withdraw()


def test_a_rebuilt_key_is_told_to_rewrite_the_vectors(committed: Path, tmp_path: Path,
                                                      monkeypatch, capsys) -> None:
    from twistbench import cli

    cli._note_stale_shipped_vectors(cs2_key_path())  # the committed key: nothing to say
    assert "rewrite" not in capsys.readouterr().err
    rebuilt = tmp_path / "twist-cs-2.0.json"  # another seed, say: another sha256
    write_key(rebuilt, "twist-cs", "twist-cs-2.0", {"rebuilt": True})
    monkeypatch.setattr(cli, "cs2_key_path", lambda include_crisis=False: rebuilt)
    monkeypatch.setattr(cli, "shipped_vectors_files", lambda key: [committed])
    cli._note_stale_shipped_vectors(rebuilt)
    assert "scripts/ship_key_vectors.py" in " ".join(capsys.readouterr().err.split())


def test_a_sample_of_shipped_vectors_is_what_the_model_computes(committed: Path) -> None:
    # 40 of the key's turns and Track B drafts (flat-rag embeds both as they are), drawn with a
    # fixed seed, embedded now by the built-in model.
    # Criterion: cosine > 0.99999 per text. Not bit equality: onnxruntime's int8 kernels differ
    # in the last bits between CPUs, and the file is written on one; a stale or misplaced
    # vector (another text's) is far below it: the closest two distinct texts of the file have
    # a cosine of 0.9965. On the machine that wrote the file the largest difference is 0.0.
    ds = load_cs_dataset(cs2_key_path())
    texts = sorted({turn_text(ev) for conv in ds.conversations for ev in conv.events}
                   | {d.text for d in ds.drafts})
    sample = random.Random(SAMPLE_SEED).sample(texts, SAMPLE_SIZE)
    file = shipped.ShippedVectors(committed, ds.key_sha256)
    got = file.get_many(dense.BUILTIN.model_id(), sample)
    assert len(got) == SAMPLE_SIZE
    live = dense.BUILTIN.run(sample)
    ours = np.stack([got[t] for t in sample])
    cosines = (live * ours).sum(axis=1) / np.linalg.norm(live, axis=1) / np.linalg.norm(
        ours, axis=1)
    assert cosines.min() > 0.99999, (cosines.min(), np.abs(live - ours).max())


@pytest.mark.slow
@pytest.mark.parametrize("crisis", [False, True], ids=["plain", "crisis"])
def test_default_run_embeds_nothing_beyond_the_shipped_file(committed: Path, tmp_path: Path,
                                                            monkeypatch, capsys,
                                                            crisis: bool) -> None:
    # The default run (twist run: every default system, every track) with no disk cache and an
    # empty in-process cache: every text it embeds is in the file, so the model runs on none.
    # With --include-crisis too: the crisis key's run adds its texts to the same file.
    monkeypatch.setenv(embcache.ENV_CACHE, "off")
    monkeypatch.setattr(dense, "_cache", dense.OrderedDict())
    monkeypatch.setattr(dense, "_active", dense.BUILTIN)
    monkeypatch.setenv(dense.ENV_EMBEDDER, "builtin")
    monkeypatch.delenv(shipped.ENV_SWITCH, raising=False)
    computed, hits, misses = dense.computed_texts, shipped.hits, shipped.misses
    crisis_flag = ["--include-crisis"] if crisis else []
    assert run_cli(["run", "--out", str(tmp_path / "runs"), "--no-progress", *crisis_flag]) == 0
    assert dense.computed_texts - computed == 0
    assert shipped.misses - misses == 0
    assert shipped.hits - hits > 8000  # distinct texts of the run (8,625 when written)
    note = " ".join(capsys.readouterr().err.split())  # the run says where its vectors came from
    assert re.search(r"note: vectors of [\d,]+ texts: [\d,]+ shipped with the key, 0 from the "
                     r"embedding cache, 0 computed by the model", note), note


# --- a system in a child process (--isolate process) ----------------------------------------

CHILD_LOG = "TWIST_TEST_VECTOR_SOURCES"  # where the child writes its counts


class FlatRAGTellingVectorSources(FlatRAG):
    """flat-rag that, after each ingest and recall, writes its process id and where that
    process's vectors came from (dense.vector_sources()) to the file CHILD_LOG names: a spawned
    child's counters never reach the parent otherwise."""

    def _tell(self) -> None:
        Path(os.environ[CHILD_LOG]).write_text(json.dumps({"pid": os.getpid(),
                                                           **dense.vector_sources()}))

    def ingest(self, events):  # noqa: ANN001, ANN201 - FlatRAG's
        result = super().ingest(events)
        self._tell()
        return result

    def recall(self, query: str):  # noqa: ANN201 - FlatRAG's
        answer = super().recall(query)
        self._tell()
        return answer


def test_a_system_in_a_child_process_uses_the_shipped_vectors(committed: Path, tmp_path: Path,
                                                              monkeypatch) -> None:
    # The child is spawned: it sees the key's file only through the offer the parent made in
    # TWIST_SHIPPED_VECTOR_FILES, and (no disk cache) would run the model for any text missing.
    monkeypatch.setenv(embcache.ENV_CACHE, "off")
    monkeypatch.delenv(shipped.ENV_SWITCH, raising=False)
    log = tmp_path / "child.json"
    monkeypatch.setenv(CHILD_LOG, str(log))
    code = run_cli(["run", "-s", f"{__file__}:FlatRAGTellingVectorSources", "-t", "C",
                    "--conversation", "cs-acme", "--isolate", "process", "--no-progress",
                    "--out", str(tmp_path / "runs"), "--embedder", "builtin"])
    assert code == 0
    child = json.loads(log.read_text())
    assert child["pid"] != os.getpid()
    assert child["computed"] == 0 and child["disk cache"] == 0
    assert child["shipped"] > 100  # the conversation's turns and the queries asked so far
    shipped.withdraw()
