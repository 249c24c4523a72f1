"""datasets/errata.py: the locomo-audit overlay, on hand-made entries and on the real file."""

from __future__ import annotations

import json

import pytest

from twistbench.datasets.errata import apply_errata, read_errata, resolve_errata_path
from twistbench.datasets.locomo import load_locomo, locomo_dataset
from twistbench.errors import InputError
from twistbench.model import QAItem


def _qa() -> list[QAItem]:
    return [
        QAItem(id="c:qa0", conversation="c", question="Where?", answer="Paris", category=4,
               evidence=["D1:1"], meta={"audit_id": "locomo_0_qa0"}),
        QAItem(id="c:qa1", conversation="c", question="When?", answer="2022", category=2,
               evidence=["D1:2"], meta={"audit_id": "locomo_0_qa1"}),
        QAItem(id="c:qa2", conversation="c", question="Who?", answer="Ann", category=4,
               evidence=["D1:3"], meta={"audit_id": "locomo_0_qa2"}),
    ]


def _entry(qid, question, etype, answer, evidence):
    return {"question_id": qid, "question": question, "golden_answer": "", "category": 4,
            "error_type": etype, "cited_evidence": [], "correct_evidence": evidence,
            "reasoning": "", "correct_answer": answer}


def test_policy_answer_vs_citation(tmp_path):
    p = tmp_path / "errors.json"
    p.write_text(json.dumps([
        _entry("locomo_0_qa0", "Where?", "HALLUCINATION", "Lyon", ["D1:1"]),
        # a citation fix restates the answer with commentary: the answer must stay as it was
        _entry("locomo_0_qa1", "When?", "WRONG_CITATION",
               "2022 (answer is correct, citation is wrong)",
               ["D1:4", "D1:4"]),
        _entry("locomo_0_qa2", "A different question?", "HALLUCINATION", "Bo", ["D1:3"]),
        _entry("locomo_0_qa9", "Nope?", "HALLUCINATION", "x", []),
    ]))
    original = _qa()
    qa, rep = apply_errata(original, p)
    assert [q.answer for q in qa] == ["Lyon", "2022", "Ann"]
    assert qa[1].evidence == ["D1:4"]
    assert (rep.answer_changed, rep.evidence_only_changed, rep.changed) == (1, 1, 2)
    assert {n["question_id"] for n in rep.not_applied} == {"locomo_0_qa2", "locomo_0_qa9"}
    assert rep.version.startswith("locomo-audit@sha256:")
    assert original[0].answer == "Paris"  # input untouched
    assert qa[0].meta["errata"]["answer_was"] == "Paris"


def test_bad_errata_files(tmp_path):
    p = tmp_path / "errors.json"
    p.write_text(json.dumps([{"question_id": "q1", "correct_answer": "x"}]))
    with pytest.raises(InputError) as ei:
        read_errata(p)
    assert ei.value.field == "question_id" and ei.value.where == "entry [0]"
    p.write_text(json.dumps([{"question_id": "locomo_0_qa1"}]))
    with pytest.raises(InputError, match="nothing to correct"):
        read_errata(p)
    with pytest.raises(InputError, match="no such errata file"):
        resolve_errata_path(tmp_path / "missing.json")


def test_real_audit(locomo_path):
    path = resolve_errata_path("locomo-audit", locomo_path)
    assert path.name == "errors.json" and path.parent.name == "locomo-audit"
    corpus = load_locomo(locomo_path)
    qa, rep = apply_errata(corpus.qa, path)
    assert rep.version == "locomo-audit@9493fb4" and rep.entries == 156
    # the audit's own split: 99 entries change a score (answer), 57 fix citations only
    assert rep.answer_changed == 99
    assert rep.answer_changed + rep.evidence_only_changed + rep.unchanged == 156
    assert rep.not_applied == []
    by_id = {q.id: q for q in qa}
    assert by_id["conv-26:qa1"].evidence == ["D1:14"] and by_id["conv-26:qa1"].answer == "2022"
    assert by_id["conv-26:qa2"].answer == "Counseling or mental health"
    # with a Dataset the ids are checked against the conversations
    ds = locomo_dataset(locomo_path)
    qa2, rep2 = apply_errata(ds, path)
    assert rep2.changed == rep.changed
    assert [q.answer for q in qa2] == [q.answer for q in qa]
