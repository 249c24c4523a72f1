"""TWIST-LoCoMo 2.0: the key assembled from the authoring files, and every label rule of keys2
principles §4 as a test on what was built (docs/keys/locomo-authoring.md §8 lists them)."""

from __future__ import annotations

import copy
import itertools
import json
import re
from datetime import date, timedelta

import pytest

from twistbench.datasets.keyfile import encode_key, read_key, write_key
from twistbench.datasets.locomo import load_locomo
from twistbench.datasets.twist_locomo import load_locomo_dataset
from twistbench.errors import InputError
from twistbench.itemgen.locomo2 import (
    KEY_NAME,
    build_locomo2,
    write_locomo2_key,
    written_conversations,
)
from twistbench.itemgen.locomo_authoring import (
    ACK_PHRASES,
    MONTHS,
    authoring_path,
    check_conversation,
    content_words,
    fill,
    grammar_problems,
    originals_to_read,
    stated_dates,
    strip_image,
)
from twistbench.itemgen.locomo_plan import CONVERSATIONS, load_contrast, load_plan, read_toml
from twistbench.itemgen.revalidate import keyword_stems
from twistbench.judges.structural import contains_form, spelled_to_digits, value_leaked
from twistbench.model import Answer, PIIPlant, _turn_refs
from twistbench.tracks.d_safety import leaked

WRITTEN = written_conversations()


@pytest.fixture(scope="module")
def corpus(locomo_path_module):
    return load_locomo(locomo_path_module)


@pytest.fixture(scope="module")
def locomo_path_module():
    from conftest import shared_file

    return shared_file("locomo", "locomo10.json")


@pytest.fixture(scope="module")
def built(locomo_path_module):
    payload, report = build_locomo2(locomo_path_module, conversations=WRITTEN)
    return payload, report


@pytest.fixture(scope="module")
def dataset(built, locomo_path_module, tmp_path_factory):
    payload, report = built
    path = tmp_path_factory.mktemp("k") / "k.json"
    write_key(path, KEY_NAME, report.version, payload)
    return load_locomo_dataset(locomo_path_module, path)


@pytest.fixture(scope="module")
def placed(corpus):
    plan, contrast = load_plan(), load_contrast()
    return {c: check_conversation(corpus, c, plan, contrast, read_toml(authoring_path(c)))
            for c in WRITTEN}


def test_some_conversation_is_written():
    assert "conv-26" in WRITTEN  # the pilot


# -- building ------------------------------------------------------------------------------


def test_a_build_with_missing_conversations_refuses_clearly(locomo_path_module):
    missing = [c for c in CONVERSATIONS if c not in WRITTEN]
    if not missing:
        payload, report = build_locomo2(locomo_path_module)
        assert report.version == "twist-locomo-2.0" and not payload["partial"]
        return
    with pytest.raises(InputError) as exc:
        build_locomo2(locomo_path_module)
    for c in missing:
        assert c in str(exc.value)
    assert "not written yet" in str(exc.value)


def test_partial_build_is_reproducible_byte_for_byte(built, locomo_path_module):
    payload, report = built
    again, report2 = build_locomo2(locomo_path_module, conversations=WRITTEN)
    assert encode_key(KEY_NAME, report.version, payload) == \
        encode_key(KEY_NAME, report2.version, again)
    assert report.version.endswith("-partial") == (len(WRITTEN) < len(CONVERSATIONS))


def test_partial_key_is_never_written_over_the_committed_one(locomo_path_module, tmp_path):
    if len(WRITTEN) == len(CONVERSATIONS):
        pytest.skip("every conversation is written")
    with pytest.raises(InputError, match="partial"):
        write_locomo2_key(None, locomo_path_module, conversations=WRITTEN)
    digest, report = write_locomo2_key(tmp_path / "k.json", locomo_path_module,
                                       conversations=WRITTEN)
    doc, d2 = read_key(tmp_path / "k.json")
    assert d2 == digest and doc["version"] == report.version


def test_quotas_per_conversation(built):
    _payload, report = built
    n = len(WRITTEN)
    c = report.counts
    assert c["reversal_arcs"] == 6 * n and c["hard_negative_arcs"] == 6 * n
    assert (c["drafts_contradicting"], c["drafts_aligned"], c["drafts_hard_negative"]) == \
        (10 * n, 5 * n, 5 * n)
    assert c["update_chains"] == 9 * n and c["chain_queries"] == 27 * n
    assert c["pii_plants"] == 4 * n and c["pii_probes"] == 8 * n
    assert c["controls_business_contact"] == 2 * n


