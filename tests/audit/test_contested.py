"""Contested-credit extraction, the rater CSV, and the semantic audit."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from twistbench.audit.contested import (
    extract_cases,
    rank_bucket,
    read_cases,
    read_labels,
    semantic_audit,
    write_cases,
    write_template,
)
from twistbench.audit.core import audit_runs
from twistbench.audit.metrics import rescore
from twistbench.audit.traces import Gold, GoldQuery, Lineage, LineageRow, Trace, TraceRun
from twistbench.errors import InputError


def _fixture():
    rows = [
        LineageRow(conversation="c", memory_id="t1", sources=["D1"], raw=True, canonical=False,
                   text="I moved to Lisbon in May."),
        LineageRow(conversation="c", memory_id="f1", sources=["D1"], raw=False, canonical=True,
                   text="User lives in Lisbon."),
        LineageRow(conversation="c", memory_id="t2", sources=["D2"], raw=True, canonical=False,
                   text="My sister is a nurse."),
        LineageRow(conversation="c", memory_id="f2", sources=["D2"], raw=False, canonical=True,
                   text="User has a sister."),
        LineageRow(conversation="c", memory_id="t3", sources=["D3"], raw=True, canonical=False,
                   text="I like tea."),
    ]
    gold = Gold("g", {
        "q1": GoldQuery(query_id="q1", conversation="c", anchors=["D1"], category="4",
                        question="Where does the user live?", answer="Lisbon"),
        "q2": GoldQuery(query_id="q2", conversation="c", anchors=["D2"], category="1",
                        question="What is the sister's job?", answer="nurse",
                        anchor_texts={"D2": "My sister is a nurse (gold text)."}),
        "q3": GoldQuery(query_id="q3", conversation="c", anchors=["D3"], category="4",
                        question="Drink?", answer="tea"),
    })
    run = TraceRun("r", "r", 60, {
        "q1": Trace("q1", ["t3", "f1"], [2, 1], 60),  # raw miss, canonical hit at rank 2
        "q2": Trace("q2", ["t2", "f2"], [2, 1], 60),  # raw hit: not contested
        "q3": Trace("q3", ["f1"], [1], 60),  # no canonical target: not in the shared subset
    })
    return run, Lineage("l", rows), gold


def test_extract_cases() -> None:
    run, lin, gold = _fixture()
    cases = extract_cases(rescore(run, lin, gold), run, lin, gold)
    assert [c.query_id for c in cases] == ["q1"]
    c = cases[0]
    assert c.case_id == "r|q1" and c.credited_memory_id == "f1" and c.credited_rank == 2
    assert c.credited_text == "User lives in Lisbon." and c.rank_bucket == "1-5"
    assert c.evidence == {"D1": "I moved to Lisbon in May."}  # from the raw memory's text
    assert c.answer == "Lisbon" and c.source_first_hit == 2


def test_rank_buckets() -> None:
    assert [rank_bucket(r) for r in (1, 5, 6, 20, 21, 60, 61)] == \
        ["1-5", "1-5", "6-20", "6-20", "21-60", "21-60", ">60"]


def test_cases_file_template_and_labels(tmp_path: Path) -> None:
    run, lin, gold = _fixture()
    cases = extract_cases(rescore(run, lin, gold), run, lin, gold)
    write_cases(tmp_path / "cases.jsonl", cases)
    assert read_cases(tmp_path / "cases.jsonl") == cases
    tpl = tmp_path / "template.csv"
    write_template(tpl, cases, rater="ann")
    with open(tpl, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["case_id"] == "r|q1" and rows[0]["rater"] == "ann" and rows[0]["label"] == ""
    assert "Lisbon" in rows[0]["evidence"] and rows[0]["credited_text"] == "User lives in Lisbon."
    # an untouched template has no labels
    assert read_labels(tpl) == []


def _csv(path: Path, rows: list[list[str]], header=("case_id", "rater", "label")) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


@pytest.mark.parametrize("row,field,line", [
    (["a", "r1", "maybe"], "label", "line 3"),
    (["a", "", "supports"], "rater", "line 3"),
    (["zzz", "r1", "supports"], "case_id", "line 3"),
    (["b", "r1", "partial"], "case_id", "line 3"),  # r1 labels b twice
])
def test_bad_labels(tmp_path: Path, row: list[str], field: str, line: str) -> None:
    p = _csv(tmp_path / "l.csv", [["b", "r1", "supports"], row])
    with pytest.raises(InputError) as ei:
        read_labels(p, known_cases={"a", "b"})
    assert ei.value.file == str(p) and ei.value.field == field and ei.value.where == line


def test_missing_column(tmp_path: Path) -> None:
    p = _csv(tmp_path / "l.csv", [["a", "x"]], header=("case_id", "who"))
    with pytest.raises(InputError, match="missing column"):
        read_labels(p)


def test_labels_case_insensitive(tmp_path: Path) -> None:
    p = _csv(tmp_path / "l.csv", [["a", "r1", " Supports "], ["a", "r2", "DOES_NOT_SUPPORT"]])
    labs = read_labels(p)
    assert [x.label for x in labs] == ["supports", "does_not_support"]


def test_semantic_audit_hand_example() -> None:
    from twistbench.audit.contested import ContestedCase, Label

    def case(i: int, run: str = "r") -> ContestedCase:
        return ContestedCase(f"{run}|q{i}", run, f"q{i}", "c", "1", "?", "!", ["D1"], {}, "m",
                             "", [], 3, "1-5", 3)

    cases = [case(i) for i in range(1, 6)]
    table = {  # same table as the Fleiss hand example in test_stats (cases 1-4), plus case 5
        1: ["supports"] * 3, 2: ["supports", "supports", "partial"],
        3: ["does_not_support"] * 3, 4: ["partial", "does_not_support", "does_not_support"],
    }
    labels = [Label(f"r|q{i}", f"rater{j}", lab) for i, labs in table.items()
              for j, lab in enumerate(labs)]
    labels += [Label("r|q5", "rater0", "supports"), Label("r|q5", "rater1", "partial")]
    sem = semantic_audit(cases, labels)
    assert sem.n_labelled == 5 and sem.n_complete == 4
    assert sem.majority_counts == {"supports": 2, "partial": 0, "does_not_support": 2,
                                   "no_majority": 1}
    assert sem.majority_shares["supports"] == pytest.approx(0.5)
    assert sem.fleiss_kappa_three == pytest.approx((2 / 3 - 0.375) / 0.625)
    # binary: rows [3,0] [3,0] [0,3] [1,2]: P_i = 1,1,1,1/3 -> 5/6; p = (7/12, 5/12)
    # P_e = (49 + 25) / 144; kappa = (5/6 - 74/144) / (1 - 74/144)
    pe = 74 / 144
    assert sem.fleiss_kappa_binary == pytest.approx((5 / 6 - pe) / (1 - pe))
    # pairwise three-class: (r0,r1): q1 same, q2 same, q3 same, q4 diff, q5 diff -> 3/5
    # (r0,r2): q1 s, q2 d, q3 s, q4 d -> 1/2 ; (r1,r2): q1 s, q2 d, q3 s, q4 s -> 3/4
    assert sem.pairwise_agreement_three == pytest.approx((3 / 5 + 1 / 2 + 3 / 4) / 3)


def test_audit_with_labels(tmp_path: Path) -> None:
    run, lin, gold = _fixture()
    first = audit_runs([(run, lin)], gold, tmp_path / "a", n_resamples=50)
    assert first.contested["total"] == 1
    p = _csv(tmp_path / "labels.csv", [["r|q1", "ann", "partial"], ["r|q1", "bob", "partial"]])
    res = audit_runs([(run, lin)], gold, tmp_path / "b", n_resamples=50, labels=[p])
    assert res.semantic["majority_counts"]["partial"] == 1
    md = (tmp_path / "b" / "audit.md").read_text()
    assert "Semantic audit" in md and "ann, bob" in md
    data = json.loads((tmp_path / "b" / "audit.json").read_text())
    assert data["semantic"]["n_complete"] == 1


def test_semantic_audit_files(tmp_path: Path) -> None:
    from twistbench.audit.contested import semantic_audit_files

    run, lin, gold = _fixture()
    audit_runs([(run, lin)], gold, tmp_path / "a", n_resamples=20)
    p1 = _csv(tmp_path / "ann.csv", [["r|q1", "ann", "supports"]])
    p2 = _csv(tmp_path / "bob.csv", [["r|q1", "bob", "does_not_support"]])
    res = semantic_audit_files(tmp_path / "a" / "contested_cases.jsonl", [p1, p2],
                               tmp_path / "sem.json")
    assert res.majority_counts["no_majority"] == 1 and res.pairwise_agreement_three == 0.0
    data = json.loads((tmp_path / "sem.json").read_text())
    assert data["raters"] == ["ann", "bob"]
    # one case, two raters who disagree: P_bar = 0, P_e = 0.5, kappa = -1
    assert data["n_complete"] == 1 and data["fleiss_kappa_three"] == pytest.approx(-1.0)
