"""Track C on hand-computed fixtures: outcomes, rates, post-resolution, pluggable judge."""

import pytest
from twist_fixtures import FakeGuarded, answer_output, conversation, dataset, err_record, ok_record

from twistbench.contract import Capabilities
from twistbench.judges.base import JudgeVerdict
from twistbench.model import Answer, ChainQuery, FactState, Tension, UpdateChain
from twistbench.tracks.base import (
    PHASE_POST_RESOLUTION,
    PHASE_QUERY,
    ConversationState,
    EmittedTension,
)
from twistbench.tracks.c_supersession import TRACK, SupersessionTrack, pick_tension

C1 = conversation("c1", [[("Ann", "We plan 120 seats."), ("Ann", "Go-live March 3.")],
                         [("Ann", "Now 180 seats."), ("Ann", "Go-live moves to April 14.")],
                         [("Ann", "I do pottery."), ("Ann", "I also paint.")]])
C2 = conversation("c2", [[("Bo", "Europe forever.")], [("Bo", "Stockholm it is.")]])


def queries(cid):
    return [ChainQuery(id="cur", kind="current", text=f"{cid} now?"),
            ChainQuery(id="his", kind="history", text=f"{cid} changed?"),
            ChainQuery(id="post", kind="post_resolution", text=f"{cid} after?")]


def chain(cid, conv, states, family="one_update"):
    return UpdateChain(id=cid, conversation=conv, speaker="x", family=family,
                       states=[FactState(**s) for s in states], queries=queries(cid))


SEATS = chain("seats", "c1", [{"value": "120 seats", "variants": ["120"], "turns": ["c1:1:0"],
                               "current": False},
                              {"value": "180 seats", "variants": ["180"], "turns": ["c1:2:0"],
                               "current": True}])
GOLIVE = chain("golive", "c1", [{"value": "March 3", "turns": ["c1:1:1"], "current": False},
                                {"value": "April 14", "turns": ["c1:2:1"], "current": True}])
HOBBY = chain("hobby", "c1", [{"value": "pottery", "turns": ["c1:3:0"], "current": True},
                              {"value": "painting", "variants": ["paint"], "turns": ["c1:3:1"],
                               "current": True}],
              family="coexisting")
CITY = chain("city", "c2", [{"value": "Europe", "turns": ["c2:1:0"], "current": False},
                            {"value": "Stockholm", "turns": ["c2:2:0"], "current": True}])
DS = dataset([C1, C2], update_chains=[SEATS, GOLIVE, HOBBY, CITY])
FULL = Capabilities(recall=True, resolve=True, online_tensions=True)


def r(chain_id, qid, kind, conv, text, ev=None):
    return ok_record(f"C:{chain_id}:{qid}", "C", kind, conv, answer_output(text, ev))


def post(chain_id, conv, text, tension_id="t1"):
    out = {"tension": {"id": tension_id}, "why": "test", **answer_output(text)}
    return ok_record(f"C:{chain_id}:post", "C", "post_resolution", conv, out)


def post_none(chain_id, conv):
    return ok_record(f"C:{chain_id}:post", "C", "post_resolution", conv,
                     {"tension": None, "why": "none", "answer": None})


def records():
    return [
        r("seats", "cur", "current", "c1", "180 seats", ["c1:2:0"]),  # current, cites current
        r("golive", "cur", "current", "c1", "March 3"),  # stale
        r("hobby", "cur", "current", "c1", "pottery and painting"),  # current (coexisting)
        r("city", "cur", "current", "c2", "Stockholm or Europe"),  # hedged
        r("seats", "his", "history", "c1", "It went from 120 to 180 seats."),  # history
        r("golive", "his", "history", "c1", "April 14."),  # current only: not retained
        # coexisting: retained
        r("hobby", "his", "history", "c1", "Pottery, and she likes to paint."),
        r("city", "his", "history", "c2", "She used to want Europe, now Stockholm."),  # history
        post("seats", "c1", "180 seats"),  # stale before? no (current) -> current after
        post("golive", "c1", "April 14"),  # stale before -> current after
        post_none("city", "c2"),  # no tension for this chain: its own outcome
        post("hobby", "c1", "pottery and painting"),
    ]


def test_hand_computed_rates():
    res = TRACK.score(DS, records(), FULL)
    m = res.metrics
    assert (m["current_rate"].k, m["current_rate"].n) == (2, 4)
    # stale over chains with a superseded state: seats, golive, city
    assert (m["stale_rate"].k, m["stale_rate"].n) == (1, 3)
    assert (m["hedged_rate"].k, m["hedged_rate"].n) == (1, 4)
    assert (m["history_retention"].k, m["history_retention"].n) == (3, 4)
    assert (m["current_evidence"].k, m["current_evidence"].n) == (1, 2)
    assert res.details["outcomes"]["current"] == {"current": 2, "hedged": 1, "stale": 1}
    # post-resolution: 3 answered (seats, golive, hobby), 1 chain with no tension
    assert res.counts["post_resolution_no_tension"] == 1
    assert res.counts["post_resolution_answered"] == 3
    assert (m["post_stale_rate"].k, m["post_stale_rate"].n) == (0, 2)
    # responsiveness over seats + golive: before 1/2 stale, after 0/2 -> 0.5
    assert m["resolution_responsiveness"].value == pytest.approx(0.5)
    assert res.details["outcomes"]["post_resolution"]["no_tension"] == 1


