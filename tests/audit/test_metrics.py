"""Metrics cross-checked against pytrec_eval and ranx on random traces, plus hand fixtures."""

from __future__ import annotations

import math

import numpy as np
import pytest
from synth import make_inputs, python_targets

from twistbench.audit.metrics import discounts, metrics_from_hits, rescore
from twistbench.audit.traces import Gold, GoldQuery, Lineage, LineageRow, Trace, TraceRun

pytrec_eval = pytest.importorskip("pytrec_eval")

K = 20


def _ours_vs(seed: int, variant: str = "standard"):
    run, lin, gold = make_inputs(seed=seed, k=K)
    rs = rescore(run, lin, gold, k=K, variant=variant)
    return run, lin, gold, rs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_targets_match_plain_set_logic(seed: int) -> None:
    run, lin, gold, rs = _ours_vs(seed)
    tg = python_targets(lin, gold)
    for t in ("raw", "src", "can"):
        for i, q in enumerate(rs.qids):
            assert rs.n_rel[t][i] == len(tg[t][q]), (t, q)
    # the random inputs must exercise every case the audit distinguishes
    assert (rs.n_rel["can"] == 0).any() and (rs.n_rel["can"] > 0).any()
    assert (rs.n_rel["src"] > rs.n_rel["raw"]).any()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_against_pytrec_eval(seed: int) -> None:
    run, lin, gold, rs = _ours_vs(seed)
    tg = python_targets(lin, gold)
    trec_run = {q: {d: s for d, s in zip(t.ids, t.scores)} for q, t in run.traces.items()}
    measures = {f"ndcg_cut_{K}", f"recall_{K}", "recip_rank"}
    checked = 0
    for t in ("raw", "src", "can"):
        qrels = {q: {d: 1 for d in ids} for q, ids in tg[t].items() if ids}
        ev = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(trec_run)
        for i, q in enumerate(rs.qids):
            if q not in qrels:
                assert math.isnan(rs.scores[t]["ndcg"][i])  # targetless: not a zero
                assert q not in ev
                continue
            assert rs.scores[t]["ndcg"][i] == pytest.approx(ev[q][f"ndcg_cut_{K}"], abs=1e-9)
            assert rs.scores[t]["recall"][i] == pytest.approx(ev[q][f"recall_{K}"], abs=1e-9)
            assert rs.scores[t]["mrr"][i] == pytest.approx(ev[q]["recip_rank"], abs=1e-9)
            checked += 1
    assert checked > 100


def test_against_ranx() -> None:
    ranx = pytest.importorskip("ranx")
    run, lin, gold, rs = _ours_vs(7)
    tg = python_targets(lin, gold)
    t = "src"
    qrels_d = {q: {d: 1 for d in ids} for q, ids in tg[t].items() if ids}
    run_d = {q: {d: s for d, s in zip(tr.ids, tr.scores)} for q, tr in run.traces.items()
             if q in qrels_d}
    res = ranx.evaluate(ranx.Qrels(qrels_d), ranx.Run(run_d), [f"ndcg@{K}", f"recall@{K}", "mrr"],
                        return_mean=False, make_comparable=True)
    sel = rs.n_rel[t] > 0
    ours_order = [q for q in rs.qids if q in qrels_d]
    # ranx returns per-query arrays in its own (sorted-id) query order
    order = ranx.Qrels(qrels_d).keys()
    pos = {q: i for i, q in enumerate(order)}
    for q in ours_order:
        j = pos[q]
        oi = rs.qids.index(q)
        assert rs.scores[t]["ndcg"][oi] == pytest.approx(res[f"ndcg@{K}"][j], abs=1e-9)
        assert rs.scores[t]["recall"][oi] == pytest.approx(res[f"recall@{K}"][j], abs=1e-9)
        assert rs.scores[t]["mrr"][oi] == pytest.approx(res["mrr"][j], abs=1e-9)
    assert sel.sum() == len(ours_order) == len(qrels_d)


def _lme_ndcg(rels: list[int], n_correct: int, k: int) -> float:
    """LongMemEval src/retrieval/eval_utils.py ndcg, transcribed independently."""
    def dcg(r: list[float], k: int) -> float:
        r = np.asarray(r, dtype=float)[:k]
        if r.size:
            return float(r[0] + np.sum(r[1:] / np.log2(np.arange(2, r.size + 1))))
        return 0.0
    ideal = dcg(sorted([1] * n_correct + [0] * 50, reverse=True), k)
    return dcg(rels, k) / ideal if ideal else 0.0


def test_longmemeval_variant_against_their_formula() -> None:
    run, lin, gold, rs = _ours_vs(3, variant="longmemeval")
    tg = python_targets(lin, gold)
    n = 0
    for t in ("raw", "src", "can"):
        for i, q in enumerate(rs.qids):
            if not tg[t][q]:
                continue
            rels = [1 if d in tg[t][q] else 0 for d in run.traces[q].ids[:K]]
            assert rs.scores[t]["ndcg"][i] == pytest.approx(
                _lme_ndcg(rels, len(tg[t][q]), K), abs=1e-12)
            n += 1
    assert n > 100
    std = rescore(run, lin, gold, k=K, variant="standard")
    assert not np.allclose(np.nan_to_num(std.scores["src"]["ndcg"]),
                           np.nan_to_num(rs.scores["src"]["ndcg"]))
    assert np.allclose(np.nan_to_num(std.scores["src"]["recall"]),
                       np.nan_to_num(rs.scores["src"]["recall"]))


