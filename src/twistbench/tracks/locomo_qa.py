"""LoCoMo QA: LoCoMo's official token F1 and evidence recall, beside the TWIST columns.

The F1 reproduces snap-research/locomo task_eval/evaluation.py (`eval_question_answering`):
- normalize_answer: drop commas, lowercase, remove string.punctuation, remove the words
  a / an / the / and (the official regex includes "and"), squeeze whitespace;
- tokens are Porter-stemmed with nltk's PorterStemmer; F1 from common token counts;
- gold answers are str()-ed (6 LoCoMo answers are integers);
- category 1 (multi-hop): gold and prediction split on ',' — mean over gold parts of the best F1
  against any predicted part; category 3 (open-domain): gold cut at the first ';';
  categories 2 and 4: plain F1; category 5 (adversarial): 1 when the lowercased prediction
  contains "not mentioned" or "no information available", else 0 (the gold answer is not used,
  so the 444 category-5 items without an `answer` key score normally here; the official script
  raises KeyError on them).
Evidence recall: share of the gold evidence ids cited in Answer.evidence; questions with no
gold evidence are left out of it (counted). Items with `excluded` set (re-validation) are not
run and not scored; their number is reported.

Headline: mean F1 over categories 1-4 (the answerable questions), paired with evidence recall;
the overall mean with category 5 and every category are in the JSON.

J: when the run's judge grades LoCoMo answers (`judge_qa`: the structural judge by its F1 rule,
the LLM judge by the published J protocol), `j` is the share judged CORRECT over categories
1-4 (category 5 has no gold answer to judge against), per category too; a judgement that fails
is counted in errors["judge"] and left out.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from twistbench.contract import Capabilities
from twistbench.judges.base import (
    Judge,
    JudgeError,
    QACase,
    QAJudge,
    QAVerdict,
    judge_qa_all,
    judgement_record,
)
from twistbench.judges.locomo_f1 import (  # re-exported: the track's official F1
    ADVERSARIAL_PHRASES,
    f1_multi,
    f1_score,
    normalize_answer,
    qa_score,
)
from twistbench.judges.structural import StructuralJudge
from twistbench.model import Answer, Dataset, QAItem, qa_corpus
from twistbench.records import ItemRecord
from twistbench.stats import rate
from twistbench.tracks.base import (
    PHASE_QUERY,
    ConversationState,
    HeadlinePair,
    ItemOutcome,
    SystemView,
    Task,
    TrackResult,
)

KEY = "locomo"
TITLE = "LoCoMo QA"
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                  5: "adversarial"}


def evidence_recall(gold: list[str], cited: list[str]) -> float | None:
    """Share of gold evidence ids cited; None when there is no gold evidence."""
    if not gold:
        return None
    got = set(cited)
    return sum(g in got for g in gold) / len(gold)


def title_for(dataset_name: str) -> str:
    """The track's title on a dataset: the QA of LongMemEval-S or BEAM is not LoCoMo's, though
    it is scored the same way."""
    return f"{qa_corpus(dataset_name)} QA"


def item_id(qa_id: str) -> str:
    return f"{KEY}:{qa_id}"


def _make_recall(text: str):
    def run(guarded: SystemView, state: ConversationState) -> dict[str, Any]:
        return {"answer": guarded.recall(text).model_dump(mode="json")}
    return run


def score_item(qa: QAItem, answer: Answer, judge: Judge | None = None) -> dict[str, Any]:
    """The official F1 and evidence recall; with a judge that grades LoCoMo answers and a
    judgeable question (categories 1-4), its verdict under "j" (or "judge_error")."""
    out: dict[str, Any] = {"f1": qa_score(qa.category, answer.text, qa.answer),
                           "evidence_recall": evidence_recall(qa.evidence, answer.evidence)}
    case = judge_case(qa, answer)
    if case is not None and isinstance(judge, QAJudge):
        try:
            out["j"] = judge.judge_qa(case).as_dict()
        except JudgeError as exc:
            out["judge_error"] = {"kind": exc.kind, "message": exc.message[:500]}
    return out


def judge_case(qa: QAItem, answer: Answer) -> QACase | None:
    """What a judge grades for this question, or None (category 5: no gold answer)."""
    if qa.category == 5:
        return None
    return QACase(question=qa.question, gold="" if qa.answer is None else str(qa.answer),
                  answer=answer.text, category=qa.category)


class LocomoQATrack:
    key = KEY
    title = TITLE
    headline = (HeadlinePair("locomo", "LoCoMo", KEY, "f1", "evidence_recall",
                             "F1 / evidence recall", True, True),)

    def not_applicable(self, caps: Capabilities, dataset: Dataset) -> str | None:
        if not caps.recall:
            return "system does not declare recall"
        if not dataset.qa:
            return "dataset has no LoCoMo QA items"
        if all(q.excluded for q in dataset.qa):
            return "every QA item is excluded by re-validation"
        return None

    def tasks(self, dataset: Dataset, conversation_id: str, caps: Capabilities,
              judge: Judge | None = None) -> list[Task]:
        if self.not_applicable(caps, dataset):
            return []
        return [Task(item_id=item_id(q.id), track=KEY, kind=f"cat{q.category}",
                     conversation=conversation_id, phase=PHASE_QUERY,
                     request={"call": "recall", "query": q.question}, run=_make_recall(q.question),
                     score=lambda o, q=q: score_item(q, Answer.model_validate(o["answer"]),
                                                     judge))
                for q in dataset.items_of(conversation_id, "qa") if not q.excluded]

    def _rows(self, dataset: Dataset, records: list[ItemRecord]):
        index = {item_id(q.id): q for q in dataset.qa if not q.excluded}
        rows: list[tuple[QAItem, dict[str, Any]]] = []
        answers: dict[str, Answer] = {}
        errors: dict[str, int] = defaultdict(int)
        seen: set[str] = set()
        for r in records:
            if r.track != KEY or r.item_id not in index:
                continue
            q = index[r.item_id]
            seen.add(r.item_id)
            if not r.ok or r.output is None:
                errors[f"cat{q.category}"] += 1
                continue
            rows.append((q, score_item(q, Answer.model_validate(r.output["answer"]))))
            answers[r.item_id] = Answer.model_validate(r.output["answer"])
        missing: dict[str, int] = defaultdict(int)
        for iid, q in index.items():
            if iid not in seen:
                missing[f"cat{q.category}"] += 1
        return rows, dict(errors), dict(missing), answers

    @staticmethod
    def _judged(rows: list[tuple[QAItem, dict[str, Any]]], answers: dict[str, Answer],
                judge: QAJudge) -> list[tuple[QAItem, QAVerdict | JudgeError]]:
        """The judge's verdict on every judgeable row (in one batch where it can)."""
        cases = [(q, judge_case(q, answers[item_id(q.id)])) for q, _ in rows]
        todo = [(q, c) for q, c in cases if c is not None]
        verdicts = judge_qa_all(judge, [c for _, c in todo])
        return [(q, v) for (q, _), v in zip(todo, verdicts)]

    def score(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
              judge: Judge | None = None) -> TrackResult:
        why = self.not_applicable(caps, dataset)
        if why:
            return TrackResult.not_applicable(KEY, title_for(dataset.name), why)
        rows, errors, missing, answers = self._rows(dataset, records)

        def f1_rate(name: str, sel) -> Any:
            per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
            for q, s in rows:
                if sel(q):
                    per[q.conversation][0] += s["f1"]
                    per[q.conversation][1] += 1
            return rate(name, {c: (v[0], int(v[1])) for c, v in per.items()})

        def ev_rate(name: str, sel) -> Any:
            per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
            for q, s in rows:
                if sel(q) and s["evidence_recall"] is not None:
                    per[q.conversation][0] += s["evidence_recall"]
                    per[q.conversation][1] += 1
            return rate(name, {c: (v[0], int(v[1])) for c, v in per.items()})

        res = TrackResult(track=KEY, title=title_for(dataset.name), status="scored", errors=errors,
                          missing=missing)
        m = res.metrics
        m["f1"] = f1_rate("f1", lambda q: q.category != 5)
        m["f1"].note = "mean official F1, categories 1-4"
        m["evidence_recall"] = ev_rate("evidence_recall", lambda q: q.category != 5)
        m["evidence_recall"].note = "categories 1-4, questions with gold evidence"
        m["f1_all"] = f1_rate("f1_all", lambda q: True)
        m["f1_all"].note = "mean official F1, all categories (category 5 by the phrase rule)"
        for cat in sorted(CATEGORY_NAMES):
            m[f"f1_cat{cat}"] = f1_rate(f"f1_cat{cat}", lambda q, c=cat: q.category == c)
            m[f"f1_cat{cat}"].note = CATEGORY_NAMES[cat]
            if cat != 5:
                m[f"evidence_recall_cat{cat}"] = ev_rate(f"evidence_recall_cat{cat}",
                                                         lambda q, c=cat: q.category == c)
        if judge is None or isinstance(judge, QAJudge):
            self._score_j(res, rows, answers, judge or StructuralJudge())
        res.counts = {
            "qa": len(dataset.qa),
            "excluded": sum(1 for q in dataset.qa if q.excluded),
            "scored": len(rows),
            "no_gold_evidence": sum(1 for q, s in rows if s["evidence_recall"] is None),
        }
        return res

    def _score_j(self, res: TrackResult, rows: list[tuple[QAItem, dict[str, Any]]],
                 answers: dict[str, Answer], judge: QAJudge) -> None:
        judged = self._judged(rows, answers, judge)
        failed = sum(isinstance(v, JudgeError) for _, v in judged)
        if failed:
            res.errors["judge"] = failed
        ok = [(q, v) for q, v in judged if isinstance(v, QAVerdict)]
        # the item views show these beside the F1 instead of asking the judge again
        res.judgements = {item_id(q.id): judgement_record(v) for q, v in judged}

        def j_rate(name: str, sel) -> Any:
            per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for q, v in ok:
                if sel(q):
                    per[q.conversation][0] += v.correct
                    per[q.conversation][1] += 1
            return rate(name, {c: (float(k), n) for c, (k, n) in per.items()})

        m = res.metrics
        m["j"] = j_rate("j", lambda q: True)
        m["j"].note = f"share judged CORRECT by judge {judge.name}, categories 1-4"
        for cat in (1, 2, 3, 4):
            m[f"j_cat{cat}"] = j_rate(f"j_cat{cat}", lambda q, c=cat: q.category == c)
            m[f"j_cat{cat}"].note = CATEGORY_NAMES[cat]
        res.details["judge"] = judge.name
        res.details["judge_errors"] = failed

    def outcomes(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
                 judge: Judge | None = None) -> list[ItemOutcome]:
        """Per question: its official score (F1 in [0, 1]; 0/1 for category 5)."""
        if self.not_applicable(caps, dataset):
            return []
        rows, _, _, _ = self._rows(dataset, records)
        return [ItemOutcome(item_id=q.id, item_type=f"locomo:cat{q.category}",
                            conversation=q.conversation, value=s["f1"]) for q, s in rows]


TRACK = LocomoQATrack()

__all__ = ["ADVERSARIAL_PHRASES", "CATEGORY_NAMES", "KEY", "TITLE", "TRACK", "LocomoQATrack",
           "evidence_recall", "f1_multi", "f1_score", "normalize_answer", "qa_score",
           "score_item"]
