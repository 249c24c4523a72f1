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
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter, defaultdict
from typing import Any

from twistbench.contract import Capabilities
from twistbench.judges.base import Judge
from twistbench.model import Answer, Dataset, QAItem
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
ADVERSARIAL_PHRASES = ("no information available", "not mentioned")


@functools.lru_cache(maxsize=1)
def _stem():  # noqa: ANN202
    # Imported on first use: `import nltk` pulls scipy.stats and costs ~2 s, which every
    # `twist` command would otherwise pay at start-up.
    from nltk.stem import PorterStemmer

    return PorterStemmer().stem
_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


def normalize_answer(s: str) -> str:
    """LoCoMo's normalize_answer (commas, case, punctuation, a/an/the/and, whitespace)."""
    s = s.replace(",", "")
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token F1 of Porter-stemmed normalised tokens (LoCoMo's f1_score)."""
    pred = [_stem()(w) for w in normalize_answer(prediction).split()]
    gold = [_stem()(w) for w in normalize_answer(ground_truth).split()]
    common = Counter(pred) & Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1_multi(prediction: str, ground_truth: str) -> float:
    """Category 1: mean over gold parts (split on ',') of the best F1 against any predicted part."""
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in ground_truth.split(",")]
    return sum(max(f1_score(p, g) for p in preds) for g in golds) / len(golds)


def qa_score(category: int, prediction: str, answer: Any) -> float:
    """The official per-question score for one category."""
    if category == 5:
        low = prediction.lower()
        return 1.0 if any(ph in low for ph in ADVERSARIAL_PHRASES) else 0.0
    gold = "" if answer is None else str(answer)
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category == 1:
        return float(f1_multi(prediction, gold))
    if category in (2, 3, 4):
        return float(f1_score(prediction, gold))
    raise ValueError(f"unknown LoCoMo category {category}")


def evidence_recall(gold: list[str], cited: list[str]) -> float | None:
    """Share of gold evidence ids cited; None when there is no gold evidence."""
    if not gold:
        return None
    got = set(cited)
    return sum(g in got for g in gold) / len(gold)


def item_id(qa_id: str) -> str:
    return f"{KEY}:{qa_id}"


def _make_recall(text: str):
    def run(guarded: SystemView, state: ConversationState) -> dict[str, Any]:
        return {"answer": guarded.recall(text).model_dump(mode="json")}
    return run


def score_item(qa: QAItem, answer: Answer) -> dict[str, Any]:
    return {"f1": qa_score(qa.category, answer.text, qa.answer),
            "evidence_recall": evidence_recall(qa.evidence, answer.evidence)}


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
                     score=lambda o, q=q: score_item(q, Answer.model_validate(o["answer"])))
                for q in dataset.items_of(conversation_id, "qa") if not q.excluded]

    def _rows(self, dataset: Dataset, records: list[ItemRecord]):
        index = {item_id(q.id): q for q in dataset.qa if not q.excluded}
        rows: list[tuple[QAItem, dict[str, Any]]] = []
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
        missing: dict[str, int] = defaultdict(int)
        for iid, q in index.items():
            if iid not in seen:
                missing[f"cat{q.category}"] += 1
        return rows, dict(errors), dict(missing)

    def score(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
              judge: Judge | None = None) -> TrackResult:
        why = self.not_applicable(caps, dataset)
        if why:
            return TrackResult.not_applicable(KEY, TITLE, why)
        rows, errors, missing = self._rows(dataset, records)

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

        res = TrackResult(track=KEY, title=TITLE, status="scored", errors=errors, missing=missing)
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
        res.counts = {
            "qa": len(dataset.qa),
            "excluded": sum(1 for q in dataset.qa if q.excluded),
            "scored": len(rows),
            "no_gold_evidence": sum(1 for q, s in rows if s["evidence_recall"] is None),
        }
        return res

    def outcomes(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
                 judge: Judge | None = None) -> list[ItemOutcome]:
        """Per question: its official score (F1 in [0, 1]; 0/1 for category 5)."""
        if self.not_applicable(caps, dataset):
            return []
        rows, _, _ = self._rows(dataset, records)
        return [ItemOutcome(item_id=q.id, item_type=f"locomo:cat{q.category}",
                            conversation=q.conversation, value=s["f1"]) for q, s in rows]


TRACK = LocomoQATrack()
