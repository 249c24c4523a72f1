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
    assert (cmp_["a"], cmp_["b"], cmp_["n"]) == ("turns", "facts", 3)
    # facts run raw MRR: q1 t1 at rank 3, q2 t2 at rank 4, q3 no t3 -> 1/3, 1/4, 0
    # Δ raw MRR = mean(1 - 1/3, 1 - 1/4, 1 - 0) > 0 ; Δ can MRR = mean(1/2-1, 1/3-1, 1/2-1) < 0
    assert cmp_["delta"]["raw"]["mrr"]["estimate"] == pytest.approx((2 / 3 + 3 / 4 + 1) / 3)
    assert cmp_["delta"]["can"]["mrr"]["estimate"] == pytest.approx(-(1 / 2 + 2 / 3 + 1 / 2) / 3)
    assert cmp_["flips"]["mrr"]["flip"] is True
    assert cmp_["flips"]["mrr"]["winner"] == {"raw": "turns", "src": "tie", "can": "facts"}
    rec = res.recommendations[0]
    assert rec["best"]["mrr"] == {"raw": "turns", "src": "tie: facts, turns", "can": "facts"}
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
    d = r1.comparisons[0]["delta"]["src"]["ndcg"]
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
    assert res.comparisons[0]["delta"]["src"]["ndcg"]["estimate"] == 0.0
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
                    "## Query-level instability", "## Run comparisons and winner flips",
                    "## Design recommendations", "## Contested credits"):
        assert heading in md
    assert "Winner flips: " in md and "| **yes** |" in md
    assert "| turns vs facts | MRR | 3 |" in md
    # the JSON form is plain data (no NaN, no numpy types)
    json.dumps(res.as_dict(), allow_nan=False)


def test_markdown_winner_table() -> None:
    from twistbench.audit.report import render_audit_markdown

    lin = _store()
    md = render_audit_markdown(audit_runs([(TURNS, lin), (FACTS, lin)], _gold(), None,
                                    n_resamples=50))
    assert "| turns vs facts | MRR | turns | tie | facts |" in md