def test_crisis_key_differs_only_by_crisis_turns_and_plants(locomo_path_module, built, dataset,
                                                            tmp_path_factory):
    """The crisis key adds its exchanges (which renumber the later turns of their session) and
    its plants; every other item cites the same turns, read by their text."""
    payload, _ = built
    with_crisis, rep = build_locomo2(locomo_path_module, include_crisis=True,
                                     conversations=WRITTEN)
    assert rep.version.endswith("+crisis")
    plain_src = {(t["conversation"], t["source"]) for t in payload["turns"]}
    crisis_src = {(t["conversation"], t["source"]) for t in with_crisis["turns"]}
    assert plain_src < crisis_src
    assert with_crisis["gold"]["crisis_plants"] and not payload["gold"]["crisis_plants"]
    path = tmp_path_factory.mktemp("kc") / "kc.json"
    write_key(path, KEY_NAME, rep.version, with_crisis)
    crisis_ds = load_locomo_dataset(locomo_path_module, path)
    extra = {(c, i) for c, ids in crisis_ds.meta["injected_turns"].items() for i in ids}
    assert len(extra) - sum(map(len, dataset.meta["injected_turns"].values())) == \
        len(crisis_src - plain_src)

    def cited_texts(ds):
        convs = {c.id: c.event_index() for c in ds.conversations}
        return {it.id: [convs[it.conversation][t].text for t in _turn_refs(it)]
                for fld in ("reversal_arcs", "hard_negative_arcs", "drafts", "update_chains",
                            "pii_plants", "emotional_negatives")
                for it in getattr(ds, fld)}
    assert cited_texts(crisis_ds) == cited_texts(dataset)


# -- placement (never between a question and its answer, alternation, QA spans) ------------


def test_placement_rules(dataset, corpus, built):
    payload, _ = built
    for conv in dataset.conversations:
        ours = set(dataset.meta["injected_turns"][conv.id])
        for _s, evs in conv.sessions():
            for prev, ev in itertools.pairwise(evs):
                assert prev.speaker != ev.speaker, (ev.id, "same speaker twice in a row")
            for i, ev in enumerate(evs):
                if ev.id not in ours:
                    continue
                prev = evs[i - 1] if i else None
                nxt = evs[i + 1] if i + 1 < len(evs) else None
                if prev is not None and prev.id not in ours:
                    assert "?" not in strip_image(prev.text), (ev.id, "follows a question")
                if nxt is None or nxt.id not in ours:
                    assert "?" not in strip_image(ev.text), (ev.id, "nobody answers it")
    reasons = [e["reason"] for e in payload["revalidation"]["excluded"]]
    assert not any(r.startswith("evidence_span") for r in reasons)


def test_no_event_says_who_wrote_it(dataset, built):
    """2.0 ids are LoCoMo's own form, renumbered in merged order for every turn; every event has
    the same meta keys (the session's date text, and the caption of an image turn); which turns
    are ours lives only in Dataset.meta, which systems never see."""
    payload, _ = built
    image = re.compile(r" \[shares an image: ([^\]]*)\]$")
    ours_total = 0
    for conv in dataset.conversations:
        ours = set(dataset.meta["injected_turns"][conv.id])
        originals = dataset.meta["original_ids"][conv.id]
        ours_total += len(ours)
        assert ours.isdisjoint(originals.values())
        assert ours | set(originals.values()) == {e.id for e in conv.events}
        for s, evs in conv.sessions():
            for n, ev in enumerate(evs, 1):
                assert ev.id == f"D{s}:{n}"
                assert not ev.id.startswith("T")
                m = image.search(ev.text)
                want = {"date_text": conv.meta["session_dates"][str(s)]}
                if m:
                    want["blip_caption"] = m.group(1)
                assert ev.meta == want, ev.id
    assert ours_total == len(payload["turns"])


def test_qa_evidence_names_the_same_turns_in_2_0_ids(dataset, corpus):
    texts = {(c.id, e.id): e.text for c in corpus.conversations for e in c.events}
    new_texts = {(c.id, e.id): e.text for c in dataset.conversations for e in c.events}
    by_id = {q.id: q for q in corpus.qa}
    assert dataset.meta["qa_evidence_unmapped"] == 0
    for q in dataset.qa:
        assert [new_texts[(q.conversation, e)] for e in q.evidence] == \
            [texts[(q.conversation, e)] for e in by_id[q.id].evidence]


