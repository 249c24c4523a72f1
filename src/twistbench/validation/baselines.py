"""The shortcut baselines: classifiers evaluated leave-one-group-out, the exact-skeleton lookup,
and the answer baselines of Tracks C and D.

Evaluation (every classifier): scikit-learn's LeaveOneGroupOut over conversations (LoCoMo) or
workspaces (TWIST-CS) — each group is predicted by a model trained on all the others, never a
random split. Out-of-fold predictions are pooled over the folds; balanced accuracy comes from the
pooled predictions, AUC from the pooled scores. A value below chance is a leak too (the same text
under opposite labels in different groups makes a classifier systematically wrong), so every
value is also reported folded: |v - 0.5| + 0.5, and the folded value is the one gated.

Every classifier weighs the classes equally (class_weight="balanced"; naive Bayes with uniform
priors) so that a held-out group whose label mix differs from the rest is not predicted from the
training prior, which would read as a below-chance "leak" that the text does not carry.

Text features are hashed (HashingVectorizer: stateless, so nothing of a held-out group reaches
training through a vocabulary); TF-IDF weights are fitted on the training folds only.
"""

from __future__ import annotations

import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.model_selection import LeaveOneGroupOut
from sklearn.naive_bayes import MultinomialNB
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

FitPredict = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
HASH_FEATURES = 2**18


def folded(value: float) -> float:
    """Distance from chance, mapped back onto [0.5, 1]: 0.2 and 0.8 both give 0.8."""
    return abs(value - 0.5) + 0.5


@dataclass
class Recipe:
    """One classifier on one feature set: fit(train idx, test idx, y) -> (predictions, scores)."""

    model: str
    features: str
    fit_predict: FitPredict

    @property
    def label(self) -> str:
        return f"{self.model} on {self.features}"


@dataclass
class Evaluated:
    recipe: Recipe
    predictions: np.ndarray
    scores: np.ndarray

    def balanced_accuracy(self, y: np.ndarray) -> float:
        return float(balanced_accuracy_score(y, self.predictions))

    def auc(self, y: np.ndarray) -> float:
        return float(roc_auc_score(y, self.scores))


def logo_predict(recipe: Recipe, y: np.ndarray, groups: np.ndarray,
                 twins: Sequence[str | None] | None = None) -> Evaluated:
    """Out-of-fold predictions and scores of `recipe`, one held-out group at a time.

    twins: per sample, the id of its balanced contrast set (None: not in one). Training then
    leaves out every sample whose contrast set has a member in the held-out group, so no model
    can score by memorising a held-out item's twin (see balanced_contrast_sets)."""
    pred = np.zeros(len(y), dtype=np.int64)
    score = np.zeros(len(y), dtype=np.float64)
    for train, test in LeaveOneGroupOut().split(np.zeros(len(y)), y, groups):
        if twins is not None:
            held = {twins[i] for i in test} - {None}
            train = np.array([i for i in train if twins[i] not in held], dtype=np.int64)
            if not len(train):
                pred[test], score[test] = 0, 0.5  # nothing left to learn from: no opinion
                continue
        if len(np.unique(y[train])) < 2:
            # one class only in training: no classifier can be fitted, it can only say that class
            pred[test] = y[train][0]
            score[test] = float(y[train][0])
            continue
        p, s = recipe.fit_predict(train, test, y)
        pred[test] = p
        score[test] = s
    return Evaluated(recipe, pred, score)


def balanced_contrast_sets(members: Sequence[str | None], y: np.ndarray
                           ) -> list[str | None]:
    """Per sample, its contrast-set id where that set is balanced, else None.

    A contrast set is the items built from one bank line (one target utterance, one draft
    wording) with the record deciding the label. When a set holds exactly as many items of each
    label, its text carries no label information by construction (a text-only rule scores 0.5 on
    it), but leave-one-group-out training on a twin placed in another group teaches the model the
    twin's label, which is the held-out item's opposite: raw accuracy 0, folded 1. That is a leak
    of the split, not of the text, so such twins are left out of training. A set used for one
    label more often than the other is NOT balanced: its text does predict the label, and the
    model is left free to learn that."""
    counts: dict[str, list[int]] = {}
    for m, v in zip(members, y):
        if m is not None:
            counts.setdefault(m, [0, 0])[int(v)] += 1
    balanced = {m for m, (neg, pos) in counts.items() if neg == pos > 0}
    return [m if m in balanced else None for m in members]


@dataclass
class FitCount:
    """Fits made inside count_nonconverged(), and how many stopped at max_iter unconverged."""

    fits: int = 0
    nonconverged: int = 0


