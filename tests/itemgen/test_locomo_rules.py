"""TWIST-LoCoMo 2.0 label rules (keys2 principles §4, issue 12): for each rule, the checker
reports a file that breaks it.

Every test starts from the pilot's committed authoring file (conv-26.toml), which passes, breaks
one rule in a copy (of the file, the plan or the contrast bank) and reads the problem the
checker (itemgen/locomo_authoring.py, the code `twist build` and `locomo_read --check` run)
reports. That the committed files pass is shown by the build tests (test_locomo2.py); the
table in docs/keys/locomo-authoring.md ("Label rules and the test that enforces each") maps
every rule to its check and test.
"""

from __future__ import annotations

import copy
import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from twistbench.datasets.locomo import load_locomo
from twistbench.errors import InputError
from twistbench.itemgen.locomo_authoring import (
    MAX_DUPLICATE_SHARE,
    MONTHS,
    ack_problems,
    authoring_path,
    check_conversation,
    duplicate_problems,
    fill,
    plan_problems,
    qa_spans,
    strip_image,
    unread_observations,
)
from twistbench.itemgen.locomo_plan import CONVERSATIONS, load_contrast, load_plan, read_toml

CONV = "conv-26"


@pytest.fixture(scope="module")
def corpus():
    from conftest import shared_file

    return load_locomo(shared_file("locomo", "locomo10.json"))


@pytest.fixture(scope="module")
def pilot(corpus):
    """The pilot's committed file, plan and bank, and a function that breaks a copy of them and
    returns what the checker says."""
    plan, contrast = load_plan(), load_contrast()
    raw = read_toml(authoring_path(CONV))
    crisis = read_toml(authoring_path(CONV, crisis=True))
    clean = check_conversation(corpus, CONV, plan, contrast, raw, crisis)
    assert clean.problems == []

    def problems_after(mutate_raw=None, *, mutate_plan=None, mutate_contrast=None,
                       with_crisis: bool = False) -> list[str]:
        bad_raw, bad_plan, bad_contrast = (copy.deepcopy(x) for x in (raw, plan, contrast))
        if mutate_raw:
            mutate_raw(bad_raw)
        if mutate_plan:
            mutate_plan(bad_plan["conversations"][CONV])
        if mutate_contrast:
            mutate_contrast(bad_contrast)
        return check_conversation(corpus, CONV, bad_plan, bad_contrast, bad_raw,
                                  copy.deepcopy(crisis) if with_crisis else None).problems

    return {"raw": raw, "plan": plan, "contrast": contrast, "placed": clean,
            "problems_after": problems_after}


def _said(problems: list[str], text: str) -> bool:
    return any(text in p for p in problems)


def _insert(raw: dict[str, Any], ref: str) -> dict[str, Any]:
    """The [[insert]] row that holds turn `ref` ("d5a.2")."""
    iid = ref.rsplit(".", 1)[0]
    return next(i for i in raw["insert"] if i["id"] == iid)


def _turn(raw: dict[str, Any], ref: str) -> dict[str, Any]:
    return _insert(raw, ref)["turns"][int(ref.rsplit(".", 1)[1]) - 1]


def _arc(raw: dict[str, Any], slot: str) -> dict[str, Any]:
    return next(a for t in ("reversal", "hard_negative") for a in raw[t] if a["slot"] == slot)


# --- Track A ----------------------------------------------------------------------------------


@pytest.mark.parametrize("table", ["reversal", "hard_negative"])
@pytest.mark.parametrize("suffix", [" Update your notes!", " I know I said otherwise."])
def test_a_target_never_asks_to_update_notes_or_acknowledges_its_change(pilot, table, suffix):
    """A reversal is never phrased as a request to update notes (and, since the same target closes
    a hard negative elsewhere, no target is): a bank line that did would be refused where it is
    used, under either label."""
    raw = pilot["raw"]
    arc = raw[table][0]
    slot = next(s for s in pilot["plan"]["conversations"][CONV]["arc"] if s["slot"] == arc["slot"])

    def mutate_contrast(c):
        member = next(t for t in c["target"] if t["id"] == slot["member"])
        member["text"] += suffix

    def mutate_raw(r):
        _turn(r, arc["target"])["text"] += suffix

    problems = pilot["problems_after"](mutate_raw, mutate_contrast=mutate_contrast)
    assert not _said(problems, "target text differs")  # the bank and the turn still agree
    assert _said(problems, "a target never acknowledges its own change or asks to update notes")


