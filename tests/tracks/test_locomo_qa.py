"""LoCoMo QA: the official F1 rules on hand-computed examples, evidence recall, the track."""

import pytest
from twist_fixtures import FakeGuarded, answer_output, conversation, dataset, err_record, ok_record

from twistbench.contract import Capabilities
from twistbench.model import Answer, QAItem
from twistbench.tracks.base import ConversationState
from twistbench.tracks.locomo_qa import (
    TRACK,
    evidence_recall,
    f1_multi,
    f1_score,
    normalize_answer,
    qa_score,
)


def test_normalize_answer_like_locomo():
    assert normalize_answer("The cat, and a dog!") == "cat dog"
    assert normalize_answer("An   apple's  core.") == "apples core"
    assert normalize_answer("Sandwich") == "sandwich"  # 'and' is removed only as a word
    assert normalize_answer("") == ""


def test_f1_hand_computed():
    assert f1_score("running dogs", "the dog runs") == 1.0  # Porter: run, dog
    assert f1_score("7 May 2023", "May 7, 2023") == 1.0
    assert f1_score("in Boston", "Boston") == pytest.approx(2 / 3)  # P 1/2, R 1
    assert f1_score("Boston", "in Boston city") == pytest.approx(0.5)  # P 1, R 1/3
    assert f1_score("yes yes", "yes") == pytest.approx(2 / 3)  # counts: common 1, P 1/2, R 1
    assert f1_score("Paris", "London") == 0.0
    assert f1_score("", "London") == 0.0


def test_category_1_multi_answer_rule():
    # gold parts painting (1.0), pottery (1.0), camping (0.0) -> 2/3
    assert f1_multi("pottery, painting", "painting, pottery, camping") == pytest.approx(2 / 3)
    assert qa_score(1, "pottery, painting", "painting, pottery, camping") == pytest.approx(2 / 3)
    # a single predicted part against two gold parts: (1 + 0) / 2
    assert qa_score(1, "pottery", "pottery, hiking") == pytest.approx(0.5)


def test_category_3_gold_cut_at_semicolon():
    assert qa_score(3, "Likely yes", "Likely yes; because she said so") == 1.0
    assert qa_score(3, "yes", "Likely yes; because") == pytest.approx(2 / 3)


def test_category_5_phrase_rule_ignores_the_gold():
    assert qa_score(5, "That is not mentioned in the conversation.", None) == 1.0
    assert qa_score(5, "NO INFORMATION AVAILABLE", "anything") == 1.0
    assert qa_score(5, "She went to Paris", None) == 0.0
    assert qa_score(5, "No information.", None) == 0.0


def test_integer_and_missing_answers():
    assert qa_score(2, "2022", 2022) == 1.0
    assert qa_score(4, "anything", None) == 0.0
    with pytest.raises(ValueError):
        qa_score(6, "x", "y")


def test_evidence_recall():
    assert evidence_recall(["D1:3", "D2:4"], ["D2:4", "D9:9"]) == 0.5
    assert evidence_recall(["D1:3"], []) == 0.0
    assert evidence_recall([], ["D1:1"]) is None


CONV = conversation("c1", [[("A", "hi"), ("B", "hello")]])
CONV2 = conversation("c2", [[("A", "yo")]])
QA = [
    QAItem(id="c1:qa0", conversation="c1", question="Where?", answer="Boston", category=4,
           evidence=["c1:1:0"]),
    QAItem(id="c1:qa1", conversation="c1", question="What hobbies?", answer="pottery, hiking",
           category=1, evidence=["c1:1:0", "c1:1:1"]),
    QAItem(id="c1:qa2", conversation="c1", question="Trap?", category=5,
           adversarial_answer="Paris"),
    QAItem(id="c1:qa3", conversation="c1", question="Excluded?", answer="x", category=2,
           excluded="perturbed by injection TW3:1"),
    QAItem(id="c2:qa0", conversation="c2", question="When?", answer="2021", category=2),
]
DS = dataset([CONV, CONV2], qa=QA)
CAPS = Capabilities(recall=True)


