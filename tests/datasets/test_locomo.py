"""datasets/locomo.py: the LoCoMo loader on the real file and on small hand-made files."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from twistbench.datasets.locomo import (
    LOCOMO_RELEASE_SHA256,
    load_locomo,
    locomo_dataset,
    normalise_evidence,
    parse_session_date,
)
from twistbench.errors import InputError


def _sample(**over) -> dict:
    conv = {
        "speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo!"},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Look at this",
             "blip_caption": "a photo of a dog",
             "img_url": ["http://x"], "query": "dog photo"},
        ],
        "session_2_date_time": "9:00 am on 9 May, 2023",
        "session_2": [],
        "session_3_date_time": "9:00 am on 10 May, 2023",
    }
    qa = [
        {"question": "When?", "answer": 2022, "evidence": ["D1:1; D1:2"], "category": 2},
        {"question": "Who?", "adversarial_answer": "Bo", "evidence": ["D:1:2", "D9:9", "D"],
         "category": 5},
        {"question": "who?", "answer": "Ann", "evidence": [], "category": 4},
    ]
    s = {"sample_id": "conv-x", "conversation": conv, "qa": qa, "observation": {},
         "session_summary": {}}
    s.update(over)
    return s


def _write(tmp_path: Path, samples) -> Path:
    p = tmp_path / "locomo10.json"
    p.write_text(json.dumps(samples))
    return p


def test_parse_session_date():
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56)
    assert parse_session_date("12:19 am on 4 January, 2024") == datetime(2024, 1, 4, 0, 19)


def test_normalise_evidence_cases():
    known = {"D8:6", "D9:17", "D30:5", "D11:26"}
    assert normalise_evidence("D8:6; D9:17", known)[0] == ["D8:6", "D9:17"]
    assert normalise_evidence("D30:05", known)[0] == ["D30:5"]
    assert normalise_evidence("D:11:26", known)[0] == ["D11:26"]
    kept, notes = normalise_evidence("D", known)
    assert kept == [] and "not a turn id" in notes[0][1]
    kept, notes = normalise_evidence("D4:36", known)
    assert kept == [] and "names no turn" in notes[0][1]
    assert normalise_evidence("D9:17", known) == (["D9:17"], [])


def test_small_file_mapping_and_defects(tmp_path):
    corpus = load_locomo(_write(tmp_path, [_sample()]))
    assert not corpus.matches_release
    conv = corpus.conversations[0]
    assert conv.id == "conv-x" and conv.speakers == ["Ann", "Bo"]
    assert [e.id for e in conv.events] == ["D1:1", "D1:2"]
    img = conv.events[1]
    assert img.text == "Look at this [shares an image: a photo of a dog]"
    assert "dog photo" not in img.text and img.meta["query"] == "dog photo"
    assert img.timestamp == datetime(2023, 5, 8, 13, 57)  # one minute per turn
    assert img.meta["date_text"] == "1:56 pm on 8 May, 2023"
    q0, q1, q2 = corpus.qa
    assert q0.id == "conv-x:qa0" and q0.answer == "2022" and q0.evidence == ["D1:1", "D1:2"]
    assert q1.answer is None and q1.adversarial_answer == "Bo" and q1.evidence == ["D1:2"]
    assert q0.meta["audit_id"] == "locomo_0_qa0"
    kinds = corpus.report.defect_counts()
    assert kinds == {"category5_without_answer": 1, "duplicate_question": 1, "empty_evidence": 1,
                     "empty_session": 1, "malformed_evidence": 3, "non_string_answer": 1,
                     "session_date_without_session": 1, "unknown_evidence": 1}
    assert corpus.report.sessions == 1 and corpus.report.turns == 2


def test_bad_files_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="top level is not a list"):
        load_locomo(_write(tmp_path, {"a": 1}))
    bad = _sample()
    del bad["qa"]
    with pytest.raises(InputError) as ei:
        load_locomo(_write(tmp_path, [bad]))
    assert ei.value.field == "qa" and "sample [0]" in str(ei.value)
    bad = _sample()
    bad["conversation"]["session_1_date_time"] = "yesterday"
    with pytest.raises(InputError, match="cannot parse date"):
        load_locomo(_write(tmp_path, [bad]))
    with pytest.raises(InputError, match="cannot read"):
        load_locomo(tmp_path / "absent.json")


def test_real_file_counts_and_defects(locomo_path):
    corpus = load_locomo(locomo_path)
    rep = corpus.report
    assert rep.sha256 == LOCOMO_RELEASE_SHA256 and rep.matches_release
    assert (rep.conversations, rep.sessions, rep.turns) == (10, 272, 5882)
    assert rep.image_turns == 1226
    assert rep.qa_by_category == {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}
    counts = rep.defect_counts()
    # The defects SOURCE.md lists, each found and handled.
    assert counts["category5_without_answer"] == 444
    assert counts["non_string_answer"] == 6
    assert counts["malformed_evidence"] == 7
    assert counts["unknown_evidence"] == 2
    assert counts["empty_evidence"] == 4
    assert counts["duplicate_question"] == 12
    assert counts["session_date_without_session"] == 16  # conv-26 sessions 20-35
    qa = {q.id: q for q in corpus.qa}
    assert qa["conv-26:qa37"].evidence == ["D8:6", "D9:17"]
    assert qa["conv-50:qa69"].evidence == ["D30:5"]
    assert "D11:26" in qa["conv-43:qa18"].evidence
    assert "D" not in qa["conv-42:qa88"].evidence
    # every kept evidence id names a turn of its conversation
    for q in corpus.qa:
        turns = corpus.conversation(q.conversation).event_index()
        assert all(e in turns for e in q.evidence), q.id
    c26 = corpus.conversation("conv-26")
    assert c26.events[0].id == "D1:1" and c26.events[0].timestamp == datetime(2023, 5, 8, 13, 56)
    assert max(e.session for e in c26.events) == 19


def test_locomo_dataset_plain_and_with_errata(locomo_path):
    plain = locomo_dataset(locomo_path)
    assert plain.name == "locomo" and plain.version == "locomo10"
    assert plain.key_sha256 == LOCOMO_RELEASE_SHA256 and len(plain.qa) == 1986
    fixed = locomo_dataset(locomo_path, errata="locomo-audit")
    assert fixed.version == "locomo10+locomo-audit-9493fb4"
    assert fixed.key_sha256 != plain.key_sha256
    assert fixed.meta["errata"]["answer_changed"] == 99


def test_dataset_notes(tmp_path, locomo_path):
    from twistbench.datasets.locomo import dataset_notes

    notes = dataset_notes(locomo_dataset(locomo_path, errata="locomo-audit"))
    assert "matches the LoCoMo release" in notes[0]
    assert any(n.startswith("QA (LoCoMo): 1986 questions, 0 re-validated out") for n in notes)
    want = "errata locomo-audit@9493fb4: 153 questions changed (99 answers"
    assert any(n.startswith(want) for n in notes)
    other = tmp_path / "locomo10.json"
    other.write_bytes(locomo_path.read_bytes() + b" ")
    assert dataset_notes(locomo_dataset(other))[0].startswith("WARNING: locomo10.json sha256")
