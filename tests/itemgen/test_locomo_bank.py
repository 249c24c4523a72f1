"""TWIST-LoCoMo 2.0 contrast bank and plan: the rules that hold before any conversation is
written."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from twistbench.itemgen.locomo_authoring import ACK_PHRASES, fill, grammar_problems, slots_of
from twistbench.itemgen.locomo_plan import (
    CONVERSATIONS,
    load_contrast,
    load_plan,
    make_plan,
    render_assignment,
    render_plan,
    session_dates_from_locomo,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def contrast():
    return load_contrast()


@pytest.fixture(scope="module")
def plan():
    return load_plan()


def test_bank_provenance_and_unique_ids(contrast):
    for key in ("drafted_by", "drafted_on", "reviewed_by", "reviewed_on", "notes"):
        assert contrast["provenance"][key]
    ids = [t["id"] for t in contrast["target"]] + [w["id"] for w in contrast["wording"]]
    assert len(ids) == len(set(ids)) == 160
    texts = [t["text"] for t in contrast["target"]] + [w["text"] for w in contrast["wording"]]
    assert len(texts) == len(set(texts))


def test_bank_targets_have_no_acknowledgement(contrast):
    """A target reads the same under both labels: it never acknowledges its own change, and a
    reversal is never phrased as a request to update notes or records."""
    for t in contrast["target"]:
        assert not ACK_PHRASES.search(t["text"]), t["id"]
        assert t["form"] in ("statement", "question", "hypothetical", "lookback", "news")
        assert t["reversal_anchor"] and t["consistent_anchor"]
    forms = Counter(t["form"] for t in contrast["target"])
    assert forms["question"] >= 8 and forms["hypothetical"] >= 5  # contradictions include questions


def test_every_slot_has_a_pool_and_every_fill_is_grammatical(contrast):
    pools = contrast["pools"]
    for t in contrast["target"]:
        slots = [s for s in slots_of(t["text"]) if s != "name"]
        assert all(s in pools for s in slots), t["id"]
        for combo in itertools.product(*(pools[s] for s in slots)):
            text = fill(t["text"], dict(zip(slots, combo, strict=True), name="Sam"))
            assert not grammar_problems(text), (t["id"], text, grammar_problems(text))


def test_wordings_pair_evenly(contrast):
    pairs = Counter(w["pair"] for w in contrast["wording"])
    assert pairs == {"aligned": 50, "hard_negative": 50}
    for w in contrast["wording"]:
        assert "{A}" in w["text"] and w["other"] and w["contradicting"], w["id"]


def test_grammar_check_catches_known_errors():
    assert grammar_problems("I bought a expansion pack")
    assert grammar_problems("We went to the the park")
    assert grammar_problems("Hey {name}, look")
    assert grammar_problems("Wow.. that's great")
    assert not grammar_problems("I bought an e-reader and a university sweater for an hour")


def test_plan_gives_every_member_both_labels(plan, contrast):
    uses: dict[str, Counter[str]] = {}
    for c in plan["conversations"].values():
        for a in c["arc"]:
            uses.setdefault(a["member"], Counter())[a["label"]] += 1
        for d in c["distractor"]:
            uses.setdefault(d["member"], Counter())["distractor"] += 1
        for d in c["draft"]:
            uses.setdefault(d["member"], Counter())[d["label"]] += 1
    for t in contrast["target"]:
        assert uses[t["id"]] == {"reversal": 1, "hard_negative": 1, "distractor": 1}, t["id"]
    for w in contrast["wording"]:
        assert uses[w["id"]] == {"contradicting": 1, w["pair"]: 1}, w["id"]
    for cid, c in plan["conversations"].items():
        labels = Counter(a["label"] for a in c["arc"])
        assert labels == {"reversal": 6, "hard_negative": 6}, cid
        assert Counter(d["label"] for d in c["draft"]) == {
            "contradicting": 10, "aligned": 5, "hard_negative": 5}, cid
        # the three uses of a target are in three different conversations
    where: dict[str, set[str]] = {}
    for cid, c in plan["conversations"].items():
        for row in c["arc"] + c["distractor"]:
            where.setdefault(row["member"], set()).add(cid)
    assert all(len(v) == 3 for v in where.values())


def test_arc_slots_are_drawn_before_labels(plan):
    """Slot features are matched between labels: over the ten conversations the share of targets
    in appended sessions and the mean third barely differ between reversals and negatives."""
    rows = [a for c in plan["conversations"].values() for a in c["arc"]]
    for lab in ("reversal", "hard_negative"):
        mine = [a for a in rows if a["label"] == lab]
        assert len(mine) == 60
    def share(lab, f):
        mine = [a for a in rows if a["label"] == lab]
        return sum(f(a) for a in mine) / len(mine)
    app = {cid: c["last_original_session"] for cid, c in plan["conversations"].items()}
    in_app = {}
    for cid, c in plan["conversations"].items():
        for a in c["arc"]:
            in_app[id(a)] = a["target_session"] > app[cid]
    assert abs(share("reversal", lambda a: in_app[id(a)])
               - share("hard_negative", lambda a: in_app[id(a)])) < 0.2
    assert abs(share("reversal", lambda a: a["target_third"])
               - share("hard_negative", lambda a: a["target_third"])) < 0.4


def test_committed_plan_and_assignment_regenerate(locomo_path, contrast):
    dates, speakers = session_dates_from_locomo(locomo_path)
    plan = make_plan(dates, speakers, contrast)
    from twistbench.itemgen.locomo_plan import bank_path

    assert bank_path("plan.toml").read_text(encoding="utf-8") == render_plan(plan)
    doc = (REPO / "docs" / "keys" / "locomo-assignment.md").read_text(encoding="utf-8")
    assert doc == render_assignment(plan, contrast)
    assert list(plan["conversations"]) == list(CONVERSATIONS)