def rec(qid, text, ev=()):
    q = next(x for x in DS.qa if x.id == qid)
    return ok_record(f"locomo:{qid}", "locomo", f"cat{q.category}", q.conversation,
                     answer_output(text, list(ev)))


def test_track_hand_computed():
    recs = [rec("c1:qa0", "in Boston", ["c1:1:0"]),  # f1 2/3, evidence 1
            rec("c1:qa1", "pottery", ["c1:1:1"]),  # f1 1/2, evidence 1/2
            rec("c1:qa2", "Not mentioned."),  # 1
            rec("c2:qa0", "2021")]  # 1, no gold evidence
    res = TRACK.score(DS, recs, CAPS)
    m = res.metrics
    assert m["f1"].value == pytest.approx((2 / 3 + 1 / 2 + 1) / 3) and m["f1"].n == 3
    assert m["f1_all"].value == pytest.approx((2 / 3 + 1 / 2 + 1 + 1) / 4)
    assert m["f1_cat5"].value == 1.0 and m["f1_cat3"].value is None
    assert m["evidence_recall"].value == pytest.approx(0.75) and m["evidence_recall"].n == 2
    assert res.counts == {"qa": 5, "excluded": 1, "scored": 4, "no_gold_evidence": 2}


def test_excluded_items_are_not_run_and_errors_are_counted():
    tasks = TRACK.tasks(DS, "c1", CAPS)
    assert [t.item_id for t in tasks] == ["locomo:c1:qa0", "locomo:c1:qa1", "locomo:c1:qa2"]
    recs = [rec("c1:qa0", "Boston"), err_record("locomo:c1:qa1", "locomo", "cat1", "c1")]
    res = TRACK.score(DS, recs, CAPS)
    assert res.errors == {"cat1": 1} and res.missing == {"cat5": 1, "cat2": 1}
    assert res.metrics["f1"].value == 1.0 and res.metrics["f1"].n == 1


def test_task_runs_recall_and_scores():
    t = TRACK.tasks(DS, "c1", CAPS)[0]
    g = FakeGuarded(answers={"Where?": Answer(text="Boston", evidence=["c1:1:0"])})
    out = t.run(g, ConversationState(conversation=CONV))
    assert g.calls == [("recall", "Where?")]
    assert t.score(out) == {"f1": 1.0, "evidence_recall": 1.0}


def test_not_applicable():
    assert TRACK.score(DS, [], Capabilities(check_alignment=True)).status == "n/a"
    assert TRACK.score(dataset([CONV]), [], CAPS).status == "n/a"
    only_excluded = dataset([CONV], qa=[DS.qa[3]])
    assert "excluded" in TRACK.score(only_excluded, [], CAPS).reason


def test_gold_answers_score_one_on_real_locomo(locomo_path):
    from twistbench.datasets.locomo import locomo_dataset

    ds = locomo_dataset(locomo_path)
    qa = [q for q in ds.qa if q.category != 5 and q.answer is not None]
    assert len(qa) == 1540
    # the gold answer (cut at ';' for category 3, as the official scorer cuts the gold) scores 1
    assert all(qa_score(q.category, q.answer.split(";")[0] if q.category == 3 else q.answer,
                        q.answer) == 1.0 for q in qa)
    # uncut, the 11 category-3 answers with a ';' rationale lose precision
    low = [q for q in qa if qa_score(q.category, q.answer, q.answer) < 1.0]
    assert len(low) == 11 and all(q.category == 3 and ";" in q.answer for q in low)


def test_empty_inputs():
    res = TRACK.score(DS, [], CAPS)
    assert all(m.value is None for m in res.metrics.values())
    assert res.counts["scored"] == 0 and res.counts["excluded"] == 1
    assert sum(res.missing.values()) == 4