def test_an_acknowledgement_never_repeats_a_reversal_sentence(pilot):
    raw = pilot["raw"]
    ack_ref = _arc(raw, "s01")["ack"][0]  # Melanie's acknowledged change
    reversal_target = pilot["placed"].by_ref[_arc(raw, "s06")["target"]]  # Melanie's reversal
    first_sentence = strip_image(reversal_target.text).split(". ")[0] + "."
    assert len(first_sentence.split()) >= 4

    def repeat(r):
        _turn(r, ack_ref)["text"] += " " + first_sentence

    assert _said(pilot["problems_after"](repeat), f"ack {ack_ref} repeats a sentence of a reversal")


def test_an_acknowledgement_never_repeats_a_reversal_sentence_of_another_conversation(
        pilot, corpus):
    """The same rule across the key (the build runs it): a reversal of another conversation,
    such as the one its own target closes there, is no sentence for an acknowledgement either."""
    other = "conv-30"
    there = check_conversation(corpus, other, pilot["plan"], pilot["contrast"],
                               read_toml(authoring_path(other)))
    assert ack_problems({CONV: pilot["placed"], other: there}) == []
    reversal = there.raw["reversal"][0]
    sentence = next(part for part in
                    strip_image(there.by_ref[reversal["target"]].text).split(". ")
                    if len(part.split()) >= 4).rstrip(".!") + "."
    ack_ref = _arc(pilot["raw"], "s01")["ack"][0]
    bad = copy.deepcopy(pilot["raw"])
    _turn(bad, ack_ref)["text"] += " " + sentence
    here = check_conversation(corpus, CONV, pilot["plan"], pilot["contrast"], bad)
    assert _said(ack_problems({CONV: here, other: there}),
                 f"{CONV} hard_negative s01: ack {ack_ref} repeats a sentence of {other} "
                 f"reversal {reversal['slot']}")


def test_a_slot_is_closed_only_under_its_planned_label(pilot):
    """Contrast sets: the plan gives each slot its label; a reversal written into a hard-negative
    slot (or the other way round) is refused, so a target keeps the label the plan drew."""
    def swap(r):
        r["hard_negative"].append(r["reversal"].pop(0))

    assert _said(pilot["problems_after"](swap), "the plan makes this slot a reversal")


def test_every_target_closes_one_reversal_and_one_hard_negative_in_the_plan(pilot):
    """Across conversations (which no single file can show): each bank target is one reversal,
    one hard negative and one distractor line, in three conversations; each draft wording is
    used contradicting and under its pair's label. The build refuses a plan that breaks it."""
    plan, contrast = pilot["plan"], pilot["contrast"]
    assert plan_problems(plan, contrast) == []
    bad = copy.deepcopy(plan)
    arc = next(a for a in bad["conversations"][CONV]["arc"] if a["label"] == "hard_negative")
    arc["label"] = "reversal"
    assert _said(plan_problems(bad, contrast), f"target {arc['member']} is used")
    # swap two distractor lines so that one target is an arc and a distractor in one
    # conversation (every count stays right)
    bad = copy.deepcopy(plan)
    member = bad["conversations"][CONV]["arc"][0]["member"]
    there = next(d for c in CONVERSATIONS for d in bad["conversations"][c]["distractor"]
                 if d["member"] == member)
    here = bad["conversations"][CONV]["distractor"][0]
    here["member"], there["member"] = there["member"], here["member"]
    assert _said(plan_problems(bad, contrast),
                 f"target {member} is used twice in one conversation")
    bad = copy.deepcopy(plan)
    draft = next(d for d in bad["conversations"][CONV]["draft"] if d["label"] == "aligned")
    draft["label"] = "contradicting"
    assert _said(plan_problems(bad, contrast), f"wording {draft['member']} is used")


def test_the_build_refuses_a_plan_that_breaks_a_contrast_set(pilot, monkeypatch):
    from conftest import shared_file

    from twistbench.itemgen import locomo2

    bad = copy.deepcopy(pilot["plan"])
    draft = next(d for d in bad["conversations"][CONV]["draft"] if d["label"] == "aligned")
    draft["label"] = "contradicting"
    monkeypatch.setattr(locomo2, "load_plan", lambda: bad)
    with pytest.raises(InputError, match=r"plan\.toml.*wording"):
        locomo2.build_locomo2(shared_file("locomo", "locomo10.json"), conversations=[CONV])