def test_hand_computed_fixture() -> None:
    # ranks 1..4, hits at ranks 2 and 4, |T| = 3, k = 4
    hits = np.array([[False, True, False, True]])
    m = metrics_from_hits(hits, np.array([3]), 4, "standard")
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert m["ndcg"][0] == pytest.approx(dcg / idcg)
    assert m["recall"][0] == pytest.approx(2 / 3)
    assert m["mrr"][0] == pytest.approx(0.5)
    assert m["first_hit"][0] == 2
    lme = metrics_from_hits(hits, np.array([3]), 4, "longmemeval")
    assert lme["ndcg"][0] == pytest.approx((1 / 1 + 1 / 2) / (1 + 1 + 1 / math.log2(3)))
    # |T| larger than k: the ideal list is cut at k, recall cannot reach 1
    full = metrics_from_hits(np.array([[True, True]]), np.array([5]), 2)
    assert full["ndcg"][0] == pytest.approx(1.0)
    assert full["recall"][0] == pytest.approx(0.4)
    # no eligible id: NaN, not 0
    none = metrics_from_hits(np.array([[False, False]]), np.array([0]), 2)
    assert all(math.isnan(none[x][0]) for x in ("ndcg", "recall", "mrr"))
    with pytest.raises(ValueError):
        discounts(3, "nope")


def test_scoping_by_conversation_and_multi_anchor() -> None:
    # the same memory id and the same turn id exist in two conversations
    rows = [
        LineageRow(conversation="a", memory_id="m1", sources=["D1"], raw=True, canonical=False),
        LineageRow(conversation="a", memory_id="f1", sources=["D1", "D2"], raw=False,
                   canonical=True),
        LineageRow(conversation="b", memory_id="m1", sources=["D9"], raw=True, canonical=False),
        LineageRow(conversation="b", memory_id="m2", sources=["D1"], raw=True, canonical=False),
    ]
    gold = Gold("g", {
        "qa": GoldQuery(query_id="qa", conversation="a", anchors=["D1", "D2"]),
        "qb": GoldQuery(query_id="qb", conversation="b", anchors=["D1"]),
    })
    run = TraceRun("r", "r", 3, {
        "qa": Trace("qa", ["m2", "f1", "m1"], [3, 2, 1], 3),  # m2 is not in a's store
        "qb": Trace("qb", ["m1", "m2"], [2, 1], 3),  # b's m1 derives from D9: no credit
    })
    rs = rescore(run, Lineage("l", rows), gold)
    assert rs.n_rel["src"].tolist() == [2, 1]
    assert rs.n_rel["raw"].tolist() == [1, 1]
    assert rs.n_rel["can"].tolist() == [1, 0]
    assert rs.first_hit["src"].tolist() == [2, 2]
    assert rs.first_hit["can"].tolist() == [2, 0]
    assert rs.unknown_ids == 1
    assert math.isnan(rs.scores["can"]["mrr"][1])


def test_dense_table_and_sorted_paths_agree() -> None:
    from twistbench.audit.targets import (
        build_targets,
        code_lineage,
        code_queries,
        hit_matrices,
    )

    run, lin, gold = make_inputs(seed=9, k=K)
    cl = code_lineage(lin)
    cq = code_queries(run, gold, cl, list(run.traces), K)
    ts = build_targets(cq, cl)
    dense = hit_matrices(cq, ts, cl)
    sparse = hit_matrices(cq, ts, cl, dense_max_cells=0)
    for t in ("raw", "src", "can"):
        assert np.array_equal(dense[t], sparse[t])
        assert dense[t].any()


def test_scattered_lineage_rows_and_repeated_sources() -> None:
    # rows of one conversation interleaved with another's, and a source listed twice
    run, lin, gold = make_inputs(seed=4, k=K, n_conv=2)
    tg = python_targets(lin, gold)
    rows = list(lin.rows)
    shuffled = rows[::2] + rows[1::2]
    shuffled[0] = shuffled[0].model_copy(update={"sources": shuffled[0].sources * 2})
    rs = rescore(run, Lineage("l", shuffled), gold, k=K)
    base = rescore(run, lin, gold, k=K)
    for t in ("raw", "src", "can"):
        assert [rs.n_rel[t][i] for i in range(len(rs.qids))] == \
            [len(tg[t][q]) for q in rs.qids]
        assert np.allclose(np.nan_to_num(rs.scores[t]["ndcg"], nan=-1),
                           np.nan_to_num(base.scores[t]["ndcg"], nan=-1))


def test_repeated_memory_in_memory_lineage_is_refused() -> None:
    from twistbench.audit.targets import code_lineage

    row = LineageRow(conversation="c", memory_id="m", sources=["D1"], raw=True, canonical=False)
    with pytest.raises(ValueError, match="repeated"):
        code_lineage(Lineage("l", [row, row]))
