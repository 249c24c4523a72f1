from datetime import datetime

import pytest

from twistbench.model import Event
from twistbench.retrieval.parser import (
    extract_facts,
    resolve_relative_dates,
    rewrite_first_person,
    split_sentences,
)

WHEN = datetime(2023, 5, 8, 13, 56)


def ev(text: str, speaker: str = "Caroline", id: str = "D1:3") -> Event:
    return Event(id=id, conversation="c1", session=2, timestamp=WHEN, speaker=speaker, text=text)


def test_sentence_split_respects_abbreviations_and_lines():
    text = "Dr. Smith called at 3 p.m. today. It went well! Did it?\nBest,\nSam"
    assert split_sentences(text) == ["Dr. Smith called at 3 p.m. today.", "It went well!",
                                     "Did it?", "Best,", "Sam"]


def test_first_person_rewrite_with_agreement():
    got = rewrite_first_person("I'm keen on counseling", "Caroline")
    assert got == "Caroline is keen on counseling"
    assert rewrite_first_person("I really think my plan works for me", "Jo") == \
        "Jo really thinks Jo's plan works for Jo"
    got = rewrite_first_person("I went home and I have a cat", "Jo")
    assert got == "Jo went home and Jo has a cat"
    assert rewrite_first_person("I’ve moved", "Jo") == "Jo has moved"


def test_relative_dates_become_absolute():
    assert resolve_relative_dates("I ran yesterday", WHEN) == "I ran on 7 May 2023"
    assert resolve_relative_dates("we met last year", WHEN) == "we met in 2022"
    assert resolve_relative_dates("due next month", WHEN) == "due in June 2023"
    when = datetime(2023, 1, 15)
    assert resolve_relative_dates("paid last month", when) == "paid in December 2022"


def test_facts_are_dated_attributed_and_linked():
    facts = extract_facts(ev("Hey Mel! I'm moving to Stockholm next year. Are you around?"))
    assert len(facts) == 1
    f = facts[0]
    assert f.text == "On 8 May 2023, Caroline is moving to Stockholm in 2024."
    assert (f.id, f.source, f.speaker, f.timestamp, f.session) == ("D1:3#f0", "D1:3", "Caroline",
                                                                   WHEN, 2)


def test_questions_and_filler_give_no_facts():
    assert extract_facts(ev("Wow, that's so cool! Thanks!")) == []
    assert extract_facts(ev("What kind of jobs are you thinking of?")) == []


def test_sentence_without_speaker_is_attributed():
    (f,) = extract_facts(ev("The transgender stories were so inspiring and moving."))
    assert f.text.startswith("On 8 May 2023, Caroline: The transgender stories")


TEXT = ("The support group made me feel accepted. I love painting, but my wife prefers pottery; "
        "we moved to Berlin last month and the rent is high. Our cat Max turned nine in March. "
        "The new job starts on Monday, and the commute is an hour each way. "
        "Finance approved the budget. Procurement signed the contract.")


@pytest.mark.parametrize("max_facts", [1, 2, 5, 8])
def test_max_facts_caps_and_density_grows(max_facts):
    facts = extract_facts(ev(TEXT), max_facts=max_facts)
    assert 1 <= len(facts) <= max_facts
    assert [f.id for f in facts] == [f"D1:3#f{i}" for i in range(len(facts))]
    assert len({f.text for f in facts}) == len(facts)


def test_density_sweep_is_monotone_and_one_picks_most_informative():
    n = [len(extract_facts(ev(TEXT), max_facts=m)) for m in (1, 5, 8)]
    assert n[0] == 1 and n[0] < n[1] <= n[2] and n[2] > 6
    (best,) = extract_facts(ev(TEXT), max_facts=1)
    assert "Berlin" in best.text or "wife" in best.text  # the densest sentence, not the first


def test_max_facts_must_be_positive():
    with pytest.raises(ValueError):
        extract_facts(ev(TEXT), max_facts=0)