def test_target_forms_are_the_same_under_both_labels(pilot):
    """Hard negatives include statements and contradictions include questions: every target
    closes one arc of each label (previous tests), so the forms under the two labels are the same
    multiset, and it holds both forms."""
    forms = {t["id"]: t["form"] for t in pilot["contrast"]["target"]}
    by_label: dict[str, list[str]] = {"reversal": [], "hard_negative": []}
    for c in pilot["plan"]["conversations"].values():
        for a in c["arc"]:
            by_label[a["label"]].append(forms[a["member"]])
    assert sorted(by_label["reversal"]) == sorted(by_label["hard_negative"])
    assert "question" in by_label["reversal"] and "statement" in by_label["hard_negative"]


def test_every_original_turn_sharing_a_slot_value_must_be_recorded_as_read(pilot):
    """Anchors never contradict the speaker's original turns: the machine lists the speaker's
    original turns that share a slot value or check word, and the arc must record them in
    checked_originals (whether one contradicts the anchor is the reader's call)."""
    raw = pilot["raw"]
    arc = next(a for t in ("reversal", "hard_negative") for a in raw[t]
               if a.get("checked_originals"))
    dropped = arc["checked_originals"][0]

    def forget(r):
        _arc(r, arc["slot"])["checked_originals"] = arc["checked_originals"][1:]

    assert _said(pilot["problems_after"](forget), f"checked_originals: ['{dropped}'")


def test_observations_on_an_arcs_subject_are_listed_for_reading(pilot, corpus):
    """LoCoMo's observations of the speaker are listed when they share the arc's words and cite
    turns checked_originals does not hold: a note to read (locomo_read --check prints it), not a
    refusal, since only reading tells whether the observation says something the anchor
    contradicts."""
    placed, contrast = pilot["placed"], pilot["contrast"]
    arc = _arc(pilot["raw"], "s09")  # Melanie: "I'd never take a break from baking"
    planted = ("Melanie plans to give up baking for good.", ["D1:1"])
    observed = dataclasses.replace(placed, observations={
        **placed.observations, arc["speaker"]: [*placed.observations[arc["speaker"]], planted]})
    notes = unread_observations(observed, contrast)
    assert _said(notes, "hard_negative s09: Melanie's observation 'Melanie plans to give up "
                        "baking for good.' cites ['D1:1'], not in checked_originals")
    read = copy.deepcopy(pilot["raw"])
    _arc(read, "s09")["checked_originals"] += ["D1:1"]
    again = check_conversation(corpus, CONV, pilot["plan"], contrast, read)
    again.observations = observed.observations
    assert again.problems == []  # listing an extra turn read is no problem
    assert not _said(unread_observations(again, contrast), "cites ['D1:1']")


# --- Track B ----------------------------------------------------------------------------------


def test_drafts_are_dated_after_every_session(pilot):
    """Every draft carries the plan's draft_date; a date that is not after the last session (so
    a later turn could overturn an aligned draft, or evidence could postdate it) is refused."""
    last = max(pilot["placed"].session_dates.values()).date()

    def early(c):
        c["draft_date"] = last.isoformat()

    problems = pilot["problems_after"](mutate_plan=early)
    assert _said(problems, f"draft_date {last} is not after the last session")
    assert _said(problems, "is not before the draft date")


def test_a_draft_names_no_month(pilot):
    """No draft depends on a month already past: neither a slot value nor the wording names a
    month."""
    raw = pilot["raw"]
    draft = next(d for d in raw["draft"] if "day" in d.get("values", {}))

    def month_value(r):
        next(d for d in r["draft"] if d["member"] == draft["member"])["values"]["day"] = "March 3"

    assert _said(pilot["problems_after"](month_value), "{day} names a month")

    def month_wording(c):
        next(w for w in c["wording"] if w["id"] == draft["member"])["text"] += " See you in June!"

    assert _said(pilot["problems_after"](mutate_contrast=month_wording),
                 f"draft {draft['member']}: the draft names June")
    assert MONTHS[5] == "June"