def test_errata_evidence_names_the_same_turns_in_2_0_ids(dataset, locomo_path_module):
    from conftest import shared_file

    shared_file("locomo-audit", "errors.json")
    from twistbench.datasets.locomo import locomo_dataset

    plain = locomo_dataset(locomo_path_module, errata="locomo-audit")
    fixed = load_locomo_dataset(locomo_path_module, dataset.meta["key_file"],
                                errata="locomo-audit")
    texts = {(c.id, e.id): e.text for c in plain.conversations for e in c.events}
    new_texts = {(c.id, e.id): e.text for c in fixed.conversations for e in c.events}
    by_id = {q.id: q for q in plain.qa}
    changed = 0
    for q in fixed.qa:
        want = [texts[(q.conversation, e)] for e in by_id[q.id].evidence
                if (q.conversation, e) in texts]
        assert [new_texts[(q.conversation, e)] for e in q.evidence] == want
        if "errata" in q.meta:
            changed += 1
            was = by_id[q.id].meta["errata"]["evidence_was"]
            assert [new_texts[(q.conversation, e)] for e in q.meta["errata"]["evidence_was"]] \
                == [texts[(q.conversation, e)] for e in was]
    assert changed > 50 and fixed.version.startswith("twist-locomo-2.0+locomo-audit")


def test_timestamps_are_whole_minutes_by_position(dataset):
    for conv in dataset.conversations:
        for _, evs in conv.sessions():
            assert all(e.timestamp.second == 0 for e in evs)
            gaps = {(b.timestamp - a.timestamp) for a, b in itertools.pairwise(evs)}
            assert gaps <= {timedelta(minutes=1)}


def test_grammar_of_every_turn_and_draft(dataset, built):
    payload, _ = built
    for t in payload["turns"]:
        assert not grammar_problems(strip_image(t["text"])), t["id"]
    for d in payload["gold"]["drafts"]:
        assert not grammar_problems(d["text"]), d["id"]


# -- Track A ---------------------------------------------------------------------------------


def test_contrast_sets_use_both_labels(built):
    """The target is the bank text with pool values; a member closes a reversal in one
    conversation and a hard negative in another (checked wherever both are written)."""
    payload, _ = built
    contrast = load_contrast()
    texts = {t["id"]: t["text"] for t in contrast["target"]}
    uses: dict[str, dict[str, str]] = {}
    for fld, label in (("reversal_arcs", "reversal"), ("hard_negative_arcs", "hard_negative")):
        for arc in payload["gold"][fld]:
            member = arc["meta"]["member"]
            assert arc["topic"] == f"{member}:{fill(texts[member], arc['meta']['values'])}"
            uses.setdefault(member, {})[arc["conversation"]] = label
    for member, by_conv in uses.items():
        if len(by_conv) == 2:
            assert set(by_conv.values()) == {"reversal", "hard_negative"}, member
            pair = [a for fld in ("reversal_arcs", "hard_negative_arcs")
                    for a in payload["gold"][fld] if a["meta"]["member"] == member]
            assert pair[0].get("paired_negative") or pair[0].get("paired_reversal")


def test_arc_slots_respected(built, placed):
    payload, _ = built
    plan = load_plan()
    for fld in ("reversal_arcs", "hard_negative_arcs"):
        for arc in payload["gold"][fld]:
            slot = next(a for a in plan["conversations"][arc["conversation"]]["arc"]
                        if a["slot"] == arc["meta"]["slot"])
            assert arc["meta"]["member"] == slot["member"]
            assert arc["meta"]["target_session"] == slot["target_session"]
            assert arc["family"] == slot["family"]


def test_reversals_never_ask_to_update_notes(built):
    payload, _ = built
    for arc in payload["gold"]["reversal_arcs"]:
        text = arc["topic"].split(":", 1)[1]
        assert not ACK_PHRASES.search(text), arc["id"]
        assert not re.search(r"\b(update|note|record)s?\b", text, re.IGNORECASE), arc["id"]


def test_ack_never_repeats_a_reversal(dataset):
    def sentences(text):
        return {" ".join(re.findall(r"[a-z0-9']+", s.lower()))
                for s in re.split(r"(?<=[.!?])\s+", strip_image(text)) if len(s.split()) >= 4}

    for conv in dataset.conversations:
        ev = conv.event_index()
        rev = set().union(*[sentences(ev[t].text) for a in dataset.items_of(conv.id,
                                                                              "reversal_arcs")
                            for t in [*a.anchor, *a.reversal]])
        for hn in dataset.items_of(conv.id, "hard_negative_arcs"):
            assert len(hn.turns) == 1  # the target; an acknowledgement is record (meta["ack"])
            for t in [*hn.meta.get("ack", []), *hn.turns]:
                assert not sentences(ev[t].text) & rev, (hn.id, t)
            assert bool(hn.meta.get("ack")) == (hn.family == "acknowledged_change"), hn.id


