"""The audit end to end: a hand-built flip, shared subsets, instability, recommendations,
coverage gap, outputs on disk, and a TREC export that pytrec_eval re-scores identically."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from synth import make_inputs

from twistbench.audit.core import audit, audit_runs
from twistbench.audit.traces import (
    Gold,
    GoldQuery,
    Lineage,
    LineageRow,
    Trace,
    TraceRun,
    write_gold_jsonl,
    write_lineage_jsonl,
    write_traces_jsonl,
)
from twistbench.errors import InputError


def _store() -> Lineage:
    rows = []
    for i in range(1, 5):
        rows.append(LineageRow(conversation="c", memory_id=f"t{i}", sources=[f"D{i}"], raw=True,
                               canonical=False, text=f"turn {i}"))
        if i != 4:  # D4 has no transformed memory: q4 has no Canonical target
            rows.append(LineageRow(conversation="c", memory_id=f"f{i}", sources=[f"D{i}"],
                                   raw=False, canonical=True, text=f"fact {i}"))
    return Lineage("lineage.jsonl", rows)


def _gold() -> Gold:
    return Gold("gold.jsonl", {
        f"q{i}": GoldQuery(query_id=f"q{i}", conversation="c", anchors=[f"D{i}"],
                           category="A" if i < 3 else "B", question=f"what about {i}?",
                           answer=f"ans {i}")
        for i in range(1, 5)})


def _run(name: str, order: dict[str, list[str]]) -> TraceRun:
    return TraceRun(name, f"{name}.jsonl", 4, {
        q: Trace(q, ids, [float(len(ids) - j) for j in range(len(ids))], 4)
        for q, ids in order.items()})


# Run "turns" ranks the raw turn first, run "facts" ranks the fact first.
TURNS = _run("turns", {"q1": ["t1", "f1", "t2", "f2"], "q2": ["t2", "x", "f2", "t1"],
                       "q3": ["t3", "f3"], "q4": ["t4"]})
FACTS = _run("facts", {"q1": ["f1", "t2", "t1", "f2"], "q2": ["f2", "t1", "t3", "t2"],
                       "q3": ["f3", "t1"], "q4": ["t1", "t4"]})


def test_flip_shift_instability_and_recommendation() -> None:
    lin = _store()
    res = audit_runs([(TURNS, lin), (FACTS, lin)], _gold(), None, n_resamples=200)
    r0 = res.runs[0]
    assert r0["coverage"]["can"] == {"eligible": 3, "targetless": 1, "mean_eligible_ids": 1.0}
    assert r0["shared_n"] == 3
    # turns run: raw MRR = 1 on q1..q4; canonical MRR: q1 1/2, q2 1/3, q3 1/2
    assert r0["full"]["raw"]["mrr"] == pytest.approx(1.0)
    assert r0["full"]["can"]["mrr"] == pytest.approx((1 / 2 + 1 / 3 + 1 / 2) / 3)
    cmp_ = res.comparisons[0]
    assert (cmp_["a"], cmp_["b"], cmp_["shared"]["n"]) == ("turns", "facts", 3)
    # facts run raw MRR: q1 t1 at rank 3, q2 t2 at rank 4, q3 no t3 -> 1/3, 1/4, 0
    # Δ raw MRR = mean(1 - 1/3, 1 - 1/4, 1 - 0) > 0 ; Δ can MRR = mean(1/2-1, 1/3-1, 1/2-1) < 0
    sh = cmp_["shared"]["delta"]
    assert sh["raw"]["mrr"]["estimate"] == pytest.approx((2 / 3 + 3 / 4 + 1) / 3)
    assert sh["can"]["mrr"]["estimate"] == pytest.approx(-(1 / 2 + 2 / 3 + 1 / 2) / 3)
    assert cmp_["flips"]["mrr"]["flip"] is True
    assert cmp_["flips"]["mrr"]["winner"] == {"raw": "turns", "src": "tie", "can": "facts"}
    # per target: Raw on all 4 queries (q4 too: facts ranks t4 second), Canonical on 3
    pt = cmp_["per_target"]
    assert (pt["raw"]["n"], pt["src"]["n"], pt["can"]["n"]) == (4, 4, 3)
    assert pt["raw"]["delta"]["mrr"]["estimate"] == pytest.approx((2 / 3 + 3 / 4 + 1 + 1 / 2) / 4)
    assert pt["raw"]["why_empty"] is None and cmp_["shared"]["why_empty"] is None
    rec = res.recommendations[0]
    # Source on all 4 queries: tied on q1..q3 (MRR 1 each), q4 decides (turns 1, facts 1/2)
    assert rec["best"]["mrr"] == {"raw": "turns", "src": "turns", "can": "facts"}
    assert rec["means"]["mrr"]["src"] == {"turns": 1.0, "facts": pytest.approx(7 / 8)}
    assert rec["n"] == {"raw": 4, "src": 4, "can": 3} and rec["shared_n"] == 3
    assert rec["changes"]["mrr"] is True
    # instability, turns run, Raw vs Canonical MRR on 3 shared queries: all change, all >= 0.1
    inst = [e for e in res.instability if e["run"] == "turns" and (e["a"], e["b"]) ==
            ("can", "raw")][0]
    assert inst["n"] == 3 and inst["overall"]["mrr"] == {"n": 3, "changed": 1.0,
                                                         "changed_ge": 1.0}
    assert inst["by_category"]["A"]["mrr"]["n"] == 2 and inst["by_category"]["B"]["mrr"]["n"] == 1
    # Source vs Raw in the turns run: MRR never changes (the raw turn is always first)
    s = [e for e in res.instability if e["run"] == "turns" and e["a"] == "src" and
         e["b"] == "raw"][0]
    assert s["overall"]["mrr"]["changed"] == 0.0 and s["n"] == 4
    shift = [x for x in res.shifts if x["run"] == "facts" and x["a"] == "can"
             and x["b"] == "raw"][0]
    assert shift["n"] == 3 and shift["delta"]["mrr"]["estimate"] > 0
    # coverage gap: turns run, Raw MRR of covered (q1..q3: 1) minus uncovered (q4: 1) = 0
    gap = res.coverage_gap["per_run"][0]
    assert (gap["covered"], gap["uncovered"]) == (3, 1)
    # one uncovered query: no interval can be claimed from a group of one
    assert math.isnan(gap["gap"]["mrr"]["estimate"]) and gap["gap"]["mrr"]["n"] == 4
    # contested credits: facts run q3 only (q1, q2 have raw hits at ranks 3, 4; q3 has none)
    assert res.contested["per_run"] == {"turns": 0, "facts": 1}


def test_audit_files_and_trec_recheck(tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run, lin, gold = make_inputs(seed=11, k=15, n_queries=50)
    run.errors["q_err"] = "exception: boom"
    gold.queries["q_err"] = GoldQuery(query_id="q_err", conversation="c0", anchors=["D1"])
    gold.queries["q_missing"] = GoldQuery(query_id="q_missing", conversation="c0",
                                          anchors=["D1"])
    tp, lp, gp = tmp_path / "a.jsonl", tmp_path / "lineage.jsonl", tmp_path / "gold.jsonl"
    write_traces_jsonl(tp, run)
    write_lineage_jsonl(lp, lin.rows)
    write_gold_jsonl(gp, gold.queries.values())
    out = tmp_path / "audit"
    res = audit([tp], lp, gp, out, n_resamples=100, metric_variant="standard")
    assert res.runs[0]["errors"] == 1 and res.runs[0]["missing"] == 1
    data = json.loads((out / "audit.json").read_text())
    assert data["config"]["metric_variant"] == "standard"
    assert data["config"]["n_resamples"] == 100 and data["config"]["seed"] == 1337
    md = (out / "audit.md").read_text()
    assert "metric variant **standard**" in md and "Winner flips" not in md
    per_query = [json.loads(x) for x in (out / "per_query.jsonl").read_text().splitlines()]
    assert sum(1 for r in per_query if "error" in r) == 2
    rows = {r["query_id"]: r for r in per_query if "error" not in r}
    # re-check every target from the exported TREC files with pytrec_eval
    run_file = out / "trec" / "a" / "run.txt"
    trec_run: dict[str, dict[str, float]] = {}
    for line in run_file.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        trec_run.setdefault(q, {})[d] = float(s)
    checked = 0
    for t in ("raw", "src", "can"):
        qrels: dict[str, dict[str, int]] = {}
        for line in (out / "trec" / "a" / f"qrels.{t}.txt").read_text().splitlines():
            q, _, d, rel = line.split()
            qrels.setdefault(q, {})[d] = int(rel)
        ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_15", "recall_15",
                                                    "recip_rank"}).evaluate(trec_run)
        for q, r in rows.items():
            if r[t]["eligible"] == 0:
                assert r[t]["ndcg"] is None and q not in ev
                continue
            assert r[t]["ndcg"] == pytest.approx(ev[q]["ndcg_cut_15"], abs=1e-9)
            assert r[t]["recall"] == pytest.approx(ev[q]["recall_15"], abs=1e-9)
            assert r[t]["mrr"] == pytest.approx(ev[q]["recip_rank"], abs=1e-9)
            checked += 1
    assert checked > 60
    with open(out / "contested_labels_template.csv", encoding="utf-8") as fh:
        header = fh.readline().strip().split(",")
    assert header[:3] == ["case_id", "rater", "label"]


def test_lme_variant_written_and_different(tmp_path: Path) -> None:
    run, lin, gold = make_inputs(seed=3, k=10)
    a = audit_runs([(run, lin)], gold, None, n_resamples=50)
    b = audit_runs([(run, lin)], gold, None, n_resamples=50, metric_variant="longmemeval")
    assert b.config.metric_variant == "longmemeval" and "LongMemEval" in b.config.metric_definition
    assert a.runs[0]["full"]["src"]["ndcg"] != b.runs[0]["full"]["src"]["ndcg"]
    assert a.runs[0]["full"]["src"]["recall"] == b.runs[0]["full"]["src"]["recall"]
    with pytest.raises(InputError):
        audit_runs([(run, lin)], gold, None, metric_variant="trec")


def test_input_errors(tmp_path: Path) -> None:
    run, lin, gold = make_inputs(seed=1)
    with pytest.raises(InputError, match="used twice"):
        audit_runs([(run, lin), (run, lin)], gold)
    with pytest.raises(InputError, match="unknown run"):
        audit_runs([(run, lin)], gold, groups={"g": ["run", "nope"]})
    with pytest.raises(InputError, match="no trace files"):
        audit([], tmp_path / "l", tmp_path / "g")
    with pytest.raises(InputError, match="no such trace file"):
        audit([tmp_path / "absent.jsonl"], tmp_path / "l.jsonl", tmp_path / "g.jsonl")


def test_deterministic(tmp_path: Path) -> None:
    run, lin, gold = make_inputs(seed=5, k=12)
    run2, _, _ = make_inputs(seed=6, k=12, name="other")
    # run2 was generated against a different store: give it traces over this store instead
    rng = np.random.default_rng(0)
    for q, t in run.traces.items():
        ids = list(t.ids)
        rng.shuffle(ids)
        run2.traces[q] = Trace(q, ids, t.scores, t.k)
    r1 = audit_runs([(run, lin), (run2, lin)], gold, None, n_resamples=300)
    r2 = audit_runs([(run, lin), (run2, lin)], gold, None, n_resamples=300)
    assert json.dumps(r1.as_dict(), sort_keys=True) == json.dumps(r2.as_dict(), sort_keys=True)
    d = r1.comparisons[0]["per_target"]["src"]["delta"]["ndcg"]
    assert d["low"] <= d["estimate"] <= d["high"]
    assert not any(isinstance(v, float) and math.isnan(v) for v in _leaves(r1.as_dict()))


def _leaves(obj):  # noqa: ANN001, ANN202
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _leaves(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _leaves(v)
    else:
        yield obj


def test_audit_run_folders(tmp_path: Path) -> None:
    run, lin, gold = make_inputs(seed=2, k=10)
    for name in ("a", "b"):
        d = tmp_path / name
        d.mkdir()
        write_traces_jsonl(d / "traces.jsonl", run)
        write_lineage_jsonl(d / "lineage.jsonl", lin.rows)
        write_gold_jsonl(d / "gold.jsonl", gold.queries.values())
    res = audit([tmp_path / "a", tmp_path / "b"], out_dir=None, n_resamples=50)
    assert [r["name"] for r in res.runs] == ["a", "b"]
    # identical traces: Δ is exactly 0 everywhere and nothing flips
    assert res.comparisons[0]["per_target"]["src"]["delta"]["ndcg"]["estimate"] == 0.0
    assert res.comparisons[0]["per_target"]["src"]["winner"]["ndcg"] == "tie"
    assert not any(res.comparisons[0]["flips"][m]["flip"] for m in ("recall", "mrr", "ndcg"))
    (tmp_path / "b" / "gold.jsonl").write_text(
        json.dumps({"query_id": "q0", "anchors": ["D0"]}) + "\n")
    with pytest.raises(InputError, match="gold differs"):
        audit([tmp_path / "a", tmp_path / "b"])
    (tmp_path / "c").mkdir()
    with pytest.raises(InputError, match="no traces.jsonl"):
        audit([tmp_path / "c"])
    with pytest.raises(InputError, match="no lineage"):
        audit([tmp_path / "a" / "traces.jsonl"])


def test_markdown_has_the_paper_tables() -> None:
    from twistbench.audit.report import render_audit_markdown

    lin = _store()
    res = audit_runs([(TURNS, lin), (FACTS, lin)], _gold(), None, n_resamples=100)
    md = render_audit_markdown(res)
    for heading in ("## Runs and target coverage", "## Score shifts", "## Coverage gap",
                    "## Query-level instability", "## Run comparisons",
                    "## Winner flips on the shared subset",
                    "## Design recommendations", "## Contested credits"):
        assert heading in md
    assert "Winner flips: " in md and "| **yes** |" in md
    assert "| turns vs facts | MRR | 3 |" in md  # the shared subset
    assert "| turns vs facts | Canonical | 3 |" in md  # per target
    # the JSON form is plain data (no NaN, no numpy types)
    json.dumps(res.as_dict(), allow_nan=False)


def test_markdown_winner_table() -> None:
    from twistbench.audit.report import render_audit_markdown

    lin = _store()
    md = render_audit_markdown(audit_runs([(TURNS, lin), (FACTS, lin)], _gold(), None,
                                    n_resamples=50))
    assert "| turns vs facts | MRR | 3 |" in md
    assert "| turns | tie | facts | yes |" in md  # MRR better under Raw / Source / Canonical


# A raw-only store (every memory a raw turn, nothing canonical) and a facts-only store (no raw
# memory): the shape of flat-rag and fact-rag. No query has all three targets in either.
def _raw_only() -> Lineage:
    return Lineage("raw.jsonl", [LineageRow(conversation="c", memory_id=f"t{i}",
                                            sources=[f"D{i}"], raw=True, canonical=False)
                                 for i in range(1, 5)])


def _facts_only() -> Lineage:
    return Lineage("facts.jsonl", [LineageRow(conversation="c", memory_id=f"f{i}",
                                              sources=[f"D{i}"], raw=False, canonical=True)
                                   for i in range(1, 5)])


def test_no_shared_subset_is_never_a_tie_and_says_why() -> None:
    from twistbench.audit.report import render_audit_markdown

    raw = _run("raw", {f"q{i}": [f"t{i}", "t1"] if i != 1 else ["t2", "t1"] for i in range(1, 5)})
    facts = _run("facts", {f"q{i}": [f"f{i}"] for i in range(1, 5)})
    res = audit_runs([(raw, _raw_only()), (facts, _facts_only())], _gold(), None, n_resamples=50)
    cmp_ = res.comparisons[0]
    pt = cmp_["per_target"]
    assert (pt["raw"]["n"], pt["src"]["n"], pt["can"]["n"]) == (0, 4, 0)
    assert pt["raw"]["why_empty"] == "facts has no Raw target"
    assert pt["can"]["why_empty"] == "raw has no Canonical target"
    assert pt["raw"]["winner"] == {"recall": None, "mrr": None, "ndcg": None}
    # Source: raw run MRR 1/2, 1, 1, 1 vs facts 1, 1, 1, 1 -> Δ = -1/8, facts better
    assert pt["src"]["delta"]["mrr"]["estimate"] == pytest.approx(-1 / 8)
    assert pt["src"]["winner"]["mrr"] == "facts"
    assert cmp_["shared"]["n"] == 0
    assert cmp_["shared"]["why_empty"] == ("raw has no Canonical target; facts has no Raw "
                                           "target")
    assert all(cmp_["flips"][m]["flip"] is None for m in ("recall", "mrr", "ndcg"))
    rec = res.recommendations[0]
    assert rec["best"]["mrr"] == {"raw": None, "src": "facts", "can": None}
    assert rec["n"] == {"raw": 0, "src": 4, "can": 0} and rec["changes"]["mrr"] is False
    md = render_audit_markdown(res)
    assert "None" not in md
    na = " | ".join(["n/a"] * 3 + ["n/a (n = 0)"] * 3)
    assert f"| raw vs facts | Raw | 0 | {na} |" in md
    assert f"| raw vs facts | Canonical | 0 | {na} |" in md
    # Source is compared: Recall@4 is 1 for both on every query (a real tie, n = 4)
    assert "| raw vs facts | Source | 4 | +0.000 [+0.000, +0.000] | -0.125" in md
    assert "- raw vs facts, Raw: n = 0 (facts has no Raw target)." in md
    assert "- raw vs facts: no shared subset (n = 0): raw has no Canonical target; facts has " \
           "no Raw target." in md
    assert "Winner flips: 0 of 0 comparison × metric cells" in md


def test_two_raw_only_stores_are_compared_under_raw_and_source() -> None:
    a = _run("a", {f"q{i}": [f"t{i}"] for i in range(1, 5)})
    b = _run("b", {f"q{i}": ["t1", f"t{i}"] for i in range(1, 5)})
    res = audit_runs([(a, _raw_only()), (b, _raw_only())], _gold(), None, n_resamples=50)
    pt = res.comparisons[0]["per_target"]
    assert (pt["raw"]["n"], pt["src"]["n"], pt["can"]["n"]) == (4, 4, 0)
    # b ranks t1 first: MRR 1, 1/2, 1/2, 1/2 against a's 1, 1, 1, 1 -> Δ = 3/8, a better
    assert pt["raw"]["delta"]["mrr"]["estimate"] == pytest.approx(3 / 8)
    assert pt["raw"]["winner"]["mrr"] == "a" and pt["src"]["winner"]["mrr"] == "a"
    assert pt["can"]["why_empty"] == "a has no Canonical target; b has no Canonical target"


def test_partial_coverage_compares_each_target_on_its_own_queries() -> None:
    # run b errored on q1 and has no trace for q2: every target compares on q3, q4 only;
    # Canonical (no f4 in this store) on q3 alone
    lin = _store()
    b = TraceRun("b", "b.jsonl", 4, {q: Trace(q, ids, [1.0] * len(ids), 4) for q, ids in
                                     {"q3": ["f3", "t3"], "q4": ["t4"]}.items()},
                 errors={"q1": "timeout"})
    res = audit_runs([(TURNS, lin), (b, lin)], _gold(), None, n_resamples=50)
    cmp_ = res.comparisons[0]
    pt = cmp_["per_target"]
    assert (pt["raw"]["n"], pt["src"]["n"], pt["can"]["n"]) == (2, 2, 1)
    assert cmp_["shared"]["n"] == 1
    # Raw MRR: turns 1, 1 (q3, q4); b 1/2, 1 -> Δ = 1/4
    assert pt["raw"]["delta"]["mrr"]["estimate"] == pytest.approx(1 / 4)
    assert res.runs[1]["errors"] == 1 and res.runs[1]["missing"] == 1
