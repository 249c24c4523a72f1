"""Is find.injected on TWIST-LoCoMo 2.0 a matter of a few habits, or of who wrote the turns?

    .venv/bin/python benchmarks/locomo2_authorship_probe.py [--locomo PATH] [--folds 10]

Figures for the lead, not a gate. Builds the 2.0 payload in memory (never writes a key) and
probes "our turns vs LoCoMo's" with a classifier the shortcut battery does not use (TF-IDF,
sublinear tf, on character 3-5-grams and on word 1-2-grams; logistic regression; folds by
conversation, so no conversation is scored by a model that saw it), on five versions of the turns:

1. as built;
2. our turns only where they carry no item (chat in the register, distractor exchanges): is it
   the item content that gives us away, or the writing?
3. our turns with mechanical habits levelled (commas thinned to LoCoMo's rate per turn, weekday
   names replaced, digits spelled as a word): how much do the habits the n-gram lists show carry?
4. splicing instead of inserting, simulated: each of our turns removed and its longest sentence
   appended to the nearest original turn of the same speaker (within 40 turns, each original at
   most once); edited originals vs untouched ones. The design where an item's words ride inside
   LoCoMo's own turns, at its most favourable (one sentence each);
5. the same with our whole turn appended.

Then the character n-grams and per-turn habits whose rates differ most between the two sides.
Measured 2026-12-02 (10 folds, about 15 minutes on two shared cores): the table in
docs/keys/locomo-authoring.md, "What hand rewriting cannot fix".
"""

from __future__ import annotations

import argparse
import random
import re
from collections.abc import Callable, Sequence

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold

from twistbench.datasets.locomo import load_locomo
from twistbench.datasets.twist_locomo import dataset_from_payload
from twistbench.itemgen.locomo2 import build_locomo2
from twistbench.validation.features import TurnIndex, injected_turns, item_turns

IMAGE = re.compile(r"\s*\[shares an image[^\]]*\]")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
WEEKDAY = re.compile(r"\b(Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)days?\b")
DIGITS = re.compile(r"\d+")
SPLICE_WINDOW = 40  # turns: how far from our turn an original may be to receive its words


def held_out_auc(texts: Sequence[str], y: np.ndarray, groups: np.ndarray, analyzer: str,
                 folds: int) -> float:
    """AUC (raw) of TF-IDF + logistic regression, each conversation scored by a model that did
    not see it."""
    ngrams = (3, 5) if analyzer == "char" else (1, 2)
    x = TfidfVectorizer(analyzer=analyzer, ngram_range=ngrams, min_df=2,
                        sublinear_tf=True).fit_transform(texts)
    scores = np.zeros(len(y))
    for train, test in GroupKFold(n_splits=folds).split(x, y, groups):
        model = LogisticRegression(C=4.0, max_iter=3000).fit(x[train], y[train])
        scores[test] = model.decision_function(x[test])
    return float(roc_auc_score(y, scores))


def longest_sentence(text: str) -> str:
    parts = [p for p in SENTENCE_END.split(IMAGE.sub("", text)) if p.strip()]
    return max(parts, key=len) if parts else text


def level_habits(rate: float, rng: random.Random) -> Callable[[str], str]:
    """Commas kept with probability `rate` (LoCoMo's commas per turn / ours), weekday names
    replaced, digits spelled as one word."""
    def level(text: str) -> str:
        text = re.sub(",", lambda _m: "," if rng.random() < rate else "", text)
        return DIGITS.sub("several", WEEKDAY.sub("the weekend", text))
    return level