def test_hedged_is_never_current():
    recs = [r(c.id, "cur", "current", c.conversation,
              "120 seats or 180 seats maybe") for c in [SEATS]]
    m = TRACK.score(DS, recs, Capabilities(recall=True)).metrics
    assert m["current_rate"].value == 0.0 and m["hedged_rate"].value == 1.0
    assert m["stale_rate"].value == 0.0


def test_post_resolution_na_without_resolve_or_tensions():
    res = TRACK.score(DS, records(), Capabilities(recall=True))
    assert "resolve" in res.na["post_resolution"]
    assert "post_stale_rate" not in res.metrics and "post_resolution" not in res.missing
    res = TRACK.score(DS, records(), Capabilities(recall=True, resolve=True))
    assert "tensions" in res.na["post_resolution"]
    tasks = TRACK.tasks(DS, "c1", Capabilities(recall=True))
    assert {t.kind for t in tasks} == {"current", "history"}


def test_errors_and_missing_are_counted_not_scored():
    recs = [err_record("C:seats:cur", "C", "current", "c1"),
            r("golive", "cur", "current", "c1", "April 14")]
    res = TRACK.score(DS, recs, Capabilities(recall=True))
    assert res.errors == {"current": 1}
    assert res.missing["current"] == 2 and res.missing["history"] == 4
    assert res.metrics["current_rate"].n == 1 and res.metrics["current_rate"].value == 1.0


def test_empty_and_not_applicable():
    res = TRACK.score(DS, [], FULL)
    assert res.metrics["current_rate"].value is None
    assert res.metrics["resolution_responsiveness"].value is None
    assert TRACK.score(DS, [], Capabilities(check_alignment=True)).status == "n/a"
    assert TRACK.score(dataset([C1]), [], FULL).status == "n/a"


def et(tid, claim, new, mode="online", session=2):
    return EmittedTension(mode, session, Tension(id=tid, claim_evidence=claim, new_evidence=new))


def test_pick_tension_prefers_supersession_then_earliest():
    ts = [et("a", ["c1:9:9"], ["c1:2:0"]),  # touches the current state only
          et("b", ["c1:2:0"], ["c1:1:0"]),  # both states, roles reversed
          et("c", ["c1:1:0"], ["c1:2:0"]),  # the supersession itself
          et("d", ["c1:1:0"], ["c1:2:0"])]
    got, why = pick_tension(SEATS, ts)
    assert got.tension.id == "c" and "superseded" in why
    got, _ = pick_tension(SEATS, ts[:2])
    assert got.tension.id == "b"
    got, _ = pick_tension(SEATS, ts[:1])
    assert got.tension.id == "a"
    got, why = pick_tension(SEATS, [et("z", ["c2:1:0"], ["c2:2:0"])])
    assert got is None and "no emitted tension" in why


def test_post_resolution_task_resolves_then_asks():
    tasks = {t.item_id: t for t in TRACK.tasks(DS, "c1", FULL)}
    t = tasks["C:seats:post"]
    assert t.phase == PHASE_POST_RESOLUTION and tasks["C:seats:cur"].phase == PHASE_QUERY
    g = FakeGuarded(answers={"seats after?": Answer(text="180 seats", evidence=["c1:2:0"])})
    state = ConversationState(conversation=C1, tensions=[et("t9", ["c1:1:0"], ["c1:2:0"])])
    out = t.run(g, state)
    assert g.calls == [("resolve", "t9"), ("recall", "seats after?")]
    assert out["tension"]["id"] == "t9" and out["answer"]["text"] == "180 seats"
    assert t.score(out)["outcome"] == "current"
    # no tension: no resolve, no recall, outcome no_tension
    g = FakeGuarded()
    out = t.run(g, ConversationState(conversation=C1))
    assert g.calls == [] and out["tension"] is None and out["answer"] is None
    assert t.score(out) == {"outcome": "no_tension"}


class FixedJudge:
    """A judge that ignores the text: shows the track scores through the Judge protocol."""

    name = "fixed"

    def __init__(self, outcome):
        self.outcome = outcome

    def classify(self, chain, query, answer):
        return JudgeVerdict(self.outcome, [], [], False, False, "fixed")


def test_judge_plugs_in():
    track = SupersessionTrack(judge=FixedJudge("stale"))
    res = track.score(DS, records(), Capabilities(recall=True))
    assert res.metrics["stale_rate"].value == 1.0 and res.details["judge"] == "fixed"
    res = SupersessionTrack(judge=FixedJudge("history")).score(DS, records(),
                                                               Capabilities(recall=True))
    assert res.metrics["current_rate"].value == 1.0


def test_outcomes_for_paired_comparison():
    got = {o.item_id: (o.item_type, o.value) for o in TRACK.outcomes(DS, records(), FULL)}
    assert got["C:seats:cur"] == ("C:current", 1.0)
    assert got["C:golive:cur"] == ("C:current", 0.0)
    assert got["C:golive:post"] == ("C:post_resolution", 1.0)
    assert "C:city:post" not in got  # no tension: no outcome


def test_post_resolution_replay_reapplies_the_saved_resolve_only():
    t = {t.item_id: t for t in TRACK.tasks(DS, "c1", FULL)}["C:seats:post"]
    g = FakeGuarded()
    t.replay(g, ConversationState(conversation=C1), {"tension": {"id": "t9"}, "answer": {}})
    assert g.calls == [("resolve", "t9")]  # the query itself is not asked again
    g = FakeGuarded()
    t.replay(g, ConversationState(conversation=C1), {"tension": None, "answer": None})
    assert g.calls == []
