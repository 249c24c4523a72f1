"""Shortcut figures for the TWIST-LoCoMo 2.0 conversations written so far, beside 1.0 on the same
conversations. A stand-in until the shortcut battery (validation/shortcuts.py, issue 11) can run
leave-one-conversation-out on the full key: with fewer than three conversations written there is
nothing to leave out, so the injected-vs-original classifier here is trained and tested on
held-out SESSIONS of the same conversation (5-fold GroupKFold), which is easier for the classifier
than the gate's held-out conversation.

    .venv/bin/python benchmarks/locomo2_partial_gates.py [--locomo PATH] [--conversations conv-26]

Prints, per key: injected-vs-original AUC (text, non-text, both), Track C recency baselines
(current-answer rate by the structural judge), Track D output masking with the heuristic system's
regex governor (leak / over-block, assuming retrieval returns the planted turn: the masking
baseline's best case), and the share of exact-duplicate injected turns.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from twistbench.datasets.twist_locomo import injected_turn_ids


def _features(conv, ev, i, evs) -> list[float]:
    text = ev.text
    words = text.split()
    prev = evs[i - 1] if i else None
    return [len(text), len(words), text.count("?"), text.count("!"), text.count(","),
            sum(c.isdigit() for c in text), float(text.rstrip().endswith("?")),
            float(prev is not None and prev.text.rstrip().endswith("?")),
            i / max(len(evs) - 1, 1), len(evs), ev.timestamp.second, ev.timestamp.hour,
            float("[shares an image:" in text)]


def injected_auc(conv, ours: set[tuple[str, str]]) -> dict[str, float]:
    from scipy.sparse import csr_matrix, hstack
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import GroupKFold

    rows, texts, y, groups = [], [], [], []
    sessions = conv.sessions()
    n_sessions = len(sessions)
    for rank, (s, evs) in enumerate(sessions):
        for i, ev in enumerate(evs):
            rows.append([*_features(conv, ev, i, evs), rank / max(n_sessions - 1, 1)])
            texts.append(ev.text)
            y.append(int((conv.id, ev.id) in ours))
            groups.append(s)
    x = np.array(rows, float)
    y_arr, g = np.array(y), np.array(groups)
    out = {}
    for name in ("text", "nontext", "both"):
        scores = np.zeros(len(y_arr))
        for tr, te in GroupKFold(n_splits=5).split(x, y_arr, g):
            if name == "nontext":
                clf = GradientBoostingClassifier(random_state=0).fit(x[tr], y_arr[tr])
                scores[te] = clf.predict_proba(x[te])[:, 1]
                continue
            w = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
            c = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True)
            mats = [w.fit_transform([texts[i] for i in tr]),
                    c.fit_transform([texts[i] for i in tr])]
            tmats = [w.transform([texts[i] for i in te]), c.transform([texts[i] for i in te])]
            if name == "both":
                mu, sd = x[tr].mean(0), x[tr].std(0) + 1e-9
                mats.append(csr_matrix((x[tr] - mu) / sd))
                tmats.append(csr_matrix((x[te] - mu) / sd))
            clf = LogisticRegression(max_iter=3000, class_weight="balanced")
            clf.fit(hstack(mats).tocsr(), y_arr[tr])
            scores[te] = clf.decision_function(hstack(tmats).tocsr())
        out[name] = round(float(roc_auc_score(y_arr, scores)), 3)
    return out


def recency(dataset) -> dict[str, str]:
    from twistbench.judges.structural import classify_answer, contains_any

    rates = {}
    for name in ("most_recent", "first", "all"):
        ok = n = 0
        for chain in dataset.update_chains:
            conv = dataset.conversation(chain.conversation)
            forms = [f for s in chain.states for f in s.surface_forms()]
            hits = [e for e in conv.events if contains_any(e.text, forms)]
            if not hits:
                continue
            text = {"most_recent": hits[-1].text, "first": hits[0].text,
                    "all": " ".join(e.text for e in hits)}[name]
            n += 1
            ok += classify_answer(chain, text).outcome in ("current", "history")
        rates[name] = f"{ok}/{n} = {ok / max(n, 1):.2f}"
    return rates


def masking(dataset) -> dict[str, str]:
    from twistbench.model import Answer
    from twistbench.systems.heuristic import _ADDRESS, _EMAIL, _PHONE
    from twistbench.tracks.d_safety import leaked, over_blocked

    def mask(text: str) -> str:
        for pat in (_EMAIL, _PHONE, _ADDRESS):
            text = pat.sub("[REDACTED]", text)
        return text

    leaks = probes = 0
    for p in dataset.pii_plants:
        ev = dataset.conversation(p.conversation).event_index()
        answer = Answer(text=mask(" ".join(ev[t].text for t in [p.turn, *p.turns])))
        for _ in p.probes:
            probes += 1
            leaks += leaked(p, answer)
    blocked = Counter()
    total = Counter()
    for e in dataset.emotional_negatives:
        ev = dataset.conversation(e.conversation).event_index()
        total[e.family] += 1
        blocked[e.family] += over_blocked(e, Answer(text=mask(ev[e.turn].text)))
    return {"leak": f"{leaks}/{probes} = {leaks / max(probes, 1):.2f}",
            **{f"over_block_{k}": f"{blocked[k]}/{v}" for k, v in total.items()}}


def duplicates(dataset) -> str:
    ours = injected_turn_ids(dataset)
    texts = [re.sub(r"\s+", " ", e.text.strip()) for c in dataset.conversations for e in c.events
             if (c.id, e.id) in ours]
    c = Counter(texts)
    dup = sum(v for v in c.values() if v > 1)
    return f"{dup}/{len(texts)} = {dup / max(len(texts), 1):.3f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"
                                            / "locomo" / "locomo10.json"))
    ap.add_argument("--conversations", default=None)
    args = ap.parse_args()
    from twistbench.datasets.keyfile import write_key
    from twistbench.datasets.twist_locomo import load_locomo_dataset
    from twistbench.itemgen.locomo2 import KEY_NAME, build_locomo2, written_conversations
    from twistbench.model import Dataset

    convs = args.conversations.split(",") if args.conversations else written_conversations()
    payload, report = build_locomo2(args.locomo, conversations=convs)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.json"
        write_key(path, KEY_NAME, report.version, payload)
        v2 = load_locomo_dataset(args.locomo, path)
    full1 = load_locomo_dataset(args.locomo)
    keep = set(convs)
    v1 = Dataset(**{**{f: [x for x in getattr(full1, f) if x.conversation in keep]
                       for f in Dataset.ITEM_FIELDS},
                    "name": full1.name, "version": full1.version, "key_sha256": full1.key_sha256,
                    "conversations": [c for c in full1.conversations if c.id in keep]})
    for label, ds in (("1.0", v1), ("2.0", v2)):
        print(f"== TWIST-LoCoMo {label} on {', '.join(convs)}")
        for conv in ds.conversations:
            print(f"  injected vs original AUC ({conv.id}, held-out sessions): "
                  f"{injected_auc(conv, injected_turn_ids(ds))}")
        print(f"  Track C recency baselines, current-answer rate: {recency(ds)}")
        print(f"  Track D regex masking (best case): {masking(ds)}")
        print(f"  exact-duplicate injected turns: {duplicates(ds)}")


if __name__ == "__main__":
    main()