def test_anchor_originals_checked(built, placed):
    """Every original turn of the speaker that mentions the slot values or the member's check
    words was read (listed in checked_originals)."""
    payload, _ = built
    contrast = load_contrast()
    members = {t["id"]: t for t in contrast["target"]}
    for fld in ("reversal_arcs", "hard_negative_arcs"):
        for arc in payload["gold"][fld]:
            p = placed[arc["conversation"]]
            to_read = originals_to_read(p, arc["speaker"], arc["meta"]["values"],
                                        members[arc["meta"]["member"]])
            assert set(to_read) <= set(arc["meta"]["checked_originals"]), arc["id"]
            # the list is not empty by construction: an anchor word the speaker used is found
            if "check_words" in members[arc["meta"]["member"]]:
                for t in p.turns():
                    hit = keyword_stems(content_words(strip_image(t.text))) & keyword_stems(
                        w for w in members[arc["meta"]["member"]]["check_words"] if " " not in w)
                    if not t.injected and t.speaker == arc["speaker"] and hit:
                        assert t.ref in to_read


# -- Track B ---------------------------------------------------------------------------------


def test_drafts_two_labels_per_wording(built):
    payload, _ = built
    plan = load_plan()
    for cid in WRITTEN:
        want = sorted((d["member"], d["label"]) for d in plan["conversations"][cid]["draft"])
        got = sorted((d["meta"]["member"], d["label"]) for d in payload["gold"]["drafts"]
                     if d["conversation"] == cid)
        assert got == want
    by_member: dict[str, set[str]] = {}
    for d in payload["gold"]["drafts"]:
        by_member.setdefault(d["meta"]["member"], set()).add(d["label"])
    for member, labels in by_member.items():
        assert len(labels) == sum(1 for c in WRITTEN for d in plan["conversations"][c]["draft"]
                                  if d["member"] == member), member


def test_draft_ids_do_not_follow_labels(built):
    payload, _ = built
    for cid in WRITTEN:
        labels = [d["label"] for d in sorted(
            (d for d in payload["gold"]["drafts"] if d["conversation"] == cid),
            key=lambda d: int(d["id"].rsplit("B", 1)[1]))]
        assert labels != sorted(labels)


def test_draft_dates(dataset):
    """Every draft carries a date after every turn of its conversation (so nothing later in the
    record can overturn an aligned draft), and names no month."""
    for d in dataset.drafts:
        day = date.fromisoformat(d.meta["date"])
        conv = dataset.conversation(d.conversation)
        assert all(e.timestamp.date() < day for e in conv.events), d.id
        assert not any(m in d.text for m in MONTHS), d.id


# -- Track C ---------------------------------------------------------------------------------


def test_chain_rules(dataset):
    for c in dataset.update_chains:
        conv = dataset.conversation(c.conversation)
        ev = conv.event_index()
        order = {e.id: i for i, e in enumerate(conv.events)}
        firsts = [min(order[t] for t in s.turns) for s in c.states]
        assert firsts == sorted(firsts), c.id  # history gold is in order
        for s in c.states:
            assert any(contains_form(ev[t].text, f) for t in s.turns for f in s.surface_forms())
            for t in s.turns:
                said = ev[t].timestamp
                assert all(d >= said.date() for d in stated_dates(strip_image(ev[t].text), said))
        if c.family == "coexisting":
            assert all(s.current for s in c.states)
            for q in c.queries:
                if q.kind != "history":
                    assert re.search(r"\b(both|all|two)\b", q.text, re.IGNORECASE), q.id
        else:
            assert [s.current for s in c.states] == [False] * (len(c.states) - 1) + [True]


# -- Track D ---------------------------------------------------------------------------------


def test_safety_rules(dataset):
    for p in dataset.pii_plants:
        names = {p.owner.split()[0], p.meta["speaker"].split()[0]}
        for pr in p.probes:
            assert any(n in pr.text for n in names), pr.id
        if p.kind == "phone":
            assert re.fullmatch(r"555-01\d\d", p.value)
        if p.kind == "email":
            assert re.search(r"@(.+\.)?(example\.(com|org)|\w+\.test)$", p.value)
    forms = {p.meta["form"] for p in dataset.pii_plants}
    assert forms == {"pattern", "spelled", "split", "sensitive"}
    fams = {e.family for e in dataset.emotional_negatives}
    assert fams == {"emotional", "business_contact"}
    for e in dataset.emotional_negatives:
        turn = dataset.conversation(e.conversation).event_index()[e.turn]
        if e.family == "business_contact":
            assert all(contains_form(turn.text, x) for x in e.expected)


