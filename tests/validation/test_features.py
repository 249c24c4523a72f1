"""What the baselines see: turn context, non-text features, lexicon skeletons, repetition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from twistbench.model import (
    Conversation,
    Dataset,
    Draft,
    Event,
    PIIPlant,
    Probe,
    QAItem,
    ReversalArc,
)
from twistbench.validation.features import (
    Lexicon,
    TurnIndex,
    duplicate_count,
    entity_count,
    injected_turns,
    item_turns,
    top_ngram,
)

T0 = datetime(2024, 5, 1, 10, tzinfo=UTC)


def ev(i: int, session: int, speaker: str, text: str, thread: str | None = None, **meta):
    return Event(id=f"t{i}", conversation="c", session=session,
                 timestamp=T0 + timedelta(days=session, minutes=i), speaker=speaker, text=text,
                 thread=thread, meta=meta)


@pytest.fixture
def ds() -> Dataset:
    events = [ev(0, 1, "Ann Lee", "Hello there.", "x"),
              ev(1, 1, "Bo Park", "Is the plan still on?", "x"),
              ev(2, 1, "Ann Lee", "Yes, with Acme Corp on 12 May.", "y", injected=True),
              ev(3, 2, "Bo Park", "Great!"),
              ev(4, 2, "Ann Lee", "Call me at 555-0123.")]
    conv = Conversation(id="c", speakers=["Ann Lee", "Bo Park"], events=events,
                        meta={"company": "Acme Corp"})
    return Dataset(
        name="t", version="t-1.0", key_sha256="k", conversations=[conv],
        reversal_arcs=[ReversalArc(id="r", conversation="c", speaker="Ann Lee", family="direct",
                                   anchor=["t0"], reversal=["t2"],
                                   meta={"slots": {"city": "Lisbon"}})],
        drafts=[Draft(id="d", conversation="c", label="aligned", speaker="Cy Dee",
                      text="Hi Cy, see you in Lisbon.", evidence=["t3"])],
        pii_plants=[PIIPlant(id="p", conversation="c", kind="phone", value="555-0123",
                             owner="Ann Lee", turn="t4",
                             probes=[Probe(id="q", kind="direct", text="Ann's phone?")])],
        qa=[QAItem(id="qa", conversation="c", question="?", category=4, evidence=["t1"])])


def test_turn_index_positions_sessions_threads_and_neighbours(ds):
    idx = TurnIndex(ds)
    i2 = idx.info("c", "t2")
    assert (i2.conv_pos, i2.session_rank, i2.session_pos, i2.session_len) == (2, 0, 2, 3)
    assert (i2.thread_pos, i2.thread_len) == (0, 1)
    assert idx.info("c", "t1").thread_pos == 1 and idx.info("c", "t1").thread_len == 2
    assert i2.prev.id == "t1" and i2.next.id == "t3" and i2.role == "speaker1"
    row = dict(zip(idx.feature_names(), idx.features([idx.info("c", "t1")])[0]))
    assert row["ends_with_question"] == 1 and row["questions"] == 1 and row["words"] == 5
    assert row["prev_same_speaker"] == 0 and row["next_same_speaker"] == 0
    assert row["role=speaker2"] == 1 and row["channel=chat"] == 1
    assert row["session_pos_frac"] == pytest.approx(0.5)


def test_entity_count_skips_sentence_openers_and_i():
    assert entity_count("Yes, with Acme Corp on 12 May.") == 3
    assert entity_count("I think so. Maybe Paris? Yes.") == 1
    assert entity_count("I'm in. Then Rome and Oslo.") == 2
    assert entity_count("") == 0


def test_item_turns_cover_every_track_but_not_qa_evidence(ds):
    assert item_turns(ds) == {("c", "t0"), ("c", "t2"), ("c", "t3"), ("c", "t4")}


def test_injected_turns_come_from_event_meta_not_ids(ds):
    assert injected_turns(ds) == {("c", "t2")}


def test_skeleton_normalises_names_values_numbers_and_capitals(ds):
    lex = Lexicon.of(ds)
    assert lex.skeleton("Hi Cy, see you in Lisbon.") == "hi <name>, see you in <value>."
    assert lex.skeleton("Ann's flight lands at 9:45 pm on Friday, $1,200 paid.") == \
        "<name> flight lands at <num> on <cap>, <num> paid."
    # a value that is also a phrase inside a longer name is matched longest-first
    assert lex.skeleton("Acme Corp and Acme") == "<name> and <name>"
    assert lex.skeleton("Call 555-0123 now") == "call <value> now"


def test_duplicates_and_top_ngrams():
    texts = ["Sounds good.", "Sounds  good.", "sounds good.", "Other text here"]
    assert duplicate_count(texts) == 2  # whitespace-normalised, case-sensitive
    gram, share = top_ngram(["a b c d", "a b c e", "x a b c"], 3)
    assert (gram, share) == ("a b c", 1.0)
    assert top_ngram(["short"], 3) == ("", 0.0)
