"""Why TWIST-LoCoMo 2.0 fails the shortcut gates it fails: figures for the lead, not a gate.

    .venv/bin/python benchmarks/locomo2_gate_diagnosis.py [--locomo PATH] [--skip-injected]

Builds the 2.0 payload in memory (never writes a key) and prints
1. Track A / B contrast pairing: how many items share their exact text (A: target turns, B:
   draft text; and B's wording skeleton) with an item of the other label in another
   conversation, and the in-sample ceiling of ANY rule that reads the text alone (majority label
   per distinct text, balanced accuracy; an upper bound, since it is fitted on the items it
   scores);
2. every recipe of the A.text, A.nontext, B.text and B.skeleton gates, leave one conversation
   out, once on the plain split (shortcut battery revision 1) and once as the gate runs it since
   revision 2: the twins of a balanced contrast set (items of the same bank member) kept out of
   each other's training, so that no model can memorise a twin's label;
3. find.injected parts: leave-one-conversation-out AUC of logistic regression on text only and
   on non-text features only, over all turns and over the original sessions only (appended
   sessions hold only our turns), and the strongest single non-text feature (raw AUC, folded).
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.preprocessing import StandardScaler

from twistbench.datasets.locomo import load_locomo
from twistbench.datasets.twist_locomo import dataset_from_payload
from twistbench.itemgen.locomo2 import build_locomo2
from twistbench.model import ReversalArc
from twistbench.validation.baselines import (
    Recipe,
    balanced_contrast_sets,
    folded,
    hashed_text,
    logo_predict,
    nontext_recipes,
    skeleton_lookup_recipe,
    text_recipes,
)
from twistbench.validation.features import Lexicon, TurnIndex, injected_turns
from twistbench.validation.shortcuts import _Context, arc_features


def pairing(texts: list[str], y: np.ndarray, groups: np.ndarray) -> tuple[int, float]:
    """(items whose exact text occurs with the other label in another group, in-sample ceiling
    of a text-only rule)."""
    where = defaultdict(set)
    for t, lab, g in zip(texts, y, groups):
        where[t].add((int(lab), g))
    twinned = sum(any(lab != int(v) and g2 != g for lab, g2 in where[t])
                  for t, v, g in zip(texts, y, groups))
    votes = defaultdict(Counter)
    for t, v in zip(texts, y):
        votes[t][int(v)] += 1
    # ties go to the minority-class guess half the time: score both and take the better
    best = max(balanced_accuracy_score(y, [votes[t].most_common(1)[0][0] if votes[t][0]
                                            != votes[t][1] else tie for t in texts])
               for tie in (0, 1))
    return twinned, best


def best_raw(recipes: list[Recipe], y: np.ndarray, groups: np.ndarray, members: list[str],
             twin_free: bool) -> tuple[float, float, str]:
    """(folded, raw, recipe) of the strongest recipe, as classifier_check picks it."""
    out = []
    for r in recipes:
        twins = balanced_contrast_sets(members, y) if twin_free else None
        ev = logo_predict(r, y, groups, twins)
        raw = ev.balanced_accuracy(y)
        out.append((folded(raw), raw, r.label))
    return max(out)


def loco_auc(x, y: np.ndarray, groups: np.ndarray, scale: bool) -> float:
    scores = np.zeros(len(y))
    for g in np.unique(groups):
        test, train = groups == g, groups != g
        xt, xs = x[train], x[test]
        if scale:
            sc = StandardScaler().fit(xt)
            xt, xs = sc.transform(xt), sc.transform(xs)
        model = LogisticRegression(max_iter=2000, class_weight="balanced").fit(xt, y[train])
        scores[test] = model.decision_function(xs)
    return float(roc_auc_score(y, scores))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo", default="/work/shared/data/locomo/locomo10.json")
    ap.add_argument("--skip-injected", action="store_true", help="skip part 3 (minutes)")
    args = ap.parse_args()
    payload, report = build_locomo2(args.locomo)
    ds = dataset_from_payload(load_locomo(args.locomo), payload, version=report.version,
                              key_sha256="", key_file="(memory)")
    turns = TurnIndex(ds)
    lex = Lexicon.of(ds)

    arcs = [*ds.reversal_arcs, *ds.hard_negative_arcs]
    ya = np.array([int(isinstance(a, ReversalArc)) for a in arcs])
    ga = np.array([a.conversation for a in arcs])
    ta = [" ".join(turns.info(a.conversation, t).event.text
                   for t in (a.reversal if isinstance(a, ReversalArc) else a.turns))
          for a in arcs]
    yb = np.array([int(d.label == "contradicting") for d in ds.drafts])
    gb = np.array([d.conversation for d in ds.drafts])
    tb = [d.text for d in ds.drafts]
    sb = [lex.skeleton(t) for t in tb]
    ma = [a.meta["member"] for a in arcs]
    mb = [d.meta["member"] for d in ds.drafts]
    print("1. contrast pairing (items with an other-label twin elsewhere; text-only ceiling)")
    for name, texts, y, g in (("A target text", ta, ya, ga), ("A bank member", ma, ya, ga),
                              ("B draft text", tb, yb, gb), ("B skeleton", sb, yb, gb),
                              ("B bank member", mb, yb, gb)):
        twinned, ceiling = pairing(texts, y, g)
        print(f"   {name:14s} {twinned}/{len(y)} twinned; distinct texts {len(set(texts))}; "
              f"ceiling {ceiling:.3f}")
    print("2. the gate's own recipes (folded / raw balanced accuracy of the strongest), leave "
          "one conversation out: plain split (battery rev 1), and as gated since rev 2 (contrast "
          "twins kept out of each other's training)")
    ctx = _Context(ds, turns, lex, 0, False)
    targets = [turns.info(a.conversation, (a.reversal if isinstance(a, ReversalArc)
                                           else a.turns)[-1]) for a in arcs]
    xa = np.hstack([turns.features(targets),
                    np.array([arc_features(ctx, a, t) for a, t in zip(arcs, targets)])])
    for name, recipes, y, g, m in (
            ("A.text", text_recipes(ta), ya, ga, ma),
            ("A.nontext", nontext_recipes(xa, 0), ya, ga, ma),
            ("B.text", text_recipes(tb), yb, gb, mb),
            ("B.skeleton", [skeleton_lookup_recipe(sb)], yb, gb, mb)):
        plain, gated = (best_raw(recipes, y, g, m, tf) for tf in (False, True))
        print(f"   {name:10s} plain split {plain[0]:.3f} / {plain[1]:.3f} ({plain[2]}); as gated "
              f"{gated[0]:.3f} / {gated[1]:.3f} ({gated[2]})")

    if args.skip_injected:
        return
    print("3. find.injected parts (LOCO logistic regression AUC, raw)")
    infos = turns.infos
    ours = injected_turns(ds)
    y = np.array([int((i.event.conversation, i.event.id) in ours) for i in infos])
    g = np.array([i.event.conversation for i in infos])
    x = turns.features(infos)
    words = hashed_text([i.event.text for i in infos])["word 1-2-grams"]
    by_session = defaultdict(list)
    for k, i in enumerate(infos):
        by_session[(i.event.conversation, i.session_rank)].append(y[k])
    original = np.array([not all(by_session[(i.event.conversation, i.session_rank)])
                         for i in infos])
    print(f"   turns {len(y)}, ours {int(y.sum())}, ours in appended (all-ours) sessions "
          f"{int(y[~original].sum())}")
    for label, mask in (("all sessions", np.ones(len(y), bool)),
                        ("original sessions only", original)):
        print(f"   {label}: text {loco_auc(words[mask], y[mask], g[mask], False):.3f}, "
              f"non-text {loco_auc(x[mask], y[mask], g[mask], True):.3f}")
    singles = []
    for j, name in enumerate(turns.feature_names()):
        col = x[original, j]
        if np.ptp(col) == 0:
            continue
        auc = roc_auc_score(y[original], col)
        singles.append((abs(auc - 0.5) + 0.5, name, auc))
    print("   strongest single features (original sessions): " + ", ".join(
        f"{n} {a:.3f}" for _, n, a in sorted(singles, reverse=True)[:6]))


if __name__ == "__main__":
    main()
