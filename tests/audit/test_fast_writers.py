"""The audit's fast writers write byte for byte what the plain ones write.

TREC run export: from pyarrow's columns (write_trec_encoded) and while the scoring reads the
file (TrecTee), the same as the per-trace writer (write_trec_traces): odd ids and query ids
(whitespace of every kind, '%', quotes, non-ASCII), repeated ids, traces past k, a declared k,
empty traces, failed queries, queries outside the export, a file out of export order, chunks of
any size; `twist audit`'s TREC files the same with pyarrow and without it. TREC qrels from the
coded lineage's bytes (write_trec_qrels_coded), the same as the per-line writer on odd ids.
per_query.jsonl: one template filled per query, the same as json.dumps of each row."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from test_stream import _files

from twistbench.audit import core
from twistbench.audit.traces import (
    Trace,
    TraceRun,
    TrecTee,
    iter_encoded_chunks,
    read_traces,
    trec_id,
    write_traces_jsonl,
    write_trec_encoded,
    write_trec_traces,
)
from twistbench.errors import InputError

pytest.importorskip("pyarrow")

ODD_IDS = ["plain", "two words", "tab\there", "50%", "%20", "nbsp\u00a0id", "ideo\u3000space",
           "caf\u00e9", "emoji\U0001f600", 'say "hi"', "it's", "a,b", "line\u2028sep", "x" * 80,
           "0", "-1.5e3", "\u00a0", "trailing ", " leading", "new\nline", "c\u0085nel",
           "unit\x1fsep"]


def _odd_run(seed: int = 3) -> TraceRun:
    rng = random.Random(seed)
    traces: dict[str, Trace] = {}
    errors: dict[str, str] = {}
    for q in range(40):
        qid = rng.choice(["q", "q two", "q%", "q\u00a0", "q\u00e9"]) + str(q)
        if q % 11 == 5:
            errors[qid] = "timeout"
            continue
        n = rng.randint(0, 14)
        ids = [rng.choice(ODD_IDS) + str(rng.randint(0, 6)) for _ in range(n)]  # repeats too
        scores = sorted((rng.uniform(-3, 3) for _ in ids), reverse=True)
        k = rng.choice([5, 9, 30])  # the trace's own k: below and above its length
        traces[qid] = Trace(qid, ids, scores, k)
    return TraceRun("odd run", "odd.jsonl", 30, traces, errors)


@pytest.mark.parametrize("chunk", [1, 4, 1000])
@pytest.mark.parametrize("k", [3, 8, 30])
def test_encoded_writer_writes_what_the_per_trace_writer_writes(tmp_path: Path, chunk: int,
                                                                k: int) -> None:
    run = _odd_run()
    path = tmp_path / "odd.jsonl"
    write_traces_jsonl(path, run)
    read = read_traces(path)
    assert read.duplicates_dropped > 0  # the fixture repeats ids
    qids = [q for q in read.traces if not q.endswith(("3", "7"))]  # some are not exported
    random.Random(k).shuffle(qids)  # the file is out of the export's order
    tag = trec_id(run.name)
    want, got = tmp_path / "per_trace.txt", tmp_path / "encoded.txt"
    cut = [Trace(q, read.traces[q].ids[:k], read.traces[q].scores[:k], k) for q in qids]
    n_want = write_trec_traces(want, cut, tag)
    n_got = write_trec_encoded(got, iter_encoded_chunks(path, chunk_queries=chunk), qids, k,
                               tag, str(path))
    assert n_got == n_want > 0
    assert got.read_bytes() == want.read_bytes()


def test_encoded_writer_without_repeats_needs_no_dedupe(tmp_path: Path) -> None:
    run = _odd_run(seed=8)
    for t in run.traces.values():
        seen: set[str] = set()
        keep = [i for i, d in enumerate(t.ids) if not (d in seen or seen.add(d))]
        t.ids, t.scores = [t.ids[i] for i in keep], [t.scores[i] for i in keep]
    path = tmp_path / "odd.jsonl"
    write_traces_jsonl(path, run)
    read = read_traces(path)
    assert read.duplicates_dropped == 0
    qids = list(read.traces)
    want, got = tmp_path / "per_trace.txt", tmp_path / "encoded.txt"
    write_trec_traces(want, [Trace(q, t.ids[:8], t.scores[:8], 8)
                             for q, t in read.traces.items()], "tag")
    write_trec_encoded(got, iter_encoded_chunks(path, chunk_queries=7), qids, 8, "tag",
                       str(path), dedupe=False)
    assert got.read_bytes() == want.read_bytes()


def test_encoded_writer_names_a_query_the_file_lacks(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    write_traces_jsonl(path, _odd_run())
    qids = [*read_traces(path).traces, "never traced"]
    with pytest.raises(InputError, match="never traced") as ei:
        write_trec_encoded(tmp_path / "run.txt", iter_encoded_chunks(path), qids, 10, "tag",
                           str(path))
    assert ei.value.file == str(path)


def test_audit_trec_files_alike_three_ways(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """run.txt written as the scoring reads the file (TrecTee: run a, in gold order), from
    pyarrow's columns on a second reading (run b, out of gold order: the tee stops) and per
    trace without pyarrow: the same files."""
    tp, lp, gp = _files(tmp_path)
    a = read_traces(tp)
    bp = tmp_path / "b.jsonl"
    write_traces_jsonl(bp, TraceRun("b", str(bp), a.k, dict(reversed(a.traces.items())),
                                    dict(a.errors)))
    calls = []
    encoded = core.write_trec_encoded
    monkeypatch.setattr(core, "write_trec_encoded",
                        lambda *a, **kw: calls.append(a[3]) or encoded(*a, **kw))
    with_arrow = core.audit([tp, bp], lp, gp, tmp_path / "arrow", names=["a", "b"],
                            n_resamples=20)
    assert len(calls) == 1 and calls[0] == 20  # only b's file was read again (at k = 20)
    assert not list(tmp_path.glob(".twist-audit-*"))  # the tee's folder is gone
    _without_pyarrow(monkeypatch)
    monkeypatch.setattr(core, "write_trec_encoded", None)  # must not be reached
    written = []  # the careful reading's chunks go to the tee
    monkeypatch.setattr(TrecTee, "finish", lambda self, q, f=TrecTee.finish: written.append(
        f(self, q)) or written[-1])
    without = core.audit([tp, bp], lp, gp, tmp_path / "plain", names=["a", "b"],
                         n_resamples=20)
    assert written == [True, False]  # run a's file is the tee's; b is out of gold order
    assert with_arrow.files == without.files
    trec = sorted(p.relative_to(tmp_path / "arrow") for p in (tmp_path / "arrow").rglob("*.txt"))
    assert len(trec) == 8
    for f in trec:
        assert (tmp_path / "arrow" / f).read_bytes() == (tmp_path / "plain" / f).read_bytes(), f


def _without_pyarrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit as without pyarrow: every module's arrow_available says so."""
    from twistbench.audit import metrics, targets, traces

    for module in (core, metrics, targets, traces):
        monkeypatch.setattr(module, "arrow_available", lambda: False)


