"""itemgen/revalidate.py: which original LoCoMo questions an injection could perturb."""

from __future__ import annotations

import json
from datetime import datetime

from twistbench.datasets.locomo import LocomoCorpus, LocomoReport
from twistbench.itemgen.revalidate import keyword_stems, revalidate
from twistbench.model import Conversation, Event, QAItem


def _corpus() -> LocomoCorpus:
    t0 = datetime(2023, 5, 8, 13, 56)
    evs = [Event(id=f"D1:{i}", conversation="c", session=1, timestamp=t0, speaker=sp, text=f"t{i}")
           for i, sp in enumerate(["Ann", "Bo", "Ann", "Bo", "Ann"], 1)]
    conv = Conversation(id="c", speakers=["Ann", "Bo"], events=evs)
    qa = [
        QAItem(id="c:qa0", conversation="c", question="What pets does Ann have?", answer="a dog",
               category=4, evidence=["D1:1"]),
        QAItem(id="c:qa1", conversation="c", question="What pets does Bo have?", answer="none",
               category=4, evidence=["D1:2"]),
        QAItem(id="c:qa2", conversation="c", question="When did they meet?", answer="May",
               category=2, evidence=["D1:2", "D1:4"]),
        QAItem(id="c:qa3", conversation="c", question="What does Ann paint?", answer="lakes",
               category=4, evidence=["D1:3"]),
        QAItem(id="c:qa4", conversation="c", question="Which cats were mentioned?", answer="Tom",
               category=4, evidence=["D1:5"]),
    ]
    report = LocomoReport(sha256="x", matches_release=False)
    return LocomoCorpus(conversations=[conv], qa=qa, report=report)


def _turn(tid, after, speaker, keywords):
    return {"conversation": "c", "id": tid, "session": 1, "after": after, "speaker": speaker,
            "text": "...", "keywords": keywords}


def test_subject_rule_same_speaker_and_stemmed_keyword():
    out = dict(revalidate(_corpus(), [_turn("TW1:1", "D1:5", "Ann", ["pet", "parrot"])]))
    assert set(out) == {"c:qa0"}  # Bo's pets and Ann's painting are untouched
    assert out["c:qa0"].startswith("subject: TW1:1 (Ann; pet)")


def test_question_naming_nobody_is_about_both_speakers():
    out = dict(revalidate(_corpus(), [_turn("TW1:1", "D1:5", "Bo", ["cat"])]))
    assert set(out) == {"c:qa4"}  # "cats" matches "cat"; the question names neither speaker


def test_evidence_span_rule_follows_after_chains():
    # TW1:2 follows TW1:1, which follows D1:2: both sit between D1:2 and D1:4 (qa2's evidence)
    turns = [_turn("TW1:1", "D1:2", "Ann", []), _turn("TW1:2", "TW1:1", "Bo", [])]
    out = dict(revalidate(_corpus(), turns))
    assert set(out) == {"c:qa2"} and out["c:qa2"].startswith("evidence_span: TW1:1")
    # right after the last evidence turn is outside the span
    assert revalidate(_corpus(), [_turn("TW1:1", "D1:4", "Ann", [])]) == []


def test_keyword_stems_drop_function_words():
    assert keyword_stems(["the yoga studio", "Pets"]) == {"yoga", "studio", "pet"}


def test_committed_key_revalidation(locomo_path):
    from twistbench.datasets.locomo import load_locomo
    from twistbench.datasets.paths import locomo_key_path

    payload = json.loads(locomo_key_path().read_text())["payload"]
    corpus = load_locomo(locomo_path)
    turns = [dict(t, keywords=payload["keywords"].get(t["id"], [])) for t in payload["turns"]]
    expected = revalidate(corpus, turns)
    listed = [(e["qa"], e["reason"]) for e in payload["revalidation"]["excluded"]]
    assert listed == expected  # the key's list is exactly what the rule gives
    ids = {q.id for q in corpus.qa}
    assert all(q in ids for q, _ in listed)
    assert 0 < len(listed) < len(corpus.qa) // 4