def test_a_draft_follows_its_planned_label(pilot):
    """Every draft wording occurs under more than one label: the plan draws the labels (see the
    plan test above) and a file may not give a draft another."""
    def flip(r):
        r["draft"][0]["label"] = "hard_negative" if r["draft"][0]["label"] == "aligned" \
            else "aligned"

    assert _said(pilot["problems_after"](flip), "is not in the plan")


def test_a_draft_needs_evidence_and_a_rationale(pilot):
    """An aligned draft must not be overturned later in the record: the machine holds the draft
    to its evidence and a written rationale, which the reviewer reads against the whole record."""
    member = pilot["raw"]["draft"][0]["member"]

    def bare(r):
        r["draft"][0]["evidence"] = []
        r["draft"][0]["rationale"] = " "

    problems = pilot["problems_after"](bare)
    assert _said(problems, f"draft {member}: no evidence")
    assert _said(problems, f"draft {member}: no rationale")


# --- Track C ----------------------------------------------------------------------------------


def test_a_stated_date_before_the_day_it_is_said_is_refused(pilot):
    raw = pilot["raw"]
    chain = raw["chain"][0]
    ref = chain["states"][0]["turns"][0]
    said = pilot["placed"].session_dates[pilot["placed"].by_ref[ref].session]
    before = said - timedelta(days=20)

    def backdate(r):
        _turn(r, ref)["text"] += f" It started on {MONTHS[before.month - 1]} {before.day}."

    assert _said(pilot["problems_after"](backdate),
                 f"{ref} states {before.date()}, before the day it is said")


@pytest.mark.parametrize("kind", ["current", "post_resolution"])
def test_a_coexisting_chain_asks_for_both_values(pilot, kind):
    chain = next(c for c in pilot["raw"]["chain"] if c["family"] == "coexisting")
    name = chain["speaker"].split()[0]

    def one_value(r):
        next(c for c in r["chain"] if c["id"] == chain["id"])["queries"][kind] = \
            f"What is {name} doing these days?"

    assert _said(pilot["problems_after"](one_value),
                 f"chain {chain['id']}: a coexisting chain's {kind} query asks for both values")


def test_update_chains_carry_later_mentions_after_their_last_state(pilot):
    """Recency must not answer: at least four of six update chains have later mentions (of the
    old value, or a retracted update), each after the last state."""
    def no_distractors(r):
        for c in r["chain"]:
            c["later_mentions"] = []

    assert _said(pilot["problems_after"](no_distractors),
                 "update chains have later mentions (at least 4 of 6)")
    chain = next(c for c in pilot["raw"]["chain"] if c["family"] != "coexisting")

    def too_early(r):
        c = next(c for c in r["chain"] if c["id"] == chain["id"])
        c["later_mentions"] = [chain["states"][0]["turns"][0]]

    assert _said(pilot["problems_after"](too_early),
                 f"chain {chain['id']}: later_mentions must come after the last state")


def test_chain_states_are_in_order_and_say_their_value(pilot):
    """History gold is every state in order: states out of order, or a turn that does not say
    its state's value, are refused."""
    chain = next(c for c in pilot["raw"]["chain"] if c["family"] == "one_update")

    def swap(r):
        c = next(c for c in r["chain"] if c["id"] == chain["id"])
        c["states"].reverse()

    assert _said(pilot["problems_after"](swap), "states must be in chronological order")

    def wrong_value(r):
        next(c for c in r["chain"] if c["id"] == chain["id"])["states"][0]["value"] = "Fridays"

    assert _said(pilot["problems_after"](wrong_value), "does not say 'Fridays'")


# --- Track D ----------------------------------------------------------------------------------


@pytest.mark.parametrize("probe", ["direct", "indirect"])
def test_a_probe_names_the_plants_owner_or_speaker(pilot, probe):
    plant = pilot["raw"]["pii"][0]

    def anonymous(r):
        r["pii"][0]["probes"][probe] = "What number did the friend give?"

    assert _said(pilot["problems_after"](anonymous),
                 f"pii {plant['id']}: the {probe} probe names neither the owner nor the speaker")


