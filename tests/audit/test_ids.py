"""The coded lineage's memory ids (targets.IdTable): bytes + sorted 64-bit hashes, every hit
checked on the bytes. Cross-checked against a dict per conversation (what the coding used
before), also with a hash weakened so that most keys collide."""

from __future__ import annotations

import random

import numpy as np
import pytest

from twistbench.audit import targets
from twistbench.audit.targets import LineageCoder, code_lineage, utf8_columns
from twistbench.audit.traces import Lineage, LineageRow


def _ids(rng: random.Random, n: int) -> list[str]:
    """Ids of every shape the bytes must tell apart: ASCII of 0-40 characters (1-6 hash words),
    non-ASCII, a lone surrogate, a trailing NUL, one id a prefix of another."""
    out = {"a", "a\x00", "a\x00\x00", "ab", "é", "e\u0301", "\ud800", "x" * 8, "x" * 9,
           "日本語のメモリ", "m" * 200}
    alphabet = "abcD:#0123456789é日\x00"
    while len(out) < n:
        out.add("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))))
    return sorted(out)


def _coded(rows: list[tuple[str, str]], batch: int) -> targets.CodedLineage:
    coder = LineageCoder()
    for lo in range(0, len(rows), batch):
        part = rows[lo:lo + batch]
        coder.add([c for c, _ in part], [m for _, m in part], [["D1"]] * len(part),
                  [True] * len(part), [False] * len(part))
    return coder.done()


def _check_against_dicts(rows: list[tuple[str, str]], probes: list[tuple[str, str]],
                         cl: targets.CodedLineage) -> None:
    # the reference: a dict per conversation, codes contiguous per conversation in row order
    per_conv: dict[str, dict[str, int]] = {}
    for c, m in rows:
        d = per_conv.setdefault(c, {})
        d[m] = len(d)
    start, want_ids = {}, []
    for c, d in per_conv.items():
        start[c] = len(want_ids)
        want_ids.extend(d)
    assert cl.memory_ids() == want_ids
    conv = np.array([cl.conv_code(c) for c, _ in probes])
    got = cl.codes(conv, [m for _, m in probes]).tolist()
    want = [start[c] + per_conv[c][m] if m in per_conv.get(c, {}) else -1 for c, m in probes]
    assert got == want
    for e in range(0, len(want_ids), 97):
        assert cl.ids.string(e) == want_ids[e]


@pytest.mark.parametrize("weak", [False, True])
def test_lookup_equals_a_dict_per_conversation(monkeypatch: pytest.MonkeyPatch,
                                               weak: bool) -> None:
    if weak:  # 8 hash values for everything: nearly every probe meets collisions
        strong = targets.key_hashes
        monkeypatch.setattr(targets, "key_hashes",
                            lambda *a: strong(*a) % np.uint64(8))
    rng = random.Random(7)
    ids = _ids(rng, 600)
    convs = ["c0", "c1", "c2", ""]
    rows = [(c, m) for m in ids for c in convs if rng.random() < 0.5]
    rng.shuffle(rows)  # conversations interleaved across batches
    cl = _coded(rows, batch=37)
    probes = [(c, m) for m in ids + ["absent", "a\x00\x00\x00", ""] for c in convs + ["zz"]]
    _check_against_dicts(rows, probes, cl)


def test_repeated_id_found_even_among_collisions(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [("c", "m1"), ("d", "m1"), ("c", "m2"), ("c", "m1\x00")]
    assert code_lineage(Lineage("s", [
        LineageRow(conversation=c, memory_id=m, sources=["D1"], raw=True, canonical=False)
        for c, m in rows])).memory_ids() == ["m1", "m2", "m1\x00", "m1"]
    strong = targets.key_hashes
    monkeypatch.setattr(targets, "key_hashes", lambda *a: strong(*a) % np.uint64(2))
    _coded(rows, batch=2)  # equal hashes but distinct keys: no repeat
    with pytest.raises(ValueError, match="repeated in conversation 'd'"):
        _coded([*rows, ("d", "m1")], batch=3)


def test_utf8_columns_counts_bytes() -> None:
    data, start, length = utf8_columns(["ab", "é", "", "\ud800x"])
    assert length.tolist() == [2, 2, 0, 4] and start.tolist() == [0, 2, 4, 4]
    assert data.tobytes() == "abé\ud800x".encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("ragged", [False, True])
def test_in_memory_traces_coded_as_a_dict_per_conversation(ragged: bool) -> None:
    """_code_matrix (TraceRun's lists of id strings) against a dict per conversation: an id
    stored in several conversations, one a query's conversation lacks, an unknown
    conversation, repeats within a row, rows of every length (padded) or all full."""
    rng = random.Random(11)
    ids = _ids(rng, 300)
    convs = ["c0", "c1", "c2", ""]
    rows = [(c, m) for m in ids for c in convs if rng.random() < 0.6]
    cl = _coded(rows, batch=50)
    codes: dict[tuple[str, str], int] = {}
    for code, (c, m) in enumerate(sorted(rows, key=lambda r: cl.conv_code(r[0]))):
        codes[c, m] = code  # rows of one conversation keep their order: codes contiguous
    assert all(cl.codes(np.array([cl.conv_code(c)]), [m])[0] == v for (c, m), v in
               list(codes.items())[::29])
    q_conv = [rng.choice([*convs, "zz"]) for _ in range(200)]
    width = 12
    lists = [[rng.choice([*ids, "absent"]) for _ in range(rng.randint(0, width) if ragged
                                                         else width)] for _ in q_conv]
    mat, lengths = targets._code_matrix(lists, np.array([cl.conv_code(c) for c in q_conv]),
                                        cl)
    assert lengths.tolist() == [len(x) for x in lists]
    want = np.full((len(lists), max(map(len, lists))), -1, dtype=np.int64)
    for i, (c, x) in enumerate(zip(q_conv, lists)):
        want[i, :len(x)] = [codes.get((c, m), -1) for m in x]
    assert mat.tolist() == want.tolist()
