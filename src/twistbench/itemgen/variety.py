"""Variety report: does an item set leak its labels through wording?

Used by `twist build cs` (TWIST-CS) and the LoCoMo injection builder. The input is generic: one
row per look-alike turn, `(arc_id, label, family, template_id, turn_text)` with label
"reversal" or "hard_negative". Three figures come out:

- distinct templates per family (is the paraphrase space large, or five sentences reused?);
- the largest share of reversal turns containing any single cue word or phrase (1-3 word
  n-gram that is not made only of function words), and which cue it is: a system that
  flagged every turn containing that cue would catch that share of reversals;
- held-out accuracy of bag-of-words classifiers (unigrams + bigrams; multinomial naive Bayes
  and L2 logistic regression, both in numpy/scipy) trained on half of the arcs to tell reversal
  turns from hard-negative turns in the other half. Splits are by arc (no arc has turns on both
  sides), stratified by label, seeded. Near 0.5 means wording alone does not give the label
  away; the gate is <= 0.65 for the higher of the two classifiers, both on the first split and
  averaged over several seeded splits.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text
from scipy.optimize import minimize

LABELS = ("reversal", "hard_negative")
BOW_GATE = 0.65

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

# Function words: an n-gram made only of these is not counted as a cue.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves i'm i've i'll i'd we're
    we've we'll we'd you're you've you'll you'd it's that's there's they're they've let's don't
    doesn't didn't isn't aren't wasn't weren't won't wouldn't can't couldn't shouldn't haven't
    hasn't hadn't s t re ve ll d m also get got us one
    """.split()
)


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens (letters/digits, with an inner apostrophe kept: "we're")."""
    return _TOKEN.findall(text.lower().replace("\u2019", "'"))


def ngrams(tokens: Sequence[str], n_max: int) -> list[str]:
    out: list[str] = []
    for n in range(1, n_max + 1):
        out.extend(" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return out


@dataclass(frozen=True)
class VarietyTurn:
    arc_id: str
    label: str
    family: str
    template_id: str
    text: str


@dataclass
class VarietyReport:
    """The figures of one variety check; render with `to_markdown()` or `to_rich()`."""

    n_turns: dict[str, int]
    n_arcs: dict[str, int]
    templates_per_family: dict[str, int]
    family_label: dict[str, str]
    max_cue_share: float
    max_cue: str
    max_cue_negative_share: float
    top_cues: list[tuple[str, float, float]]
    bow_accuracy_nb: float
    bow_accuracy_lr: float
    bow_split_accuracies_nb: list[float]
    bow_split_accuracies_lr: list[float]
    seed: int
    gate: float = BOW_GATE
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def bow_accuracy(self) -> float:
        """The first split's held-out accuracy, the higher of the two classifiers."""
        return max(self.bow_accuracy_nb, self.bow_accuracy_lr)

    @property
    def bow_accuracy_mean(self) -> float:
        """Mean held-out accuracy over all seeded splits, the higher of the two classifiers."""
        nb = float(np.mean(self.bow_split_accuracies_nb)) if self.bow_split_accuracies_nb else 0.0
        lr = float(np.mean(self.bow_split_accuracies_lr)) if self.bow_split_accuracies_lr else 0.0
        return max(nb, lr)

    @property
    def passes(self) -> bool:
        return self.bow_accuracy <= self.gate and self.bow_accuracy_mean <= self.gate

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_turns": dict(self.n_turns),
            "n_arcs": dict(self.n_arcs),
            "templates_per_family": dict(self.templates_per_family),
            "max_cue": self.max_cue,
            "max_cue_share": round(self.max_cue_share, 4),
            "max_cue_negative_share": round(self.max_cue_negative_share, 4),
            "top_cues": [[c, round(r, 4), round(h, 4)] for c, r, h in self.top_cues],
            "bow_accuracy": round(self.bow_accuracy, 4),
            "bow_accuracy_mean": round(self.bow_accuracy_mean, 4),
            "bow_accuracy_nb": round(self.bow_accuracy_nb, 4),
            "bow_accuracy_lr": round(self.bow_accuracy_lr, 4),
            "n_splits": len(self.bow_split_accuracies_nb),
            "seed": self.seed,
            "gate": self.gate,
            "passes": self.passes,
            **self.extra,
        }

    def to_markdown(self) -> str:
        lines = ["## Variety report", ""]
        lines.append(
            f"Turns: {self.n_turns.get('reversal', 0)} reversal "
            f"({self.n_arcs.get('reversal', 0)} arcs), {self.n_turns.get('hard_negative', 0)} "
            f"hard-negative ({self.n_arcs.get('hard_negative', 0)} arcs)."
        )
        frames = self.extra.get("frames", {})
        pool = self.extra.get("template_pool", {})
        if frames or pool:
            lines += ["", "| family | label | distinct templates | frames | template pool |",
                      "|---|---|---|---|---|"]
            for fam, n in self.templates_per_family.items():
                lines.append(f"| {fam} | {self.family_label.get(fam, '')} | {n} | "
                             f"{frames.get(fam, '')} | {pool.get(fam, '')} |")
        else:
            lines += ["", "| family | label | distinct templates |", "|---|---|---|"]
            for fam, n in self.templates_per_family.items():
                lines.append(f"| {fam} | {self.family_label.get(fam, '')} | {n} |")
        lines += [
            "",
            f"Largest share of reversal turns containing one cue: {self.max_cue_share:.1%} "
            f"(\"{self.max_cue}\"; in {self.max_cue_negative_share:.1%} of hard-negative turns).",
            "",
            f"Bag-of-words held-out accuracy (split by arc, seed {self.seed}): "
            f"{self.bow_accuracy:.3f} (naive Bayes {self.bow_accuracy_nb:.3f}, logistic "
            f"regression {self.bow_accuracy_lr:.3f}); mean over "
            f"{len(self.bow_split_accuracies_nb)} splits {self.bow_accuracy_mean:.3f}. "
            f"Gate <= {self.gate:.2f}: {'PASS' if self.passes else 'FAIL'}.",
        ]
        return "\n".join(lines) + "\n"

    def to_rich(self) -> Any:
        """A rich renderable (Group of a table and a summary)."""
        frames = self.extra.get("frames", {})
        pool = self.extra.get("template_pool", {})
        table = Table(title="Variety report: templates per family")
        table.add_column("family")
        table.add_column("label")
        table.add_column("distinct templates", justify="right")
        if frames or pool:
            table.add_column("frames", justify="right")
            table.add_column("template pool", justify="right")
        for fam, n in self.templates_per_family.items():
            row = [fam, self.family_label.get(fam, ""), str(n)]
            if frames or pool:
                row += [str(frames.get(fam, "")), str(pool.get(fam, ""))]
            table.add_row(*row)
        verdict = "PASS" if self.passes else "FAIL"
        summary = Text(
            f"max cue share {self.max_cue_share:.1%} (\"{self.max_cue}\", "
            f"{self.max_cue_negative_share:.1%} of hard negatives)\n"
            f"bag-of-words held-out accuracy {self.bow_accuracy:.3f} "
            f"(NB {self.bow_accuracy_nb:.3f}, LR {self.bow_accuracy_lr:.3f}); "
            f"mean of {len(self.bow_split_accuracies_nb)} splits {self.bow_accuracy_mean:.3f}; "
            f"gate <= {self.gate:.2f}: {verdict}",
            style="green" if self.passes else "bold red",
        )
        return Group(table, summary)


