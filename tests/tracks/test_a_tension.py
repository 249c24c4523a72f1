"""Track A on hand-computed fixtures."""

import pytest
from twist_fixtures import (
    FakeGuarded,
    conversation,
    dataset,
    err_record,
    ingest_record,
    ok_record,
    tension,
)

from twistbench.contract import Capabilities
from twistbench.model import HardNegativeArc, ReversalArc, Tension
from twistbench.tracks.a_tension import TRACK, dedupe, match, score_conversation
from twistbench.tracks.base import PHASE_BATCH, ConversationState

CA = conversation("cA", [
    [("Dana", "I'd never move back to Europe."), ("Dana", "Renewing is a no-brainer.")],
    [("Dana", "Stockholm has been on my mind."), ("Dana", "I miss Sweden sometimes.")],
    [("Dana", "I'm applying for jobs in Stockholm."), ("Dana", "If we moved, hypothetically...")],
    [("Dana", "At this price we're evaluating a competitor.")],
    [("Lee", "Noted.")],
])
CB = conversation("cB", [
    [("Priya", "We keep the on-prem connector.")],
    [("Priya", "We're dropping the on-prem connector."), ("Priya", "I miss the old console.")],
])
ARCS = [
    ReversalArc(id="ra1", conversation="cA", speaker="Dana", family="drift_flip",
                anchor=["cA:1:0"], drift=["cA:2:0"], reversal=["cA:3:0"]),
    ReversalArc(id="ra2", conversation="cA", speaker="Dana", family="direct",
                anchor=["cA:1:1"], reversal=["cA:4:0"]),
    ReversalArc(id="ra3", conversation="cB", speaker="Priya", family="direct",
                anchor=["cB:1:0"], reversal=["cB:2:0"]),
]
HNS = [
    HardNegativeArc(id="hn1", conversation="cA", speaker="Dana", family="nostalgia",
                    anchor=["cA:1:0"], turns=["cA:2:1"]),
    HardNegativeArc(id="hn2", conversation="cA", speaker="Dana", family="hypothetical",
                    turns=["cA:3:1"]),
    HardNegativeArc(id="hn3", conversation="cB", speaker="Priya", family="nostalgia",
                    turns=["cB:2:1"]),
]
DS = dataset([CA, CB], reversal_arcs=ARCS, hard_negative_arcs=HNS)
BOTH = Capabilities(online_tensions=True, batch_tensions=True)

T1 = tension("t1", ["cA:1:0"], ["cA:3:0"])  # ra1, attributed
T2 = tension("t2", ["cA:1:1"], ["cA:4:0"])  # ra2, attributed
T3 = tension("t3", ["cA:1:0"], ["cA:3:1"])  # flags hn2: false positive


def online_records():
    return [
        ingest_record("cA", 1), ingest_record("cA", 2),
        ingest_record("cA", 3, tensions=[T1]),
        ingest_record("cA", 4, tensions=[T1, T3]),  # t1 again: a duplicate
        ingest_record("cA", 5, tensions=[T2]),  # ra2's reversal was in session 4: latency 1
        ingest_record("cB", 1), ingest_record("cB", 2),  # ra3 missed
    ]


def batch_records():
    t5 = tension("t5", ["cA:2:0"], ["cA:3:0"])  # ra1 via the drift turn only: not attributed
    t6 = tension("t6", ["cB:1:0"], ["cB:2:0"])  # ra3
    t7 = tension("t7", ["cB:1:0"], ["cB:2:0", "cB:2:1"])  # ra3 again (FP) and flags hn3
    return [ok_record("A:cA:batch", "A", "batch", "cA", {"tensions": [t5]}),
            ok_record("A:cB:batch", "A", "batch", "cB", {"tensions": [t6, t7]})]


def test_online_hand_computed():
    res = TRACK.score(DS, online_records(), Capabilities(online_tensions=True))
    m = res.metrics
    # TP 2 (ra1, ra2), FP 1 (t3), FN 1 (ra3)
    assert m["online.f1"].value == pytest.approx(4 / 6)
    assert m["online.f1"].counts == {"tp": 2, "fp": 1, "fn": 1}
    assert (m["online.precision"].k, m["online.precision"].n) == (2, 3)
    assert (m["online.recall"].k, m["online.recall"].n) == (2, 3)
    assert (m["online.false_flag_rate"].k, m["online.false_flag_rate"].n) == (1, 3)
    assert (m["online.attribution"].k, m["online.attribution"].n) == (2, 2)
    assert m["online.latency_sessions"].value == pytest.approx(0.5)  # (0 + 1) / 2
    assert res.details["online"]["duplicates"] == 1
    assert res.details["online"]["detections"] == 3
    assert "batch" in res.na and "batch.f1" not in m