_counters: list[FitCount] = []


@contextmanager
def count_nonconverged() -> Iterator[FitCount]:
    """Count the fits (and the unconverged ones) made inside. The battery fits hundreds of models
    (one per held-out group, per recipe); sklearn's ConvergenceWarning for each would flood the
    console, so _fit catches it and counts it here instead, for the check to record."""
    counter = FitCount()
    _counters.append(counter)
    try:
        yield counter
    finally:
        _counters.remove(counter)


def _fit(model, x_train, y_train, x_test) -> tuple[np.ndarray, np.ndarray]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(x_train, y_train)
    unconverged = False
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            unconverged = True
        else:  # any other warning is not ours to hide
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    for counter in _counters:
        counter.fits += 1
        counter.nonconverged += unconverged
    if unconverged and not _counters:
        # a fit outside any counting scope: nobody records it, so say it as sklearn would
        warnings.warn(f"{type(model).__name__} did not converge", ConvergenceWarning,
                      stacklevel=2)
    return model.predict(x_test), model.predict_proba(x_test)[:, 1]


def hashed_text(texts: Sequence[str]) -> dict[str, sparse.csr_matrix]:
    """Word 1-2-gram and character 3-5-gram counts (within word boundaries), hashed."""
    # "?" and "!" are words here: a question mark is the first thing a rule-writer tries
    word = HashingVectorizer(analyzer="word", ngram_range=(1, 2),
                             token_pattern=r"(?u)\b\w+\b|[?!]",
                             alternate_sign=False, norm=None, n_features=HASH_FEATURES)
    char = HashingVectorizer(analyzer="char_wb", ngram_range=(3, 5), alternate_sign=False,
                             norm=None, n_features=HASH_FEATURES)
    return {"word 1-2-grams": word.transform(texts).tocsr(),
            "char 3-5-grams": char.transform(texts).tocsr()}


def _tfidf(x: sparse.csr_matrix, train: np.ndarray, test: np.ndarray
           ) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
    tf = TfidfTransformer(sublinear_tf=True).fit(x[train])
    return tf.transform(x[train]), tf.transform(x[test])


SAGA_MIN_SAMPLES = 2000


def _logistic(n_train: int = 0) -> LogisticRegression:
    # On thousands of hashed n-gram rows saga is several times faster than liblinear (seeded,
    # so deterministic); on a few hundred rows liblinear is fast and saga can crawl (identical
    # texts under opposite labels kept it from converging in 2000 epochs).
    if n_train >= SAGA_MIN_SAMPLES:
        return LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000, solver="saga",
                                  tol=1e-3, random_state=0)
    return LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000, solver="liblinear")


def text_recipes(texts: Sequence[str] | dict[str, sparse.csr_matrix], *, rules: bool = True
                 ) -> list[Recipe]:
    """Logistic regression (TF-IDF) and multinomial naive Bayes (counts) on word 1-2-grams and on
    character 3-5-grams (texts, or their hashed_text() already computed); with `rules`, also a
    depth-3 decision tree on word 1-2-gram presence (the few hand rules a reviewer writes:
    "contradicting unless it is a question or says 'I know'")."""
    out: list[Recipe] = []
    hashed = texts if isinstance(texts, dict) else hashed_text(texts)
    for name, x in hashed.items():
        def lr(train: np.ndarray, test: np.ndarray, y: np.ndarray, x=x):
            xtr, xte = _tfidf(x, train, test)
            return _fit(_logistic(len(train)), xtr, y[train], xte)

        def nb(train: np.ndarray, test: np.ndarray, y: np.ndarray, x=x):
            return _fit(MultinomialNB(alpha=0.5, fit_prior=False), x[train], y[train], x[test])

        out += [Recipe("logistic regression", name, lr), Recipe("naive Bayes", name, nb)]
    if rules:
        present = (hashed["word 1-2-grams"] > 0).astype(np.float64).tocsc()

        def tree(train: np.ndarray, test: np.ndarray, y: np.ndarray):
            model = DecisionTreeClassifier(max_depth=3, min_samples_leaf=3,
                                           class_weight="balanced", random_state=0)
            return _fit(model, present[train], y[train], present[test])

        out.append(Recipe("decision tree (depth 3)", "word 1-2-gram presence", tree))
    return out


