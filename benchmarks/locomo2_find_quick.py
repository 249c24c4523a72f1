"""Quick read of the two candidate-finding gates on TWIST-LoCoMo 2.0, for authors at work.

    .venv/bin/python benchmarks/locomo2_find_quick.py [--conversation conv-26 ...] [--words 20]

Builds the 2.0 payload in memory from the authoring files (never writes a key) and runs the
gate's TEXT recipes (logistic regression and naive Bayes on hashed word 1-2-grams and character
3-5-grams, leave one conversation out, exactly as validation/shortcuts.py builds them) for
find.injected (our turns vs LoCoMo's) and find.items (item turns vs every other turn). The gate
itself also tries non-text and combined recipes and takes the strongest; text is what fails today
(`benchmarks/locomo2_gate_diagnosis.py`, part 3). Prints, per gate, the strongest recipe's AUC
(folded) overall and restricted to each conversation (scores of the model that did not see it),
then for the named conversations the turns the model finds most "ours" / most "item", and the
word 1-2-grams whose document frequency differs most between the two sides. For find.injected
it also splits our turns in two: item turns vs LoCoMo's, and our non-item turns (chat written in
the register, distractors) vs LoCoMo's, so the share of the signal that is item content and the
share that is authorship shows.
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.metrics import roc_auc_score

from twistbench.datasets.locomo import load_locomo
from twistbench.datasets.twist_locomo import dataset_from_payload
from twistbench.itemgen.locomo2 import build_locomo2
from twistbench.validation.baselines import folded, hashed_text, logo_predict, text_recipes
from twistbench.validation.features import TurnIndex, injected_turns, item_turns


def auc(y: np.ndarray, s: np.ndarray) -> float:
    return folded(float(roc_auc_score(y, s))) if 0 < y.sum() < len(y) else float("nan")


def held_out_scores(recipe, y: np.ndarray, groups: np.ndarray, folds: list[str]) -> np.ndarray:
    """Scores of each named conversation's turns by `recipe` trained on every other one."""
    score = np.zeros(len(y))
    for g in folds:
        test, train = np.where(groups == g)[0], np.where(groups != g)[0]
        score[test] = recipe.fit_predict(train, test, y)[1]
    return score


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--locomo", default="/work/shared/data/locomo/locomo10.json")
    ap.add_argument("--conversation", action="append", default=[],
                    help="print the telling turns and words of this conversation (repeatable)")
    ap.add_argument("--words", type=int, default=20, help="how many telling n-grams to print")
    ap.add_argument("--turns", type=int, default=12, help="how many telling turns to print")
    ap.add_argument("--only", action="store_true",
                    help="only the named conversations' folds and only the logistic regressions "
                         "(the strongest recipes so far): about a minute instead of four; the "
                         "whole-key figure is then not printed")
    args = ap.parse_args()
    payload, report = build_locomo2(args.locomo)
    ds = dataset_from_payload(load_locomo(args.locomo), payload, version=report.version,
                              key_sha256="", key_file="(memory)")
    infos = TurnIndex(ds).infos
    texts = [i.event.text for i in infos]
    groups = np.array([i.event.conversation for i in infos])
    recipes = text_recipes(hashed_text(texts), rules=False)
    if args.only:
        recipes = [r for r in recipes if r.model.startswith("logistic")]
    ours, items = injected_turns(ds), item_turns(ds)
    key = [(i.event.conversation, i.event.id) for i in infos]
    for gate, limit, marked in (("find.injected", 0.80, ours), ("find.items", 0.75, items)):
        y = np.array([int(k in marked) for k in key])
        if args.only:
            folds = [g for g in np.unique(groups) if g in args.conversation]
            runs = [(r.label, held_out_scores(r, y, groups, folds)) for r in recipes]
            fold = np.isin(groups, folds)
            value, label, score = max(((auc(y[fold], s[fold]), lab, s) for lab, s in runs),
                                      key=lambda t: t[0])
        else:
            folds = list(np.unique(groups))
            runs = [(r.label, logo_predict(r, y, groups).scores) for r in recipes]
            value, label, score = max(((auc(y, s), lab, s) for lab, s in runs),
                                      key=lambda t: t[0])
        per = "  ".join(f"{g}:{auc(y[groups == g], score[groups == g]):.3f}" for g in folds)
        if gate == "find.injected":
            scored = np.isin(groups, folds)
            mine = y == 1
            is_item = np.array([k in items for k in key])
            split = []
            for name, side in (("item turns", mine & is_item), ("non-item turns", mine & ~is_item)):
                keep = scored & (side | ~mine)
                split.append(f"{name} ({int((keep & mine).sum())}) "
                             f"{auc(y[keep], score[keep]):.3f}")
            per += "\n  ours vs LoCoMo's, split: " + "; ".join(split)
        scope = "named conversations only" if args.only else "whole key"
        print(f"{gate} {value:.3f} ({scope}; gate <= {limit:.2f}; strongest text recipe: "
              f"{label}; {int(y.sum())} of {len(y)} turns marked)\n  per conversation: {per}")
        for conv in args.conversation:
            idx = np.where(groups == conv)[0]
            if not len(idx):
                raise SystemExit(f"no conversation {conv!r}")
            top = idx[np.argsort(-score[idx])][: args.turns]
            print(f"  {conv}: the {args.turns} turns the model finds most {gate.split('.')[1]}:")
            for i in top:
                tag = "MARKED" if y[i] else "other "
                print(f"    {tag} {infos[i].event.id:>7s} {score[i]:+.2f} {texts[i][:110]}")
            cv = CountVectorizer(ngram_range=(1, 2), min_df=3, token_pattern=r"(?u)\b\w+\b|[?!]")
            x = cv.fit_transform(texts) > 0
            vocab = np.array(cv.get_feature_names_out())
            df1 = np.asarray(x[y == 1].mean(0)).ravel()
            df0 = np.asarray(x[y == 0].mean(0)).ravel()
            ratio = np.log((df1 + 2e-3) / (df0 + 2e-3))
            for side, order in (("marked >> other", np.argsort(-ratio)),
                                ("other >> marked", np.argsort(ratio))):
                words = "; ".join(f"{vocab[j]} {df1[j]:.3f}/{df0[j]:.3f}"
                                  for j in order[: args.words])
                print(f"  {side} (share of turns, marked/other, whole key): {words}")
    lens = np.array([len(t) for t in texts])
    mine = np.array([k in ours for k in key])
    print(f"mean characters: ours {lens[mine].mean():.1f}, LoCoMo's {lens[~mine].mean():.1f}; "
          f"median {np.median(lens[mine]):.0f} vs {np.median(lens[~mine]):.0f}")


if __name__ == "__main__":
    main()
