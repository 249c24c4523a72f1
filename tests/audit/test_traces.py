"""Reading and writing traces (JSONL, TREC), lineage and gold; one clear InputError per defect."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from twistbench.audit.metrics import rescore
from twistbench.audit.traces import (
    Gold,
    Lineage,
    read_gold,
    read_lineage,
    read_traces,
    trec_id,
    write_traces_jsonl,
    write_trec_run,
)
from twistbench.errors import InputError
from twistbench.model import GoldQuery, LineageRow


def _w(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
                    encoding="utf-8")
    return path


def test_jsonl_traces_errors_duplicates_and_k(tmp_path: Path) -> None:
    p = _w(tmp_path / "traces.jsonl", [
        {"query_id": "q1", "k": 3, "results": [{"id": "a", "score": 3}, {"id": "b", "score": 2},
                                                {"id": "a", "score": 1.5},
                                                {"id": "c", "score": 1}]},
        "",
        {"query_id": "q2", "error": "timeout: retrieve took 30 s"},
        {"query_id": "q3", "results": []},
    ])
    run = read_traces(p)
    assert run.name == tmp_path.name  # traces.jsonl is named after its folder
    assert run.traces["q1"].ids == ["a", "b"]  # cut at k=3, the repeated "a" dropped
    assert run.duplicates_dropped == 1
    assert run.errors == {"q2": "timeout: retrieve took 30 s"}
    assert run.traces["q3"].ids == []
    assert run.k == 3
    out = tmp_path / "again" / "x.jsonl"
    write_traces_jsonl(out, run)
    again = read_traces(out)
    assert again.traces["q1"].ids == ["a", "b"] and again.errors == run.errors


@pytest.mark.parametrize("line,field", [
    ({"k": 3, "results": []}, "query_id"),
    ({"query_id": "q", "results": {"id": "a"}}, "results"),
    ({"query_id": "q", "results": [{"id": "a", "score": "high"}]}, "results[0]"),
    ({"query_id": "q", "results": [{"id": "a", "score": float("nan")}]}, "results[0]"),
    ({"query_id": "q", "k": -1, "results": []}, "k"),
])
def test_jsonl_bad_lines_name_file_line_field(tmp_path: Path, line: dict, field: str) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"query_id": "ok", "results": []}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(InputError) as ei:
        read_traces(p)
    assert ei.value.file == str(p) and ei.value.where == "line 2" and ei.value.field == field


def test_jsonl_repeated_query_and_bad_json(tmp_path: Path) -> None:
    p = _w(tmp_path / "t.jsonl", [{"query_id": "q", "results": []},
                                  {"query_id": "q", "results": []}])
    with pytest.raises(InputError, match="appears twice"):
        read_traces(p)
    p2 = _w(tmp_path / "u.jsonl", ['{"query_id": "q", "results": [}'])
    with pytest.raises(InputError) as ei:
        read_traces(p2, fmt="jsonl")
    assert ei.value.where == "line 1"


def test_trec_ties_ordered_by_docid_descending_rank_column_ignored(tmp_path: Path) -> None:
    # trec_eval's rule (hand-computed): score descending, ties by docno descending (strcmp);
    # the rank column and the line order play no part.
    p = _w(tmp_path / "bm25.run", [
        "q1 Q0 b 1 1.5 tag", "q1 Q0 a 9 2.0 tag", "q1 Q0 c 2 1.5 tag", "q1 Q0 B 3 1.5 tag",
        "q2 Q0 z x 0.1 tag",  # a non-numeric rank is ignored like any other rank
    ])
    run = read_traces(p)
    assert run.name == "bm25"
    assert run.traces["q1"].ids == ["a", "c", "b", "B"]  # 'B' (0x42) < 'b' (0x62)
    assert run.traces["q1"].scores == [2.0, 1.5, 1.5, 1.5]
    assert run.traces["q2"].ids == ["z"]
    bad = _w(tmp_path / "bad.run", ["q1 Q0 a 1 high tag"])
    with pytest.raises(InputError) as ei:
        read_traces(bad)
    assert ei.value.where == "line 1" and ei.value.field == "score"


def test_jsonl_ties_keep_the_list_order(tmp_path: Path) -> None:
    p = _w(tmp_path / "t.jsonl", [{"query_id": "q", "results": [
        {"id": "a", "score": 1.0}, {"id": "c", "score": 1.0}, {"id": "b", "score": 2.0}]}])
    assert read_traces(p).traces["q"].ids == ["a", "c", "b"]  # the list is the ranking


def test_tied_trec_run_scores_as_pytrec_eval(tmp_path: Path) -> None:
    """A heavily tied TREC run, lines shuffled and rank columns scrambled: every per-query
    Recall@k, MRR and nDCG@k equals pytrec_eval's (trec_eval's own sort) on the same file."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = random.Random(13)
    k = 5
    lines: list[str] = []
    rows: list[LineageRow] = []
    gold: dict[str, GoldQuery] = {}
    run_dict: dict[str, dict[str, float]] = {}
    docs = [f"d{i}" for i in range(30)] + [f"D{i}" for i in range(10)] + ["é1", "z"]
    for qn in range(60):
        qid, conv = f"q{qn}", f"c{qn}"
        picked = rng.sample(docs, 12)
        scores = {d: float(rng.choice([1, 2, 3])) for d in picked}  # many ties across the cutoff
        run_dict[qid] = scores
        for d in picked:
            lines.append(f"{qid} Q0 {d} {rng.randint(1, 12)} {scores[d]} tag")
            rows.append(LineageRow(conversation=conv, memory_id=d, sources=[d], raw=True,
                                   canonical=True))
        gold[qid] = GoldQuery(query_id=qid, conversation=conv, anchors=rng.sample(picked, 3))
    rng.shuffle(lines)
    p = _w(tmp_path / "tied.run", lines)
    run = read_traces(p)
    rs = rescore(run, Lineage("lineage.jsonl", rows), Gold("gold.jsonl", gold), k=k)
    qrels = {q: {a: 1 for a in g.anchors} for q, g in gold.items()}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut_{k}", f"recall_{k}", "recip_rank"}
                                        ).evaluate(run_dict)
    other_rule_differs = 0  # queries whose top k an ascending-docid tie rule would change
    for i, q in enumerate(rs.qids):
        assert rs.scores["raw"]["ndcg"][i] == pytest.approx(ev[q][f"ndcg_cut_{k}"], abs=1e-12)
        assert rs.scores["raw"]["recall"][i] == pytest.approx(ev[q][f"recall_{k}"], abs=1e-12)
        rr = ev[q]["recip_rank"]  # trec_eval's is over the whole list; ours is cut at k
        assert rs.scores["raw"]["mrr"][i] == pytest.approx(rr if rr >= 1 / k else 0.0, abs=1e-12)
        ascending = sorted(run_dict[q], key=lambda d: (-run_dict[q][d], d))
        other_rule_differs += ascending[:k] != run.traces[q].ids[:k]
    assert len(rs.qids) == 60 and other_rule_differs > 30  # the tie rule decides the lists