def nontext_recipes(x: np.ndarray, seed: int = 0, *, forest: bool = True) -> list[Recipe]:
    """Logistic regression (standardised), a decision stump (the best single feature and
    threshold: "turn length alone"), gradient boosting and (unless `forest` is False) a random
    forest on non-text features."""

    def lr(train: np.ndarray, test: np.ndarray, y: np.ndarray):
        sc = StandardScaler().fit(x[train])
        return _fit(_logistic(), sc.transform(x[train]), y[train], sc.transform(x[test]))

    def gb(train: np.ndarray, test: np.ndarray, y: np.ndarray):
        model = HistGradientBoostingClassifier(max_iter=150, learning_rate=0.1, max_leaf_nodes=15,
                                               min_samples_leaf=5, class_weight="balanced",
                                               early_stopping=False, random_state=seed)
        return _fit(model, x[train], y[train], x[test])

    def rf(train: np.ndarray, test: np.ndarray, y: np.ndarray):
        model = RandomForestClassifier(n_estimators=100, min_samples_leaf=2, n_jobs=1,
                                       class_weight="balanced_subsample", random_state=seed)
        return _fit(model, x[train], y[train], x[test])

    def stump(train: np.ndarray, test: np.ndarray, y: np.ndarray):
        model = DecisionTreeClassifier(max_depth=1, class_weight="balanced", random_state=0)
        return _fit(model, x[train], y[train], x[test])

    out = [Recipe("logistic regression", "non-text features", lr),
           Recipe("single-feature threshold (decision stump)", "non-text features", stump),
           Recipe("gradient boosting", "non-text features", gb)]
    if forest:
        out.append(Recipe("random forest", "non-text features", rf))
    return out


def combined_recipe(texts: Sequence[str] | dict[str, sparse.csr_matrix], x: np.ndarray
                    ) -> Recipe:
    """Logistic regression on word + character n-grams (TF-IDF) and standardised non-text
    features together. texts: the texts, or their hashed_text() already computed."""
    hashed = texts if isinstance(texts, dict) else hashed_text(texts)

    def fit_predict(train: np.ndarray, test: np.ndarray, y: np.ndarray):
        parts_tr, parts_te = [], []
        for m in hashed.values():
            a, b = _tfidf(m, train, test)
            parts_tr.append(a)
            parts_te.append(b)
        # z-scores clipped to +-3 and scaled by 1/sqrt(columns): each block has a row norm near
        # the TF-IDF blocks' 1, which keeps saga's step size (and its run time) sane
        sc = StandardScaler().fit(x[train])
        scale = 1.0 / np.sqrt(max(x.shape[1], 1))
        for rows, parts in ((train, parts_tr), (test, parts_te)):
            parts.append(sparse.csr_matrix(np.clip(sc.transform(x[rows]), -3, 3) * scale))
        return _fit(_logistic(len(train)), sparse.hstack(parts_tr).tocsr(), y[train],
                    sparse.hstack(parts_te).tocsr())

    return Recipe("logistic regression", "text + non-text features", fit_predict)


def skeleton_lookup_recipe(skeletons: Sequence[str]) -> Recipe:
    """The exact-skeleton lookup: a held-out text whose skeleton occurs in training gets the
    label that skeleton has most often there (each class's count divided by the class's size, so
    the lookup is balanced like the classifiers); an unseen skeleton gets the training majority."""
    sk = np.asarray(skeletons, dtype=object)

    def fit_predict(train: np.ndarray, test: np.ndarray, y: np.ndarray):
        size = Counter(int(v) for v in y[train])
        table: dict[str, Counter[int]] = defaultdict(Counter)
        for s, v in zip(sk[train], y[train]):
            table[s][int(v)] += 1
        majority = max((0, 1), key=lambda c: (size[c], -c))
        pred = np.empty(len(test), dtype=np.int64)
        score = np.empty(len(test), dtype=np.float64)
        for i, s in enumerate(sk[test]):
            if s not in table:
                pred[i], score[i] = majority, 0.5
                continue
            rate = {c: table[s][c] / size[c] for c in (0, 1)}
            score[i] = rate[1] / (rate[0] + rate[1])
            pred[i] = int(rate[1] > rate[0]) if rate[0] != rate[1] else majority
        return pred, score

    return Recipe("exact-skeleton lookup", "skeletons (names, numbers, slot values normalised)",
                  fit_predict)


def skeleton_coverage(skeletons: Sequence[str], groups: np.ndarray) -> float:
    """Share of texts whose skeleton also occurs in another group (what the lookup can use)."""
    where: dict[str, set] = defaultdict(set)
    for s, g in zip(skeletons, groups):
        where[s].add(g)
    hits = sum(len(where[s] - {g}) > 0 for s, g in zip(skeletons, groups))
    return hits / len(skeletons) if len(skeletons) else 0.0