def test_batch_hand_computed_and_separate_from_online():
    res = TRACK.score(DS, online_records() + batch_records(), BOTH)
    m = res.metrics
    # batch: TP 2 (ra1 via drift, ra3), FP 1 (t7), FN 1 (ra2)
    assert m["batch.f1"].counts == {"tp": 2, "fp": 1, "fn": 1}
    assert (m["batch.attribution"].k, m["batch.attribution"].n) == (1, 2)
    assert (m["batch.false_flag_rate"].k, m["batch.false_flag_rate"].n) == (1, 3)
    assert "batch.latency_sessions" not in m
    # online numbers unchanged by the batch records
    assert m["online.f1"].counts == {"tp": 2, "fp": 1, "fn": 1}
    assert res.na == {}


def flag_everything(conv):
    """Every earlier turn against every later turn, emitted after the later turn's session."""
    out = []
    for i, a in enumerate(conv.events):
        for b in conv.events[i + 1:]:
            out.append((b.session, tension(f"{a.id}>{b.id}", [a.id], [b.id])))
    return out


def test_a_system_that_flags_everything_has_recall_1_and_false_flag_rate_1():
    recs = []
    for conv in (CA, CB):
        emitted = flag_everything(conv)
        for k, _ in conv.sessions():
            recs.append(ingest_record(conv.id, k, tensions=[t for s, t in emitted if s == k]))
    m = TRACK.score(DS, recs, Capabilities(online_tensions=True)).metrics
    assert m["online.recall"].value == 1.0
    assert m["online.false_flag_rate"].value == 1.0
    assert m["online.precision"].value < 0.5


def test_a_system_that_flags_nothing():
    recs = [ingest_record(c.id, k) for c in (CA, CB) for k, _ in c.sessions()]
    m = TRACK.score(DS, recs, Capabilities(online_tensions=True)).metrics
    assert m["online.recall"].value == 0.0 and m["online.recall"].n == 3
    assert m["online.f1"].value == 0.0
    assert m["online.precision"].value is None  # no detections: no items, not zero
    assert m["online.false_flag_rate"].value == 0.0
    assert m["online.attribution"].value is None
    assert m["online.latency_sessions"].value is None


def test_empty_inputs():
    # no records at all: every item missing, no metric has a value
    res = TRACK.score(DS, [], Capabilities(online_tensions=True))
    assert res.missing["online"] == 6 and res.errors["online"] == 0
    assert res.metrics["online.f1"].value is None
    assert res.metrics["online.recall"].value is None
    # empty dataset: N/A, never zero
    empty = dataset([CA])
    res = TRACK.score(empty, [], BOTH)
    assert res.status == "n/a" and not res.metrics
    s = score_conversation([], [], [])
    assert (s.tp, s.fp, s.fn, s.detections) == (0, 0, 0, 0)


def test_not_applicable_without_a_tension_mode():
    res = TRACK.score(DS, online_records(), Capabilities(recall=True))
    assert res.status == "n/a" and "neither" in res.reason and res.metrics == {}
    assert TRACK.tasks(DS, "cA", Capabilities(recall=True)) == []


def test_duplicates_count_once_and_first_emission_wins():
    t = Tension(**T1)
    dets, dups = dedupe([(3, t), (4, t), (4, Tension(**{**T1, "id": "other-id"}))])
    assert len(dets) == 1 and dups == 2 and dets[0].session == 3 and dets[0].tension_id == "t1"
    # different order of the same ids in the evidence is the same tension
    dets, dups = dedupe([(1, tension("a", ["x", "y"], ["z"])),
                         (2, tension("b", ["y", "x"], ["z"]))])
    assert len(dets) == 1 and dups == 1


def test_reflagging_one_arc_with_other_evidence_is_one_tp_and_one_fp():
    emitted = [(3, T1), (4, tension("t1b", ["cA:1:0", "cA:2:0"], ["cA:3:0"]))]
    s = score_conversation(ARCS[:1], [], emitted, {e.id: e.session for e in CA.events})
    assert (s.tp, s.fp, s.fn) == (1, 1, 0)
    assert s.latencies == [0]  # the earlier emission got the match