def test_trec_round_trip_with_odd_ids(tmp_path: Path) -> None:
    p = _w(tmp_path / "t.jsonl", [{"query_id": "q 1", "results": [
        {"id": "D1:3 fact", "score": 1.0}, {"id": "x%y", "score": 1.0}]}])
    run = read_traces(p)
    out = tmp_path / "run.txt"
    write_trec_run(out, run, score_mode="rank")
    text = out.read_text()
    assert "q%201 Q0 D1:3%20fact 1 2.0" in text and "x%25y 2 1.0" in text
    back = read_traces(out)
    assert back.traces[trec_id("q 1")].ids == [trec_id("D1:3 fact"), trec_id("x%y")]
    with pytest.raises(ValueError):
        write_trec_run(out, run, score_mode="other")


def test_lineage_and_gold(tmp_path: Path) -> None:
    lp = _w(tmp_path / "lineage.jsonl", [
        {"conversation": "c", "memory_id": "m1", "sources": ["D1"], "raw": True,
         "canonical": False, "text": "hello"},
        {"conversation": "d", "memory_id": "m1", "sources": ["D1"], "raw": True,
         "canonical": False},
    ])
    lin = read_lineage(lp)
    assert len(lin.rows) == 2 and lin.by_key()[("c", "m1")].text == "hello"
    dup = _w(tmp_path / "dup.jsonl", [
        {"conversation": "c", "memory_id": "m1", "sources": ["D1"], "raw": True,
         "canonical": False},
        {"conversation": "c", "memory_id": "m1", "sources": ["D2"], "raw": True,
         "canonical": False},
    ])
    with pytest.raises(InputError, match="repeated") as ei:
        read_lineage(dup)
    assert ei.value.where == "line 2"
    nosrc = _w(tmp_path / "nosrc.jsonl", [
        {"memory_id": "m1", "sources": [], "raw": True, "canonical": False}])
    with pytest.raises(InputError) as ei:
        read_lineage(nosrc)
    assert ei.value.field == "sources"
    typo = _w(tmp_path / "typo.jsonl", [
        {"memory_id": "m1", "sources": ["D1"], "raw": True, "canonical": False, "sorce": 1}])
    with pytest.raises(InputError) as ei:
        read_lineage(typo)
    assert ei.value.field == "sorce"
    gp = _w(tmp_path / "gold.jsonl", [
        {"query_id": "q1", "conversation": "c", "anchors": ["D1"], "category": 4, "answer": 7},
    ])
    g = read_gold(gp)
    assert g.queries["q1"].category == "4" and g.queries["q1"].answer == "7"
    badg = _w(tmp_path / "badgold.jsonl", [{"query_id": "q1", "anchors": "D1"}])
    with pytest.raises(InputError) as ei:
        read_gold(badg)
    assert ei.value.field == "anchors" and ei.value.where == "line 1"


