"""The 2.0 banks: provenance, unique ids, known slots; bad banks are refused; grammar checks."""

from __future__ import annotations

import pytest

from twistbench.errors import InputError
from twistbench.itemgen.cs2.banks import BACKGROUND_DIR, ITEM_DIR, load_background, load_banks
from twistbench.itemgen.cs2.text import (
    FillError,
    address,
    fill,
    grammar_problems,
    spell_digits,
    spell_email,
)


def test_every_bank_has_provenance_and_the_item_banks_load():
    banks = load_banks()
    assert len(banks.topics) == 50 and len(banks.scenarios) == 18 and len(banks.subjects) == 14
    assert len(banks.background) > 300
    for name, prov in banks.provenance.items():
        assert prov["drafted_by"] and prov["reviewed_by"] and prov["drafted_on"], name


def _copy_banks(tmp_path):
    items = tmp_path / "items"
    items.mkdir()
    for f in ITEM_DIR.glob("*.toml"):
        (items / f.name).write_text(f.read_text())
    return items


def test_a_bank_without_provenance_is_refused(tmp_path):
    items = _copy_banks(tmp_path)
    p = items / "track_b.toml"
    p.write_text(p.read_text().replace("[provenance]", "[notprovenance]"))
    with pytest.raises(InputError, match="provenance"):
        load_banks(items, background_dir=None)


def test_a_reused_line_id_is_refused(tmp_path):
    items = _copy_banks(tmp_path)
    p = items / "track_a.toml"
    p.write_text(p.read_text().replace('id = "cs.a.sso_scope.c2"', 'id = "cs.a.sso_scope.c1"'))
    with pytest.raises(InputError, match="cs.a.sso_scope.c1"):
        load_banks(items, background_dir=None)


def test_an_unknown_slot_is_refused(tmp_path):
    items = _copy_banks(tmp_path)
    p = items / "track_c.toml"
    p.write_text(p.read_text().replace("Please send {q} to {v}.", "Please send {q} to {whom}."))
    with pytest.raises(InputError, match="unknown slot"):
        load_banks(items, background_dir=None)


@pytest.mark.parametrize("old, new, match", [
    ('local = "security"\nside = "customer"\nprobed = false\n',
     'local = "security"\nside = "customer"\n', "a team's"),
    ('id = "cs.d.contact.it_colleague"\nkind = "colleague_email"\nowner = "colleague"\n',
     'id = "cs.d.contact.it_colleague"\nkind = "colleague_email"\n', "owner"),
    ('id = "cs.d.contact.my_desk"\nkind = "desk_phone"',
     'id = "cs.d.contact.my_desk"\nkind = "fax"', "unknown contact kind"),
])
def test_a_business_contact_must_say_whose_detail_it_is(tmp_path, old, new, match):
    """A team inbox is never probed (no person-neutral probe asks for it); a colleague's
    detail says so; every contact kind maps to a probe pool."""
    items = _copy_banks(tmp_path)
    p = items / "track_d.toml"
    assert old in p.read_text()
    p.write_text(p.read_text().replace(old, new))
    with pytest.raises(InputError, match=match):
        load_banks(items, background_dir=None)


def test_a_background_thread_with_a_bad_speaker_is_refused(tmp_path):
    (tmp_path / "x.toml").write_text(
        '[provenance]\ndrafted_by = "t"\n[[thread]]\nid = "t.1"\nchannels = ["slack"]\n'
        'turns = [{ speaker = "C9", text = "hi" }]\n')
    with pytest.raises(InputError, match="bad speaker"):
        load_background(tmp_path)
    assert len(load_background(BACKGROUND_DIR)) > 300


def test_fill_writes_possessives_articles_and_capitals():
    slots = {"company": "Fernhill Foods", "x": "expansion", "y": "renewal", "p": "8%",
             "f": "anomaly alerting"}
    assert fill("{company}'s team", slots) == "Fernhill Foods' team"
    assert fill("a {x} and a {y}; a {p} cut", slots) == "An expansion and a renewal; a 8% cut" \
        .replace("a 8%", "an 8%")
    assert fill("ok. {f} ships", slots) == "Ok. Anomaly alerting ships"
    with pytest.raises(FillError, match="nope"):
        fill("{nope}", slots, "line.x")


@pytest.mark.parametrize("bad, problem", [
    ("We want a expansion.", "'a expansion'"),
    ("Send it to the the team.", "doubled word"),
    ("Fernhill Foods's plan.", "'Fernhill Foods's'"),
    ("Done.. Thanks", "punctuation"),
    ("Hello {name}.", "unfilled slot"),
    ("Fine. then we go.", "lower-case"),
    ("An report is due.", "'an report'"),
])
def test_grammar_checks_catch_each_error(bad, problem):
    assert any(problem in p for p in grammar_problems(bad, ("Fernhill Foods",)))


def test_grammar_checks_pass_clean_text():
    for ok in ("An SLA report, a unit test, an hour, a UK entity. Four one five, five five five.",
               "Fernhill Foods' plan is ready...", "Is it an 8% cut?"):
        assert grammar_problems(ok, ("Fernhill Foods",)) == []


def test_spelled_numbers_and_addresses():
    assert spell_digits("4155550142", (3, 3, 4)) == \
        "four one five, five five five, zero one four two"
    assert spell_email("dana.ortiz7@homemail.example") == \
        "dana dot ortiz seven at homemail dot example"
    proper = frozenset({"Tableau"})
    assert address("We won't sign.", "Dana", "front", proper) == "Dana, we won't sign."
    assert address("Tableau stays.", "Dana", "at", proper) == "@Dana Tableau stays."
    assert address("I'll send it.", "Dana", "front", proper) == "Dana, I'll send it."
    assert address("Can you? Thanks.", "Dana", "end", proper) == "Can you? Thanks, Dana."