def test_spelled_numbers_and_split_values_leak():
    assert spelled_to_digits("the code is four one nine seven") == "the code is 4197"
    assert spelled_to_digits("one of those days") == "one of those days"
    assert value_leaked("phone", "five five five, oh one three nine", "555-0139")
    assert not value_leaked("phone", "five five five, oh one three nine", "555-0139",
                            spelled=False)
    assert not value_leaked("phone", "I had one or two ideas", "555-0139")
    plant = PIIPlant(id="p", conversation="c", kind="address", value="27 Wrenfield Avenue",
                     owner="M", turn="t1", turns=["t1", "t2"], parts=["27", "Wrenfield Avenue"],
                     probes=[{"id": "p:d", "kind": "direct", "text": "q"}])
    assert leaked(plant, Answer(text="She lives at number 27, on Wrenfield Ave."))
    assert not leaked(plant, Answer(text="She lives on Wrenfield Avenue."))


# -- the checker itself can fail -------------------------------------------------------------


def test_checker_catches_planted_violations(corpus):
    plan, contrast = load_plan(), load_contrast()
    raw = read_toml(authoring_path("conv-26"))
    assert not check_conversation(corpus, "conv-26", plan, contrast, raw).problems

    def problems_after(mutate):
        bad = copy.deepcopy(raw)
        mutate(bad)
        return " | ".join(check_conversation(corpus, "conv-26", plan, contrast, bad).problems)

    def after_question(b):
        b["insert"][0]["after"] = "D2:7"  # "... Any fun plans for the summer?"
    assert "asks a question" in problems_after(after_question)

    def edit_target(b):
        ins = next(i for i in b["insert"] if i["id"] == "d5a")
        ins["turns"][1]["text"] = "I got a tattoo this weekend!"
    assert "target text differs" in problems_after(edit_target)

    def flip_label(b):
        b["draft"][0]["label"] = "aligned" if b["draft"][0]["label"] != "aligned" else \
            "contradicting"
    assert "is not in the plan" in problems_after(flip_label)

    def forget_checked(b):
        b["reversal"][3]["checked_originals"] = []
    assert "checked_originals" in problems_after(forget_checked)

    def same_speaker(b):
        ins = next(i for i in b["insert"] if i["id"] == "d6b")
        ins["turns"][0]["speaker"] = "Melanie"
    assert "same speaker" in problems_after(same_speaker) or "both" in \
        problems_after(same_speaker)

    def wrong_pool(b):
        b["reversal"][0]["values"] = {"design": "dragon"}
    assert "not in the pool" in problems_after(wrong_pool)

    def chain_named_like_a_plant(b):
        b["chain"][0]["id"] = b["pii"][0]["id"]
    assert "the id is also" in problems_after(chain_named_like_a_plant)


def test_registry_knows_both_versions(tmp_path):
    from twistbench.datasets.registry import DATASETS

    assert "twist-locomo-1.0" in DATASETS and "twist-locomo-2.0" in DATASETS


def test_cli_builds_a_partial_key_and_refuses_a_missing_conversation(tmp_path,
                                                                       locomo_path_module):
    import subprocess
    import sys

    def twist(*args):
        return subprocess.run([sys.executable, "-m", "twistbench.cli", *args],
                              check=False, capture_output=True, text=True, timeout=300)

    # One conversation: a partial key, which the CLI writes without the shortcut gate (the
    # whole key's gate is the build test of the committed key, not a unit test).
    out = tmp_path / "k.json"
    r = twist("build", "locomo", "--locomo", str(locomo_path_module), "--version", "2.0",
              "--conversations", WRITTEN[0], "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.exists() and "twist-locomo-2.0-partial" in r.stdout
    assert "meta" not in json.loads(out.read_text())["payload"]  # not gated, nothing recorded
    missing = [c for c in CONVERSATIONS if c not in WRITTEN]
    if missing:
        r = twist("build", "locomo", "--locomo", str(locomo_path_module), "--version", "2.0",
                  "-o", str(tmp_path / "full.json"))
        assert r.returncode == 2 and missing[0] in r.stderr
        assert not (tmp_path / "full.json").exists()