def test_lines_orjson_refuses_read_as_the_stdlib_reads_them(tmp_path: Path) -> None:
    # orjson parses first; what it refuses goes to the stdlib, which accepts NaN (then refused
    # as a score by our check) and lone surrogates, and names a non-UTF-8 line and its byte
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"query_id": "q\\ud800", "results": [{"id": "a", "score": 1}]}\n'
                  b"\xc2\xa0\n"  # a no-break space alone: a blank line
                  b'{"query_id": "q2", "results": []}\n')
    run = read_traces(p, fmt="jsonl")
    assert list(run.traces) == ["q\ud800", "q2"]
    p.write_bytes(b'{"query_id": "q", "results": [{"id": "a", "score": NaN}]}\n')
    with pytest.raises(InputError) as ei:
        read_traces(p, fmt="jsonl")
    assert ei.value.field == "results[0]"
    p.write_bytes(b'{"query_id": "q", "results": []}\n{"query_id": "\xff"}\n')
    with pytest.raises(InputError, match="not UTF-8") as ei:
        read_traces(p, fmt="jsonl")
    assert ei.value.where == "line 2"
    p.write_bytes(b'{"query_id": "q", "results": [}\n')
    with pytest.raises(InputError, match="not valid JSON: Expecting value"):
        read_traces(p, fmt="jsonl")


def test_lineage_and_gold_lines_pydantic_refuses_as_json_read_as_before(tmp_path: Path) -> None:
    lp = tmp_path / "lineage.jsonl"
    lp.write_bytes(b'{"memory_id": "m\\ud800", "sources": ["D1"], "raw": true, '
                   b'"canonical": false}\n'
                   b'{"memory_id": "m2", "sources": ["D2"], "raw": 1, "canonical": "false"}\n')
    rows = read_lineage(lp).rows
    assert rows[0].memory_id == "m\ud800" and (rows[1].raw, rows[1].canonical) == (True, False)
    gp = tmp_path / "gold.jsonl"
    gp.write_bytes(b'{"query_id": "q1", "anchors": ["D1"], "category": 4, "answer": 1990}\n'
                   b'[1, 2]\n')
    with pytest.raises(InputError, match="not a JSON object") as ei:
        read_gold(gp)
    assert ei.value.where == "line 2"
    gp.write_bytes(b'{"query_id": "q1", "anchors": ["D1"], "category": 4, "answer": 1990}\n')
    g = read_gold(gp).queries["q1"]
    assert (g.category, g.answer) == ("4", "1990")  # LoCoMo's integers, as strings
    gp.write_bytes(b'{"query_id": "q1", "anchors": "D1"}\n')
    with pytest.raises(InputError) as ei:
        read_gold(gp)
    assert ei.value.where == "line 1" and "anchors" in str(ei.value)


def test_bulk_build_pauses_the_collector_and_restores_it() -> None:
    import gc

    from twistbench.audit.traces import bulk_build

    assert gc.isenabled()
    with bulk_build():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()  # a caller that had it off keeps it off
    try:
        with bulk_build():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(ValueError), bulk_build():
        raise ValueError("an error inside still restores the collector")
    assert gc.isenabled()
