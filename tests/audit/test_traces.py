"""Reading and writing traces (JSONL, TREC), lineage and gold; one clear InputError per defect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twistbench.audit.traces import (
    read_gold,
    read_lineage,
    read_traces,
    trec_id,
    write_traces_jsonl,
    write_trec_run,
)
from twistbench.errors import InputError


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


def test_trec_run_sorted_by_score_then_rank(tmp_path: Path) -> None:
    p = _w(tmp_path / "bm25.run", [
        "q1 Q0 b 2 1.5 tag", "q1 Q0 a 1 2.0 tag", "q1 Q0 c 3 1.5 tag", "q2 Q0 z 1 0.1 tag",
    ])
    run = read_traces(p)
    assert run.name == "bm25"
    assert run.traces["q1"].ids == ["a", "b", "c"]
    assert run.traces["q2"].ids == ["z"]
    bad = _w(tmp_path / "bad.run", ["q1 Q0 a one 2.0 tag"])
    with pytest.raises(InputError) as ei:
        read_traces(bad)
    assert ei.value.where == "line 1" and ei.value.field == "rank/score"


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
