"""LoCoMo's official question-answering score (snap-research/locomo task_eval/evaluation.py).

Here, below the tracks, because two things use it: the LoCoMo QA track (its F1 columns) and the
structural judge (its acceptance rule for a LoCoMo answer). tracks/locomo_qa.py documents the
rules and re-exports these names.
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from typing import Any

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