def test_matching_is_one_to_one_and_maximum():
    # dx could match ra1 or ra2, dy only ra1: the maximum matching uses both
    dx = tension("dx", ["cA:1:0", "cA:1:1"], ["cA:3:0", "cA:4:0"])
    dy = tension("dy", ["cA:1:0"], ["cA:3:0"])
    dets, _ = dedupe([(4, dx), (4, dy)])
    m = match(ARCS[:2], dets)
    assert {k: v.tension_id for k, v in m.items()} == {"ra1": "dy", "ra2": "dx"}


def test_ingest_error_makes_the_conversation_an_error_not_a_score():
    recs = online_records()
    recs = [r for r in recs if r.conversation != "cB"] + [ingest_record("cB", 1, error=True),
                                                         ingest_record("cB", 2)]
    res = TRACK.score(DS, recs, Capabilities(online_tensions=True))
    assert res.errors["online"] == 2  # ra3 and hn3
    # cB out of the metrics: TP 2, FP 1, FN 0
    assert res.metrics["online.f1"].counts == {"tp": 2, "fp": 1, "fn": 0}
    assert res.metrics["online.recall"].n == 2


def test_batch_error_counts_its_conversation_items():
    recs = [batch_records()[0], err_record("A:cB:batch", "A", "batch", "cB", call="flag_tensions")]
    res = TRACK.score(DS, recs, Capabilities(batch_tensions=True))
    assert res.errors["batch"] == 2 and res.metrics["batch.recall"].n == 2


def test_batch_task_calls_flag_tensions_once_and_records_state():
    tasks = TRACK.tasks(DS, "cA", BOTH)
    assert [t.item_id for t in tasks] == ["A:cA:batch"] and tasks[0].phase == PHASE_BATCH
    g = FakeGuarded(tensions=[Tension(**T1)])
    state = ConversationState(conversation=CA)
    out = tasks[0].run(g, state)
    assert g.calls == [("flag_tensions", "")]
    assert out == {"tensions": [Tension(**T1).model_dump(mode="json")]}
    assert [(e.mode, e.session, e.tension.id) for e in state.tensions] == [("batch", None, "t1")]
    # online-only systems get no batch task
    assert TRACK.tasks(DS, "cA", Capabilities(online_tensions=True)) == []


def test_outcomes_per_arc_and_hard_negative():
    outs = TRACK.outcomes(DS, online_records(), Capabilities(online_tensions=True))
    got = {o.item_id: o.value for o in outs}
    assert got == {"online:ra1": 1.0, "online:ra2": 1.0, "online:ra3": 0.0,
                   "online:hn1": 1.0, "online:hn2": 0.0, "online:hn3": 1.0}


def test_a_flag_on_a_genuine_update_chain_is_neutral_but_on_coexisting_facts_is_false():
    from twistbench.model import ChainQuery, FactState, UpdateChain

    def chain(cid, family, current_old):
        return UpdateChain(
            id=cid, conversation="cB", speaker="Priya", family=family,
            states=[FactState(value="on-prem", turns=["cB:1:0"], current=current_old),
                    FactState(value="cloud", turns=["cB:2:0"], current=True)],
            queries=[ChainQuery(id="q", kind="current", text=f"{cid}?")])

    flag = tension("t9", ["cB:1:0"], ["cB:2:0"])
    # no arc on these turns: with a genuine update chain the flag is neither TP nor FP
    s = score_conversation([], [], [(2, flag)], None, [chain("u1", "one_update", False)])
    assert (s.tp, s.fp, s.fn, s.supersession, s.detections) == (0, 0, 0, 1, 0)
    # coexisting facts: the same flag is a false positive
    s = score_conversation([], [], [(2, flag)], None, [chain("u2", "coexisting", True)])
    assert (s.fp, s.supersession) == (1, 0)
    # a flag that also matches an arc is a true positive, not a supersession flag
    s = score_conversation([ARCS[2]], [], [(2, flag)], None, [chain("u1", "one_update", False)])
    assert (s.tp, s.fp, s.supersession) == (1, 0, 0)


def test_batch_replay_restores_saved_tensions_without_calling_the_system():
    task = TRACK.tasks(DS, "cA", BOTH)[0]
    g = FakeGuarded(tensions=[Tension(**T1)])
    state = ConversationState(conversation=CA)
    out = task.run(g, state)
    resumed = ConversationState(conversation=CA)
    g2 = FakeGuarded()
    task.replay(g2, resumed, out)
    assert g2.calls == []
    assert [e.tension for e in resumed.tensions] == [e.tension for e in state.tensions]
    assert all(e.mode == "batch" for e in resumed.tensions)