@pytest.mark.parametrize("arrow", [True, False])
def test_tee_cut_at_a_given_k(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              arrow: bool) -> None:
    """With k given, the tee cuts each trace at it (as the export does), from pyarrow's
    chunks and from the careful reading's."""
    tp, lp, gp = _files(tmp_path)
    if not arrow:
        _without_pyarrow(monkeypatch)
    monkeypatch.setattr(core, "write_trec_encoded", None)  # the tee's file is the export
    core.audit([tp], lp, gp, tmp_path / "tee", k=6, names=["a b"], n_resamples=20)
    read = read_traces(tp)
    want = tmp_path / "want.txt"
    qids = [q for q in json_qids(gp) if q in read.traces]
    write_trec_traces(want, [Trace(q, read.traces[q].ids[:6], read.traces[q].scores[:6], 6)
                             for q in qids], trec_id("a b"))
    assert (tmp_path / "tee" / "trec" / "a_b" / "run.txt").read_bytes() == want.read_bytes()


def json_qids(gold_path: Path) -> list[str]:
    import json

    return [json.loads(line)["query_id"] for line in gold_path.read_text().splitlines()]


def test_lines_longer_than_a_json_block_read_alike(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """pyarrow reads JSONL in blocks of JSON_BLOCK bytes; a line longer than a block is left
    to the careful reading, with the same outputs (scores, TREC files)."""
    from twistbench.audit import traces

    tp, lp, gp = _files(tmp_path)
    assert max(len(line) for line in tp.read_bytes().splitlines()) > 600
    big = core.audit([tp], lp, gp, tmp_path / "big", n_resamples=20)
    monkeypatch.setattr(traces, "JSON_BLOCK", 600)
    small = core.audit([tp], lp, gp, tmp_path / "small", n_resamples=20)
    assert big.as_dict()["runs"][0]["full"] == small.as_dict()["runs"][0]["full"]
    for f in sorted((tmp_path / "big").rglob("*")):
        if f.is_file() and f.name != "audit.json":
            rel = f.relative_to(tmp_path / "big")
            assert f.read_bytes() == (tmp_path / "small" / rel).read_bytes(), rel


def test_per_query_lines_are_json_dumps_of_each_row() -> None:
    """per_query.jsonl's lines (one template filled per query) are json.dumps(row,
    sort_keys=True) of each query's row, NaN (targetless) as null, whatever the names hold."""
    import json
    import math

    from synth import make_inputs

    from twistbench.audit.metrics import METRICS, rescore
    from twistbench.audit.targets import TARGETS

    run, lin, gold = make_inputs(seed=4, n_queries=50)
    rs = rescore(run, lin, gold, k=10)
    rs.name = 'run "@0@" 100% \u00e9'
    odd = ["@1@", "q %s", 'q "x"', "caf\u00e9", "tab\t", "\U0001f600", "%%", "@@"]
    rs.qids = [odd[i % len(odd)] + str(i) for i in range(len(rs.qids))]
    rs.categories = [None if i % 5 == 0 else odd[-i % len(odd)] for i in range(len(rs.qids))]
    assert any(math.isnan(v) for t in TARGETS for v in rs.scores[t]["recall"].tolist())
    want = []
    for i, q in enumerate(rs.qids):
        row = {"run": rs.name, "query_id": q, "category": rs.categories[i]}
        for t in TARGETS:
            row[t] = {"eligible": int(rs.n_rel[t][i]), "first_hit": int(rs.first_hit[t][i]),
                      **{m: None if math.isnan(v) else v
                         for m in METRICS for v in [float(rs.scores[t][m][i])]}}
        want.append(json.dumps(row, sort_keys=True) + "\n")
    got = list(core._per_query_lines(rs))
    assert got[:len(want)] == want


def test_nothing_left_behind_on_bad_input(tmp_path: Path) -> None:
    """Bad input found after the scoring (a labels file): exit with the error, no output folder
    and no temporary folder of the tee left."""
    tp, lp, gp = _files(tmp_path)
    bad = tmp_path / "labels.csv"
    bad.write_text("not,a,labels,file\n", encoding="utf-8")
    with pytest.raises(InputError):
        core.audit([tp], lp, gp, tmp_path / "out", labels=[bad], n_resamples=20)
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob(".twist-audit-*"))


