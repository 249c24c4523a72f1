"""LongMemEval loader on a small file in the released format, written by the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twistbench.audit.core import audit
from twistbench.audit.native import NativeStore
from twistbench.audit.traces import write_lineage_jsonl
from twistbench.audit.tracing import write_traces
from twistbench.datasets.audit_corpus import raw_lineage
from twistbench.datasets.longmemeval import load_longmemeval, parse_date
from twistbench.errors import InputError


def _instance(qid: str, qtype: str = "single-session-user") -> dict:
    return {
        "question_id": qid, "question_type": qtype,
        "question": "What degree did I graduate with?", "answer": "Business Administration",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["sharegpt_x_0", "answer_abc_1", "ultrachat_9"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00", "bad date"],
        "haystack_sessions": [
            [{"role": "user", "content": "Tell me about pasta."},
             {"role": "assistant", "content": "Pasta is made from durum wheat."}],
            [{"role": "user", "content": "I graduated with a degree in Business "
                                         "Administration.", "has_answer": True},
             {"role": "assistant", "content": "Congratulations on your degree!",
              "has_answer": False},
             {"role": "user", "content": "Thanks, it took four years.", "has_answer": False}],
            [{"role": "user", "content": "How do I fix a bike chain?"}],
        ],
        "answer_session_ids": ["answer_abc_1"],
    }


def _file(tmp_path: Path, data: list) -> Path:
    p = tmp_path / "longmemeval_s.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def test_turn_and_session_granularity(tmp_path: Path) -> None:
    abs_q = _instance("q2_abs")
    no_turn = _instance("q3", "multi-session")
    for t in no_turn["haystack_sessions"][1]:
        t["has_answer"] = False
    p = _file(tmp_path, [_instance("q1"), abs_q, no_turn])
    turn = load_longmemeval(p)
    assert [c.id for c in turn.conversations] == ["q1", "q2_abs", "q3"]
    conv = turn.conversations[0]
    assert [e.id for e in conv.events] == ["sharegpt_x_0_1", "sharegpt_x_0_2", "answer_abc_1_1",
                                           "answer_abc_1_2", "answer_abc_1_3", "ultrachat_9_1"]
    assert [e.session for e in conv.events] == [1, 1, 2, 2, 2, 3]
    assert conv.events[2].timestamp.isoformat() == "2023-05-21T10:00:00"
    assert [q.query_id for q in turn.queries] == ["q1"]
    assert turn.queries[0].anchors == ["answer_abc_1_1"]
    assert turn.queries[0].category == "single-session-user"
    assert "Business" in turn.queries[0].anchor_texts["answer_abc_1_1"]
    assert {s["query_id"]: s["reason"] for s in turn.skipped} == {
        "q2_abs": "abstention question (no evidence location)",
        "q3": "no turn-level evidence"}
    assert any(d["kind"] == "unparsed_date" for d in turn.meta["defects"])
    sess = load_longmemeval(p, granularity="session")
    assert [q.query_id for q in sess.queries] == ["q1", "q3"]
    assert sess.queries[0].anchors == ["answer_abc_1_1", "answer_abc_1_2", "answer_abc_1_3"]
    assert len(raw_lineage(turn.conversations)) == 18


def test_parse_date() -> None:
    assert parse_date("2023/05/20 (Sat) 02:21").hour == 2
    assert parse_date("yesterday") is None


def test_repeated_session_id_renamed(tmp_path: Path) -> None:
    inst = _instance("q1")
    inst["haystack_session_ids"][2] = "sharegpt_x_0"
    c = load_longmemeval(_file(tmp_path, [inst]))
    assert c.conversations[0].events[-1].id == "sharegpt_x_0~2_1"
    assert any(d["kind"] == "repeated_session_id" for d in c.meta["defects"])


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d.pop("question_id"), "question_id"),
    (lambda d: d["haystack_session_ids"].pop(), "haystack_sessions"),
    (lambda d: d["haystack_sessions"][0].__setitem__(0, {"role": "user"}),
     "haystack_sessions[0][0]"),
])
def test_bad_instances(tmp_path: Path, mutate, field: str) -> None:  # noqa: ANN001
    inst = _instance("q1")
    mutate(inst)
    with pytest.raises(InputError) as ei:
        load_longmemeval(_file(tmp_path, [_instance("q0"), inst]))
    assert ei.value.field == field and ei.value.where.startswith("instance 1")
    with pytest.raises(InputError, match="granularity"):
        load_longmemeval(_file(tmp_path, [_instance("q0")]), granularity="turns")


def test_trace_and_audit_longmemeval(tmp_path: Path) -> None:
    corpus = load_longmemeval(_file(tmp_path, [_instance("q1"), _instance("q9")]))
    out = tmp_path / "run"
    rep = write_traces(NativeStore("lexical", 5), corpus, out, k=10)
    assert rep.traced == 2 and rep.skipped == 0
    res = audit([out / "traces.jsonl"], out / "lineage.jsonl", out / "gold.jsonl",
                tmp_path / "audit", n_resamples=50, metric_variant="longmemeval")
    r = res.runs[0]
    assert res.config.metric_variant == "longmemeval"
    assert r["coverage"]["raw"]["eligible"] == 2
    # the evidence turn shares "graduated", "degree", "Business Administration" with the
    # question: BM25 ranks it first, so Raw MRR is 1
    assert r["full"]["raw"]["mrr"] == pytest.approx(1.0)
    # the loader's own raw lineage works as a lineage file for a raw-turn store
    write_lineage_jsonl(tmp_path / "raw_lineage.jsonl", raw_lineage(corpus.conversations))