# ---------------------------------------------------------------------------------------------
# Classifiers (numpy / scipy; scikit-learn is not a dependency)


class Vocabulary:
    """n-gram feature index built on training texts only."""

    def __init__(self, texts: Iterable[str], n_max: int = 2):
        self.n_max = n_max
        index: dict[str, int] = {}
        for t in texts:
            for g in ngrams(tokenize(t), n_max):
                if g not in index:
                    index[g] = len(index)
        self.index = index

    def matrix(self, texts: Sequence[str]) -> np.ndarray:
        x = np.zeros((len(texts), len(self.index)), dtype=np.float64)
        for row, t in enumerate(texts):
            for g in ngrams(tokenize(t), self.n_max):
                col = self.index.get(g)
                if col is not None:
                    x[row, col] += 1.0
        return x


def naive_bayes_fit(x: np.ndarray, y: np.ndarray,
                    alpha: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial naive Bayes: (log priors [2], log likelihoods [2, features])."""
    priors = np.array([np.mean(y == c) for c in (0, 1)])
    counts = np.stack([x[y == c].sum(axis=0) for c in (0, 1)]) + alpha
    loglik = np.log(counts) - np.log(counts.sum(axis=1, keepdims=True))
    with np.errstate(divide="ignore"):
        return np.log(priors), loglik


def naive_bayes_predict(model: tuple[np.ndarray, np.ndarray], x: np.ndarray) -> np.ndarray:
    logprior, loglik = model
    scores = x @ loglik.T + logprior
    # ties go to class 0 deterministically
    return (scores[:, 1] > scores[:, 0]).astype(int)


def logistic_fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """L2-regularised logistic regression (L-BFGS); returns weights with the bias last."""
    xb = np.hstack([x, np.ones((x.shape[0], 1))])
    reg = np.full(xb.shape[1], l2)
    reg[-1] = 0.0

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = xb @ w
        # log(1 + e^z) - y z, computed stably
        nll = np.sum(np.logaddexp(0.0, z) - y * z)
        p = 1.0 / (1.0 + np.exp(-z))
        grad = xb.T @ (p - y) + reg * w
        return float(nll + 0.5 * np.sum(reg * w * w)), grad

    res = minimize(loss, np.zeros(xb.shape[1]), jac=True, method="L-BFGS-B",
                   options={"maxiter": 500})
    return res.x


def logistic_predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    xb = np.hstack([x, np.ones((x.shape[0], 1))])
    return (xb @ w > 0).astype(int)


def split_arcs(arcs: dict[str, str], seed: int) -> tuple[set[str], set[str]]:
    """Half of the arcs of each label to train, the rest to test (seeded, stratified)."""
    rng = random.Random(seed)
    train: set[str] = set()
    test: set[str] = set()
    for label in LABELS:
        ids = sorted(a for a, lab in arcs.items() if lab == label)
        rng.shuffle(ids)
        half = len(ids) // 2
        train.update(ids[:half])
        test.update(ids[half:])
    return train, test


def heldout_accuracy(turns: Sequence[VarietyTurn], seed: int) -> tuple[float, float]:
    """(naive Bayes, logistic regression) accuracy on the held-out half of the arcs."""
    arcs = {t.arc_id: t.label for t in turns}
    train_ids, _ = split_arcs(arcs, seed)
    train = [t for t in turns if t.arc_id in train_ids]
    test = [t for t in turns if t.arc_id not in train_ids]
    if not train or not test:
        raise ValueError("need at least two arcs per label for a held-out split")
    vocab = Vocabulary(t.text for t in train)
    xtr, xte = vocab.matrix([t.text for t in train]), vocab.matrix([t.text for t in test])
    ytr = np.array([LABELS.index(t.label) for t in train])
    yte = np.array([LABELS.index(t.label) for t in test])
    nb = float(np.mean(naive_bayes_predict(naive_bayes_fit(xtr, ytr), xte) == yte))
    lr = float(np.mean(logistic_predict(logistic_fit(xtr, ytr), xte) == yte))
    return nb, lr


def cue_shares(turns: Sequence[VarietyTurn], n_max: int = 3,
               top: int = 5) -> list[tuple[str, float, float]]:
    """Cues (n-grams not made only of function words) by share of reversal turns containing them.

    Returns (cue, share of reversal turns, share of hard-negative turns), highest first; ties
    break alphabetically so the output is deterministic.
    """
    docs: dict[str, list[set[str]]] = {lab: [] for lab in LABELS}
    for t in turns:
        grams = {g for g in ngrams(tokenize(t.text), n_max)
                 if not all(w in STOPWORDS for w in g.split())}
        docs[t.label].append(grams)
    rev = Counter(g for d in docs["reversal"] for g in d)
    neg = Counter(g for d in docs["hard_negative"] for g in d)
    n_rev = max(len(docs["reversal"]), 1)
    n_neg = max(len(docs["hard_negative"]), 1)
    ranked = sorted(rev.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return [(g, c / n_rev, neg[g] / n_neg) for g, c in ranked]


def variety_report(
    rows: Iterable[tuple[str, str, str, str, str] | VarietyTurn],
    seed: int = 0,
    n_splits: int = 10,
) -> VarietyReport:
    """Compute the variety report.

    rows: (arc_id, label, family, template_id, turn_text), label in {"reversal",
    "hard_negative"}; several rows may share an arc_id (all its turns go to the same side of
    every split). seed: the first split's seed; split i uses seed + i.
    """
    turns: list[VarietyTurn] = []
    arc_label: dict[str, str] = {}
    for r in rows:
        t = r if isinstance(r, VarietyTurn) else VarietyTurn(*r)
        if t.label not in LABELS:
            raise ValueError(f"arc {t.arc_id}: label {t.label!r} is not one of {LABELS}")
        if arc_label.setdefault(t.arc_id, t.label) != t.label:
            raise ValueError(f"arc {t.arc_id} has turns with two labels")
        turns.append(t)
    templates: dict[str, set[str]] = defaultdict(set)
    family_label: dict[str, str] = {}
    for t in turns:
        templates[t.family].add(t.template_id)
        family_label[t.family] = t.label
    fams = sorted(templates, key=lambda f: (LABELS.index(family_label[f]), f))
    cues = cue_shares(turns)
    nb_acc: list[float] = []
    lr_acc: list[float] = []
    for i in range(n_splits):
        nb, lr = heldout_accuracy(turns, seed + i)
        nb_acc.append(nb)
        lr_acc.append(lr)
    top_cue, top_share, top_neg = cues[0] if cues else ("", 0.0, 0.0)
    return VarietyReport(
        n_turns={lab: sum(t.label == lab for t in turns) for lab in LABELS},
        n_arcs={lab: sum(v == lab for v in arc_label.values()) for lab in LABELS},
        templates_per_family={f: len(templates[f]) for f in fams},
        family_label=family_label,
        max_cue_share=top_share,
        max_cue=top_cue,
        max_cue_negative_share=top_neg,
        top_cues=cues,
        bow_accuracy_nb=nb_acc[0],
        bow_accuracy_lr=lr_acc[0],
        bow_split_accuracies_nb=nb_acc,
        bow_split_accuracies_lr=lr_acc,
        seed=seed,
    )