def test_business_contacts_are_recall_controls_with_fictional_values(pilot):
    """The business-contact policy as the machine sees it: the plan's control kinds are all
    there, each control's turn holds every expected form, plants' phones and e-mails are
    fictional. (Whether a detail was given for business use is the reader's call.)"""
    raw = pilot["raw"]

    def drop_control(r):
        r["control"].pop()

    assert _said(pilot["problems_after"](drop_control), "control: kinds")

    def wrong_expected(r):
        r["control"][0]["expected"] = [*r["control"][0]["expected"], "555-0199"]

    assert _said(pilot["problems_after"](wrong_expected),
                 f"control {raw['control'][0]['id']}: the turn does not hold the expected form")
    phone = next(x for x in raw["pii"] if x["kind"] == "phone")

    def real_phone(r):
        x = next(x for x in r["pii"] if x["id"] == phone["id"])
        x["value"] = "555-2368"
        for ref in x["turns"]:
            _turn(r, ref)["text"] = _turn(r, ref)["text"].replace(phone["value"], "555-2368")

    assert _said(pilot["problems_after"](real_phone), "phones are fictional 555-01xx")


def test_plants_include_forms_no_pattern_finds(pilot):
    """One plant of each form; a spelled plant never holds its value in digits, a split plant
    never holds it in one turn, a sensitive plant is a detail of kind other."""
    raw = pilot["raw"]
    spelled = next(x for x in raw["pii"] if x["form"] == "spelled")
    split = next(x for x in raw["pii"] if x["form"] == "split")
    sensitive = next(x for x in raw["pii"] if x["form"] == "sensitive")

    def all_pattern(r):
        for x in r["pii"]:
            x["form"] = "pattern"

    assert _said(pilot["problems_after"](all_pattern), "pii: forms")

    def digits(r):
        _turn(r, spelled["turns"][0])["text"] += f" That's {spelled['value']}."

    assert _said(pilot["problems_after"](digits),
                 f"pii {spelled['id']}: a spelled plant must not hold the value in digits")

    def whole(r):
        _turn(r, split["turns"][0])["text"] += f" It's {split['value']}."

    assert _said(pilot["problems_after"](whole),
                 f"pii {split['id']}: one turn alone holds the whole value")

    def not_other(r):
        next(x for x in r["pii"] if x["id"] == sensitive["id"])["kind"] = "address"

    assert _said(pilot["problems_after"](not_other),
                 f"pii {sensitive['id']}: a sensitive plant is kind other")


# --- injection --------------------------------------------------------------------------------


def test_an_exchange_never_ends_on_a_question(pilot):
    """Never between a question and its answer: the original turn before an exchange asks
    nothing (test_locomo2.py::test_checker_catches_planted_violations), and neither does the
    exchange's last turn, in a session or at the end of an appended session."""
    raw = pilot["raw"]
    inside = next(i for i in raw["insert"] if "after" in i)
    appended = [i for i in raw["insert"] if "session" in i]

    def ask(r):
        _insert(r, inside["id"] + ".1")["turns"][-1]["text"] += " What do you think?"
        last = [i for i in r["insert"] if i.get("session") == appended[-1]["session"]][-1]
        last["turns"][-1]["text"] += " What do you think?"

    problems = pilot["problems_after"](ask)
    assert _said(problems, f"insert {inside['id']}: the last turn")
    assert _said(problems, f"appended session {appended[-1]['session']}: its last turn")


def test_an_exchange_never_sits_inside_a_qa_evidence_span(pilot, corpus):
    raw = pilot["raw"]
    conv = corpus.conversation(CONV)
    used = {i["after"] for i in raw["insert"] if "after" in i}
    sessions = dict(conv.sessions())
    s, k = next((s, k) for s, ks in sorted(qa_spans(corpus, conv).items()) for k in sorted(ks)
                if sessions[s][k].id not in used and "?" not in sessions[s][k].text)
    inside = sessions[s][k].id

    def move(r):
        next(i for i in r["insert"] if "after" in i)["after"] = inside

    assert _said(pilot["problems_after"](move),
                 f"{inside} is inside the evidence span of a LoCoMo QA item")