def spliced(texts: list[str], ours: np.ndarray, conv: np.ndarray, speaker: np.ndarray,
            piece: Callable[[str], str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Originals only, with each of our turns' `piece` appended to the nearest free original turn
    of the same speaker and conversation; returns texts, edited flags, groups."""
    free = {i for i in range(len(texts)) if not ours[i]}
    extra: dict[int, str] = {}
    for i in np.flatnonzero(ours):
        near = [j for j in free if conv[j] == conv[i] and speaker[j] == speaker[i]
                and abs(j - i) < SPLICE_WINDOW]
        if near:
            j = min(near, key=lambda j: (abs(j - i), j))
            free.discard(j)
            extra[j] = piece(texts[i])
    keep = [i for i in range(len(texts)) if not ours[i]]
    out = [texts[i] + (" " + extra[i] if i in extra else "") for i in keep]
    return out, np.array([int(i in extra) for i in keep]), conv[keep]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--locomo", default="/work/shared/data/locomo/locomo10.json")
    ap.add_argument("--folds", type=int, default=10, help="conversation folds (10: one each)")
    args = ap.parse_args()
    payload, report = build_locomo2(args.locomo)
    ds = dataset_from_payload(load_locomo(args.locomo), payload, version=report.version,
                              key_sha256="", key_file="(memory)")
    infos = TurnIndex(ds).infos
    marked, items = injected_turns(ds), item_turns(ds)
    keys = [(i.event.conversation, i.event.id) for i in infos]
    texts = [i.event.text for i in infos]
    ours = np.array([k in marked for k in keys])
    is_item = np.array([k in items for k in keys])
    conv = np.array([i.event.conversation for i in infos])
    speaker = np.array([i.event.speaker for i in infos])
    commas = np.array([t.count(",") for t in texts], dtype=float)
    rate = commas[~ours].mean() / max(commas[ours].mean(), 1e-9)
    level = level_habits(rate, random.Random(0))

    def row(name: str, sample: Sequence[str], y: np.ndarray, groups: np.ndarray) -> None:
        cells = [f"{a} {held_out_auc(sample, y, groups, a, args.folds):.3f}"
                 for a in ("char", "word")]
        print(f"{name:58s} {int(y.sum()):5d} of {len(y):5d}   " + "   ".join(cells), flush=True)

    print(f"{'our turns vs LoCoMo turns, TF-IDF + logistic regression':58s} marked / turns   "
          f"AUC by analyzer ({args.folds} conversation folds)")
    row("1. as built", texts, ours.astype(int), conv)
    keep = ~(ours & is_item)
    row("2. our non-item turns only", [t for t, k in zip(texts, keep) if k],
        ours[keep].astype(int), conv[keep])
    row(f"3. habits levelled (commas kept at {rate:.2f}, weekdays, digits)",
        [level(t) if o else t for t, o in zip(texts, ours)], ours.astype(int), conv)
    for name, piece in (("4. spliced: longest sentence into an original turn", longest_sentence),
                        ("5. spliced: whole turn into an original turn",
                         lambda t: IMAGE.sub("", t))):
        sample, y, groups = spliced(texts, ours, conv, speaker, piece)
        row(name, sample, y, groups)

    cv = CountVectorizer(analyzer="char", ngram_range=(3, 5), min_df=10)
    x = cv.fit_transform(texts) > 0
    vocab = np.array(cv.get_feature_names_out())
    ours_df = np.asarray(x[ours].mean(0)).ravel()
    theirs_df = np.asarray(x[~ours].mean(0)).ravel()
    ratio = np.log((ours_df + 3e-3) / (theirs_df + 3e-3))
    for side, order in (("ours >> LoCoMo's", np.argsort(-ratio)),
                        ("LoCoMo's >> ours", np.argsort(ratio))):
        print(f"{side} (share of turns with the char n-gram): "
              + "; ".join(f"{vocab[j]!r} {ours_df[j]:.3f}/{theirs_df[j]:.3f}"
                          for j in order[:25]))
    habits: dict[str, Callable[[str], float]] = {
        "commas": lambda t: t.count(","), "words": lambda t: len(t.split()),
        "has '!'": lambda t: "!" in t, "has '?'": lambda t: "?" in t,
        "has a digit": lambda t: bool(re.search(r"\d", t)),
        "has an apostrophe": lambda t: "'" in t,
        "names a weekday": lambda t: bool(WEEKDAY.search(t))}
    print("per turn, ours / LoCoMo's: " + "; ".join(
        f"{name} {np.mean([f(t) for t in np.array(texts)[ours]]):.2f} / "
        f"{np.mean([f(t) for t in np.array(texts)[~ours]]):.2f}" for name, f in habits.items()))


if __name__ == "__main__":
    main()
