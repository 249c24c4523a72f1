"""Scoring trace files in chunks (score_files): the same values as reading everything and
rescoring it, whatever the chunk size, the reader (pyarrow's columns or orjson) or the format
(JSONL, TREC, Parquet); a defect named by line or row and field either way."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from synth import make_inputs

from twistbench.audit.metrics import TraceScores, rescore, score_files
from twistbench.audit.targets import TARGETS, read_coded_gold, read_coded_lineage
from twistbench.audit.traces import (
    Trace,
    iter_trace_chunks,
    read_gold,
    read_lineage,
    read_traces,
    write_gold_jsonl,
    write_lineage_jsonl,
    write_traces_jsonl,
    write_trec_run,
)
from twistbench.errors import InputError

K = 20


def _files(tmp_path: Path, seed: int = 5) -> tuple[Path, Path, Path]:
    """Traces with what a real log has besides plain rankings: repeated ids (one repeat falls
    past k), ids the store lacks, failed queries, a gold query with no line, lines for queries
    outside gold, traces shorter than k and empty ones."""
    run, lin, gold = make_inputs(seed=seed, n_queries=90, k=K)
    qids = list(run.traces)
    for i, q in enumerate(qids):
        t = run.traces[q]
        if i % 9 == 0:  # a repeat inside the top k: everything after it moves up one rank
            t.ids.insert(3, t.ids[1])
            t.scores.insert(3, t.scores[2])
        if i % 13 == 0:  # two ids the store does not know, repeated
            t.ids[5:5] = ["ghost", "ghost"]
            t.scores[5:5] = [t.scores[5], t.scores[5]]
        if i % 17 == 0:
            t.ids, t.scores = t.ids[:7], t.scores[:7]
    run.traces[qids[4]] = Trace(qids[4], [], [], K)
    del run.traces[qids[10]]  # missing: no line at all
    del run.traces[qids[11]]
    run.errors[qids[11]] = "timeout: retrieve took 30 s"
    run.traces["not-in-gold"] = Trace("not-in-gold", ["x", "x", "y"], [3.0, 2.0, 1.0], K)
    run.errors["also-not-in-gold"] = "boom"
    tp, lp, gp = tmp_path / "traces.jsonl", tmp_path / "lineage.jsonl", tmp_path / "gold.jsonl"
    write_traces_jsonl(tp, run)
    write_lineage_jsonl(lp, lin.rows)
    write_gold_jsonl(gp, gold.queries.values())
    return tp, lp, gp


def _same(a: TraceScores, b: TraceScores) -> None:
    assert a.qids == b.qids and a.categories == b.categories and a.k == b.k
    assert a.errors == b.errors and a.missing == b.missing and a.extra_traces == b.extra_traces
    assert a.duplicates_dropped == b.duplicates_dropped and a.unknown_ids == b.unknown_ids
    for t in TARGETS:
        assert np.array_equal(a.n_rel[t], b.n_rel[t])
        assert np.array_equal(a.first_hit[t], b.first_hit[t])
        for m in a.scores[t]:  # bit for bit, NaN (targetless) in the same places
            assert np.array_equal(a.scores[t][m], b.scores[t][m], equal_nan=True), (t, m)


@pytest.mark.parametrize("columnar", [True, False])
@pytest.mark.parametrize("chunk", [1, 7, 10_000])
def test_chunks_score_exactly_as_the_whole_file(tmp_path: Path, chunk: int,
                                                columnar: bool) -> None:
    tp, lp, gp = _files(tmp_path)
    whole = rescore(read_traces(tp), read_lineage(lp), read_gold(gp))
    assert whole.duplicates_dropped > 10 and whole.unknown_ids > 0 and whole.missing
    assert whole.errors and whole.extra_traces == 2 and whole.k == K
    got = score_files(tp, lp, gp, chunk_queries=chunk, columnar=columnar)
    _same(got, whole)
    _same(score_files(tp, lp, gp, k=5, chunk_queries=chunk, columnar=columnar),
          rescore(read_traces(tp), read_lineage(lp), read_gold(gp), k=5))


def test_trec_run_scores_as_its_jsonl(tmp_path: Path) -> None:
    tp, lp, gp = _files(tmp_path)
    run = read_traces(tp)
    trec = tmp_path / "run.txt"
    write_trec_run(trec, run, score_mode="rank")  # strictly decreasing: the same order
    got = score_files(trec, lp, gp, k=K, chunk_queries=7)
    _same(got, rescore(read_traces(trec), read_lineage(lp), read_gold(gp), k=K))
    jsonl = rescore(run, read_lineage(lp), read_gold(gp), k=K)
    rows = [jsonl.qids.index(q) for q in got.qids]  # TREC has no line for failed or empty
    for t in TARGETS:
        for m in got.scores[t]:
            assert np.array_equal(got.scores[t][m], jsonl.scores[t][m][rows], equal_nan=True)


def test_parquet_reads_and_scores_as_jsonl(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from twistbench.audit.traces import write_traces_parquet

    tp, lp, gp = _files(tmp_path)
    run = read_traces(tp)
    pq_path = tmp_path / "traces.parquet"
    # written from the lines as they are (repeats kept), a row group per 8 queries
    assert write_traces_parquet(pq_path, iter_trace_chunks(tp, dedupe=False),
                                row_group_queries=8) == len(run.traces) + len(run.errors)
    back = read_traces(pq_path)
    assert back.name == tmp_path.name and back.k == run.k and back.errors == run.errors
    assert back.duplicates_dropped == run.duplicates_dropped > 0
    assert {q: (t.ids, t.scores, t.k) for q, t in back.traces.items()} == \
        {q: (t.ids, t.scores, t.k) for q, t in run.traces.items()}
    want = rescore(run, read_lineage(lp), read_gold(gp))
    for chunk in (7, 10_000):
        for columnar in (True, False):
            _same(score_files(pq_path, lp, gp, chunk_queries=chunk, columnar=columnar), want)


def _parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    result_t = pa.list_(pa.struct([("id", pa.string()), ("score", pa.float64())]))
    schema = pa.schema([("query_id", pa.string()), ("k", pa.int64()), ("results", result_t),
                        ("error", pa.string())])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, row_group_size=2)
    return path


@pytest.mark.parametrize("bad,field", [
    ({"query_id": "", "results": []}, "query_id"),
    ({"query_id": "q0", "results": []}, "query_id"),  # the first row's id again
    ({"query_id": "q", "results": [{"id": "a", "score": 1.0}, {"id": "", "score": 0.5}]},
     "results[1]"),
    ({"query_id": "q", "results": [{"id": "a", "score": float("nan")}]}, "results[0]"),
    ({"query_id": "q", "k": -1, "results": []}, "k"),
    ({"query_id": "q"}, "results"),
])
def test_parquet_bad_row_named(tmp_path: Path, bad: dict, field: str) -> None:
    pytest.importorskip("pyarrow")
    rows = [{"query_id": f"q{i}", "k": 2, "results": [{"id": "a", "score": 1.0}]}
            for i in range(4)] + [bad]
    p = _parquet(tmp_path / "t.parquet", rows)
    (tmp_path / "l.jsonl").write_text(json.dumps(
        {"memory_id": "a", "sources": ["D1"], "raw": True, "canonical": True}) + "\n")
    (tmp_path / "g.jsonl").write_text(json.dumps({"query_id": "q0", "anchors": ["D1"]}) + "\n")
    for read in (lambda: read_traces(p),
                 lambda: score_files(p, tmp_path / "l.jsonl", tmp_path / "g.jsonl",
                                     chunk_queries=3)):
        with pytest.raises(InputError) as ei:
            read()
        assert ei.value.file == str(p) and ei.value.where == "row 5" and ei.value.field == field


def test_parquet_with_other_columns_is_refused(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"query_id": ["q"], "ranking": [["a"]]}), p)
    with pytest.raises(InputError) as ei:
        read_traces(p)
    assert ei.value.where == "schema" and ei.value.field == "ranking"


@pytest.mark.parametrize("columnar", [True, False])
def test_a_bad_line_deep_in_the_file_is_named(tmp_path: Path, columnar: bool) -> None:
    tp, lp, gp = _files(tmp_path)
    lines = tp.read_text().splitlines()
    obj = json.loads(lines[40])
    obj.setdefault("results", [{"id": "a", "score": 1.0}])
    obj.pop("error", None)
    obj["results"][0]["score"] = "high"
    lines[40] = json.dumps(obj)
    tp.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as ei:
        score_files(tp, lp, gp, chunk_queries=7, columnar=columnar)
    assert ei.value.where == "line 41" and ei.value.field == "results[0]"
    obj["results"][0]["score"] = 0.5
    obj["query_id"] = json.loads(lines[1])["query_id"]
    lines[40] = json.dumps(obj)
    tp.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="appears twice") as ei:
        score_files(tp, lp, gp, chunk_queries=7, columnar=columnar)
    assert ei.value.where == "line 41" and ei.value.field == "query_id"
    lines[40] = "{not json"
    tp.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="not valid JSON") as ei:
        score_files(tp, lp, gp, chunk_queries=7, columnar=columnar)
    assert ei.value.where == "line 41"


def test_unusual_lines_read_as_read_traces_reads_them(tmp_path: Path) -> None:
    """Lines pyarrow refuses or reads otherwise (a lone surrogate, no k, a blank line of
    Unicode whitespace, an integer error message) are read by the careful reading."""
    (tmp_path / "l.jsonl").write_text(json.dumps(
        {"memory_id": "a", "sources": ["D1"], "raw": True, "canonical": False}) + "\n")
    (tmp_path / "g.jsonl").write_text("\n".join(json.dumps(
        {"query_id": q, "anchors": ["D1"]}) for q in ("q1", "q2", "q3")) + "\n")
    tp = tmp_path / "t.jsonl"
    tp.write_bytes(b'{"query_id": "q1", "results": [{"id": "a\\ud800", "score": 1}, '
                   b'{"id": "a", "score": 0.5}]}\n'
                   b"\xc2\xa0\n"
                   b'{"query_id": "q2", "results": [{"id": "b", "score": 2}, '
                   b'{"id": "a", "score": 1}]}\n'
                   b'{"query_id": "q3", "error": 504}\n')
    want = rescore(read_traces(tp), read_lineage(tmp_path / "l.jsonl"),
                   read_gold(tmp_path / "g.jsonl"))
    assert want.errors == {"q3": "504"} and want.qids == ["q1", "q2"] and want.unknown_ids == 2
    for columnar in (True, False):
        _same(score_files(tp, tmp_path / "l.jsonl", tmp_path / "g.jsonl", columnar=columnar),
              want)


def test_lineage_coded_alike_by_both_readers(tmp_path: Path) -> None:
    tp, lp, gp = _files(tmp_path)
    a, b = read_coded_lineage(lp, columnar=True), read_coded_lineage(lp, columnar=False)
    assert a.convs == b.convs and a.anchor_vocab == b.anchor_vocab
    assert a.memory_ids() == b.memory_ids()
    for f in ("conv_start", "mem_raw", "mem_can", "edge_anchor", "edge_mem"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    for f in ("start", "length", "hashes", "entry"):  # the same bytes at the same places
        assert np.array_equal(getattr(a.ids, f), getattr(b.ids, f)), f
    # no conversation and no text field at all (their defaults), and a repeated id named
    lp2 = tmp_path / "l2.jsonl"
    lp2.write_text("\n".join(json.dumps(r) for r in [
        {"memory_id": "m1", "sources": ["D1"], "raw": True, "canonical": False},
        {"memory_id": "m2", "sources": ["D1", "D2", "D1"], "raw": False, "canonical": True},
    ]) + "\n")
    for columnar in (True, False):
        cl = read_coded_lineage(lp2, columnar=columnar)
        assert cl.convs == {"": 0} and cl.memory_ids() == ["m1", "m2"]
        assert cl.codes(np.array([0, 0, 0, 1]), ["m2", "m1", "m3", "m1"]).tolist() == \
            [1, 0, -1, -1]
        assert cl.edge_mem.tolist() == [0, 1, 1]  # D1 twice for m2: one edge
    lp2.write_text("\n".join(json.dumps(r) for r in [
        {"conversation": "c", "memory_id": "m1", "sources": ["D1"], "raw": True,
         "canonical": False},
        {"conversation": "d", "memory_id": "m1", "sources": ["D1"], "raw": True,
         "canonical": False},
        {"conversation": "c", "memory_id": "m1", "sources": ["D2"], "raw": True,
         "canonical": False},
    ]) + "\n")
    for columnar in (True, False):
        with pytest.raises(InputError, match="repeated") as ei:
            read_coded_lineage(lp2, columnar=columnar)
        assert ei.value.where == "line 3"


def test_gold_coded_alike_by_both_readers(tmp_path: Path) -> None:
    tp, lp, gp = _files(tmp_path)
    cl = read_coded_lineage(lp)
    gp2 = tmp_path / "gold2.jsonl"  # LoCoMo's integer categories, anchor texts, a repeat
    gp2.write_text("\n".join(json.dumps(r) for r in [
        {"query_id": "a", "conversation": "c0", "anchors": ["D1", "D1", "D2"], "category": 4,
         "anchor_texts": {"D1": "hello"}},
        {"query_id": "b", "conversation": "nowhere", "anchors": ["D1"], "category": "2"},
    ]) + "\n")
    for path in (gp, gp2):
        a = read_coded_gold(path, cl, columnar=True)
        b = read_coded_gold(path, cl, columnar=False)
        assert a.qids == b.qids and a.index == b.index and a.categories == b.categories
        for f in ("conv", "anchor_off", "anchor_key"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert a.categories == ["4", "2"] and a.anchor_off.tolist() == [0, 2, 3]  # D1 once
    gp2.write_text(json.dumps({"query_id": "a", "anchors": ["D1"]}) + "\n"
                   + json.dumps({"query_id": "a", "anchors": ["D2"]}) + "\n")
    for columnar in (True, False):
        with pytest.raises(InputError, match="appears twice") as ei:
            read_coded_gold(gp2, cl, columnar=columnar)
        assert ei.value.where == "line 2"


def test_audit_streams_files_to_the_outputs_of_runs_in_memory(tmp_path: Path) -> None:
    """`audit` on files scores each as it streams and reads rankings again only for the
    contested cases and the TREC export: every output file is byte for byte what audit_runs
    writes from the same runs read whole. Run B's lines are out of gold order (the export
    reorders them) and declare a smaller k (it is scored again at the larger one)."""
    from twistbench.audit.core import audit, audit_runs

    tp, lp, gp = _files(tmp_path)
    a = read_traces(tp)
    b_traces = {q: Trace(q, t.ids[::-1][:15], sorted(t.scores)[:15], 15)
                for q, t in reversed(list(a.traces.items()))}
    bp = tmp_path / "b.jsonl"
    write_traces_jsonl(bp, type(a)("b", str(bp), 15, b_traces, dict(a.errors)))
    streamed = audit([tp, bp], lp, gp, tmp_path / "streamed", names=["a", "b"],
                     n_resamples=50)
    lin, gold = read_lineage(lp), read_gold(gp)
    runs = [(read_traces(tp, name="a"), lin), (read_traces(bp, name="b"), lin)]
    held = audit_runs(runs, gold, tmp_path / "held", n_resamples=50)
    assert streamed.config.k == held.config.k == K and streamed.contested["total"] > 0
    files = sorted(p.relative_to(tmp_path / "held") for p in (tmp_path / "held").rglob("*")
                   if p.is_file())
    assert len(files) == 13
    for f in files:
        assert (tmp_path / "streamed" / f).read_bytes() == (tmp_path / "held" / f).read_bytes(), f