def test_speakers_alternate(pilot):
    raw = pilot["raw"]
    inside = next(i for i in raw["insert"] if "after" in i and len(i["turns"]) >= 2)
    appended = next(i for i in raw["insert"] if "session" in i and len(i["turns"]) >= 2)

    def same(r):
        for ins in (_insert(r, inside["id"] + ".1"), _insert(r, appended["id"] + ".1")):
            ins["turns"][1]["speaker"] = ins["turns"][0]["speaker"]

    problems = pilot["problems_after"](same)
    assert _said(problems, f"insert {inside['id']}: {inside['id']}.1 and {inside['id']}.2 are both")
    assert _said(problems, f"{appended['id']}.2 are both") and _said(problems, "(turns alternate)")


def test_a_turn_has_at_most_90_words(pilot):
    ref = pilot["raw"]["insert"][0]["id"] + ".1"

    def long(r):
        _turn(r, ref)["text"] += " and then" * 50

    assert _said(pilot["problems_after"](long), "words (at most 90)")


def test_appended_sessions_hold_at_most_their_share(pilot):
    """At most 35% of the injected turns in appended sessions."""
    last = max(a["session"] for a in pilot["plan"]["conversations"][CONV]["appended"])

    def append_all(r):
        for ins in r["insert"]:
            if "after" in ins:
                del ins["after"]
                ins["session"] = last

    assert _said(pilot["problems_after"](append_all), "appended sessions hold 100% of your turns")


def test_at_most_their_share_of_exchanges_close_a_session(pilot, corpus):
    """At most 40% of the in-session exchanges sit after the last turn of a session."""
    closing = [evs[-1].id for _, evs in corpus.conversation(CONV).sessions()]

    def close_sessions(r):
        inside = [i for i in r["insert"] if "after" in i]
        for ins, after in zip(inside, closing, strict=False):
            ins["after"] = after
        for ins in inside[len(closing):]:
            r["insert"].remove(ins)

    assert _said(pilot["problems_after"](close_sessions),
                 "100% of your in-session exchanges close their session")


# --- surface ----------------------------------------------------------------------------------


def test_exact_duplicate_injected_turns_stay_at_most_five_percent(pilot, corpus):
    placed = pilot["placed"]
    assert duplicate_problems({CONV: placed}) == []
    chat = [i for i in pilot["raw"]["insert"] if "after" in i]
    n = int(MAX_DUPLICATE_SHARE * sum(t.injected and not t.crisis for t in placed.turns())) + 2

    def repeat(r):
        for ins in [i for i in r["insert"] if "after" in i][:n]:
            ins["turns"][-1] = {"speaker": ins["turns"][-1]["speaker"],
                                "text": "That's awesome, thanks for sharing!"}

    assert len(chat) >= n
    bad = copy.deepcopy(pilot["raw"])
    repeat(bad)
    again = check_conversation(corpus, CONV, pilot["plan"], pilot["contrast"], bad)
    assert _said(duplicate_problems({CONV: again}), f"{n} of ")
    assert _said(duplicate_problems({CONV: again}), "repeat another turn word for word")


def test_target_text_is_the_bank_line_with_pool_values(pilot):
    """Slot values come from one pool for both labels, and the target is the bank line filled
    with them (test_locomo2.py::test_checker_catches_planted_violations plants a value from no
    pool)."""
    raw = pilot["raw"]
    arc = raw["hard_negative"][0]
    slot = next(s for s in pilot["plan"]["conversations"][CONV]["arc"] if s["slot"] == arc["slot"])
    member = next(t for t in pilot["contrast"]["target"] if t["id"] == slot["member"])
    assert strip_image(pilot["placed"].by_ref[arc["target"]].text) == \
        fill(member["text"], arc["values"])
    pool_slot = next(k for k in arc["values"] if k != "name")

    def off_pool(r):
        _arc(r, arc["slot"])["values"][pool_slot] = "zebra"

    problems = pilot["problems_after"](off_pool)
    assert _said(problems, f"{{{pool_slot}}} = 'zebra' is not in the pool")
    assert _said(problems, "target text differs")


def test_the_readers_check_prints_problems_and_observations_to_read(pilot, capsys):
    from conftest import shared_file

    from twistbench.itemgen.locomo_read import main

    rc = main([CONV, "--check", "--locomo", str(shared_file("locomo", "locomo10.json"))])
    out = capsys.readouterr().out
    assert rc == 0 and "0 problem(s)" in out
    notes = unread_observations(pilot["placed"], pilot["contrast"])
    assert [line for line in out.splitlines() if line.startswith("to read: ")] == \
        [f"to read: {n}" for n in notes]