@pytest.mark.parametrize("block", [3, 1 << 14])
def test_coded_qrels_are_the_per_line_writers_bytes(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    block: int) -> None:
    """qrels from the coded lineage's bytes (write_trec_qrels_coded, what `twist audit`
    writes) against the per-line writer of eligible_ids' strings, for every target: odd
    memory and query ids (whitespace of every kind, '%', quotes, non-ASCII, an empty id), the
    same id in two conversations, a memory eligible for many queries, lines across blocks."""
    import numpy as np

    from twistbench.audit import traces
    from twistbench.audit.targets import (
        TARGETS,
        build_targets,
        code_gold,
        code_lineage,
        code_rows,
        eligible_ids,
        eligible_pairs,
    )
    from twistbench.audit.traces import Gold, Lineage, write_trec_qrels, write_trec_qrels_coded
    from twistbench.model import GoldQuery, LineageRow

    monkeypatch.setattr(traces, "_QRELS_BLOCK", block)
    rng = random.Random(9)
    turns = [f"D{i}" for i in range(12)]
    rows, seen = [], set()
    for conv in ("c one", "c\u00e9"):
        for i, mid in enumerate([*ODD_IDS, "", "fact%d", "plain"]):
            if (conv, mid) not in seen:
                seen.add((conv, mid))
                rows.append(LineageRow(conversation=conv, memory_id=mid,
                                       sources=rng.sample(turns, rng.randint(1, 3)),
                                       raw=i % 3 != 0, canonical=i % 2 == 0))
    queries = {}
    for q in range(30):
        qid = rng.choice(["q", "q two", "q%", "q\u00a0", "q\u00e9", 'q"']) + str(q)
        queries[qid] = GoldQuery(query_id=qid, conversation=rng.choice(["c one", "c\u00e9"]),
                                 anchors=rng.sample([*turns, "D99"], rng.randint(1, 3)))
    cl = code_lineage(Lineage("s", rows))
    gold = Gold("g", queries)
    cg = code_gold(gold, cl)
    qids = list(queries)
    cq = code_rows(qids, [()] * len(qids), cg.rows(qids), cg, cl, 10)
    ts = build_targets(cq, cl)
    for t in TARGETS:
        want, got = tmp_path / f"want.{t}.txt", tmp_path / f"got.{t}.txt"
        n_want = write_trec_qrels(want, eligible_ids(cq, ts, cl, t))
        n_got = write_trec_qrels_coded(got, cq.qids, *eligible_pairs(ts, cl, t),
                                       (cl.ids.data, cl.ids.start, cl.ids.length))
        assert n_got == n_want > 3  # with block = 3, lines across several blocks
        assert got.read_bytes() == want.read_bytes(), t
    assert "%25" in want.read_text() and "\u00e9" in want.read_text()
    # no line: an empty file, as the per-line writer's
    none = np.zeros(0, dtype=np.int64)
    assert write_trec_qrels_coded(tmp_path / "none.txt", qids, none, none,
                                  (cl.ids.data, cl.ids.start, cl.ids.length)) == 0
    assert (tmp_path / "none.txt").read_bytes() == b""
