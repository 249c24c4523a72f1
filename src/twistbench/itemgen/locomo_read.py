"""Read one TWIST-LoCoMo 2.0 conversation in place: the author's tool
(docs/keys/locomo-authoring.md).

    python -m twistbench.itemgen.locomo_read conv-26               # conversation, our turns marked
    python -m twistbench.itemgen.locomo_read conv-26 --plain       # the same without marks
    python -m twistbench.itemgen.locomo_read conv-26 --session 12  # one session
    python -m twistbench.itemgen.locomo_read conv-26 --check       # every rule; exit 1 on a problem
                                                                   # (and observations to read)
    python -m twistbench.itemgen.locomo_read conv-26 --stats       # voice figures and a classifier
    python -m twistbench.itemgen.locomo_read conv-26 --boundaries  # where an exchange may go
    python -m twistbench.itemgen.locomo_read conv-26 --qa          # the conversation's LoCoMo QA
    python -m twistbench.itemgen.locomo_read conv-26 --restyled [DIR]  # with the restyle applied

--restyled applies the conversation's restyle file (banks/locomo/restyle, or DIR;
itemgen/locomo_restyle.py) as the build does: restyled turns are marked '~' and their authored
text is shown under them, so every restyled line can be read in place before it is committed;
with --check, --stats or --plain it checks, measures or shows the restyled conversation.

The LoCoMo file is found as the rest of twistbench finds it (../shared/data/locomo/locomo10.json
beside the checkout, TWIST_SHARED_DATA overrides) or given with --locomo. Without an authoring file
the original conversation is shown (so --boundaries and --stats work before you start).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import textwrap
from collections import Counter
from pathlib import Path

from twistbench.datasets.locomo import load_locomo
from twistbench.errors import InputError
from twistbench.itemgen.locomo_authoring import (
    Placed,
    Turn,
    authoring_path,
    check_conversation,
    qa_spans,
    strip_image,
    unread_observations,
)
from twistbench.itemgen.locomo_plan import load_contrast, load_plan, read_toml
from twistbench.itemgen.locomo_restyle import insert_turns, restyled_documents


def default_locomo() -> Path:
    base = Path(os.environ.get("TWIST_SHARED_DATA",
                               Path(__file__).resolve().parents[4] / "shared" / "data"))
    return base / "locomo" / "locomo10.json"


def load(conv_id: str, locomo: Path, crisis: bool, restyle: Path | None = None,
         restyled: bool = False) -> tuple[Placed, object, dict[str, str]]:
    """The placed conversation, the corpus, and (with `restyled`) ref -> authored text of every
    turn the restyle file replaced (`restyle`: its folder, default the committed one)."""
    corpus = load_locomo(locomo)
    path = authoring_path(conv_id)
    raw = read_toml(path) if path.exists() else {}
    cpath = authoring_path(conv_id, crisis=True)
    craw = read_toml(cpath) if crisis and cpath.exists() else None
    authored: dict[str, str] = {}
    if restyled:
        before = _turn_texts(raw, craw)
        raw, craw, _ = restyled_documents(conv_id, raw, craw, restyle)
        after = _turn_texts(raw, craw)
        authored = {r: t for r, t in before.items() if after.get(r) != t}
    placed = check_conversation(corpus, conv_id, load_plan(), load_contrast(), raw, craw)
    return placed, corpus, authored


def _turn_texts(*docs: dict | None) -> dict[str, str]:
    return {ref: str(t.get("text", "")).strip()
            for doc in docs for ref, t, _ in insert_turns(doc) if isinstance(t, dict)}


def render(placed: Placed, plain: bool = False, session: int | None = None,
           width: int = 110, authored: dict[str, str] | None = None) -> str:
    """The conversation as text; our turns marked '+' ('~' when restyled, with the authored
    text under it) unless `plain`."""
    authored = authored or {}
    out = []
    dates = placed.conversation.meta.get("session_dates", {})
    appended = {a["session"]: a["date_text"] for a in placed.plan["appended"]}
    for s in sorted(placed.sessions):
        if session is not None and s != session:
            continue
        out.append(f"=== session {s} ({dates.get(str(s)) or appended.get(s, '')})")
        for t in placed.sessions[s]:
            mark = "" if plain else ("~ " if t.ref in authored else "+ " if t.injected
                                     else "  ")
            ref = "" if plain else f"{t.ref:>9} "
            line = f"{mark}{ref}{t.speaker}: {t.text}"
            roles = placed.roles.get(t.ref)
            body = textwrap.wrap(line, width=width, subsequent_indent=" " * 14) or [line]
            out.extend(body)
            if t.ref in authored and not plain:
                was = f"was: {authored[t.ref]}"
                out.extend(textwrap.wrap(was, width=width, initial_indent=" " * 14,
                                         subsequent_indent=" " * 19))
            if roles and not plain:
                out.append(" " * 14 + "<< " + "; ".join(roles))
    return "\n".join(out)


def _speaker_stats(turns: list[Turn]) -> str:
    if not turns:
        return "-"
    lens = [len(strip_image(t.text).split()) for t in turns]
    q = statistics.quantiles(lens, n=4) if len(lens) > 1 else [lens[0]] * 3
    excl = sum("!" in strip_image(t.text) for t in turns) / len(turns)
    ques = sum("?" in strip_image(t.text) for t in turns) / len(turns)
    img = sum("[shares an image:" in t.text for t in turns) / len(turns)
    return (f"n={len(turns):3d} words median {statistics.median(lens):4.0f} "
            f"(IQR {q[0]:.0f}-{q[2]:.0f}), '!' {excl:.0%}, '?' {ques:.0%}, image {img:.0%}")


def _openers(turns: list[Turn]) -> str:
    c = Counter()
    for t in turns:
        m = re.match(r"^([A-Za-z']+)", strip_image(t.text))
        if m:
            c[m.group(1).lower()] += 1
    return ", ".join(f"{w} {n}" for w, n in c.most_common(8))


def stats(placed: Placed) -> str:
    out = []
    for spk in placed.conversation.speakers:
        turns = [t for t in placed.turns() if t.speaker == spk]
        orig = [t for t in turns if not t.injected]
        inj = [t for t in turns if t.injected]
        out += [f"{spk}:", f"  original {_speaker_stats(orig)}",
                f"  injected {_speaker_stats(inj)}",
                f"  openers original: {_openers(orig)}", f"  openers injected: {_openers(inj)}"]
    out.append(injected_auc(placed))
    return "\n".join(out)


def injected_auc(placed: Placed) -> str:
    """Injected vs original, logistic regression on word and character n-grams plus length,
    position and image features, scored on held-out sessions (GroupKFold)."""
    try:
        # scikit-learn is the validate extra's, and heavy: loaded only for --stats
        import numpy as np
        from scipy.sparse import csr_matrix, hstack
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import GroupKFold
    except ImportError:
        return "injected-vs-original AUC: needs scikit-learn (pip install scikit-learn)"
    turns = [t for t in placed.turns() if not t.crisis]
    y = np.array([t.injected for t in turns], dtype=int)
    if y.sum() < 10 or (1 - y).sum() < 10:
        return "injected-vs-original AUC: too few injected turns yet"
    groups = np.array([t.session for t in turns])
    texts = [t.text for t in turns]
    dense = np.array([[len(strip_image(t.text).split()), t.position(),
                       "[shares an image:" in t.text,
                       strip_image(t.text).count("!"), "?" in t.text,
                       sum(c.isdigit() for c in t.text)] for t in turns], dtype=float)
    dense = (dense - dense.mean(0)) / (dense.std(0) + 1e-9)
    scores = np.zeros(len(turns))
    for tr, te in GroupKFold(n_splits=5).split(texts, y, groups):
        w = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
        c = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True)
        xtr = hstack([w.fit_transform([texts[i] for i in tr]),
                      c.fit_transform([texts[i] for i in tr]),
                      csr_matrix(dense[tr])]).tocsr()
        xte = hstack([w.transform([texts[i] for i in te]), c.transform([texts[i] for i in te]),
                      csr_matrix(dense[te])]).tocsr()
        clf = LogisticRegression(max_iter=2000, C=1.0, class_weight="balanced")
        clf.fit(xtr, y[tr])
        scores[te] = clf.decision_function(xte)
    auc = roc_auc_score(y, scores)
    len_auc = roc_auc_score(y, dense[:, 0])
    return (f"injected-vs-original AUC (this conversation, held-out sessions): {auc:.3f}; "
            f"length alone {max(len_auc, 1 - len_auc):.3f}  [{y.sum()} injected, "
            f"{(1 - y).sum()} original]")


def boundaries(placed: Placed, corpus) -> str:
    spans = qa_spans(corpus, placed.conversation)
    out = []
    for s, evs in placed.conversation.sessions():
        for k, e in enumerate(evs):
            if "?" in strip_image(e.text) or k in spans.get(s, set()):
                continue
            nxt = evs[k + 1] if k + 1 < len(evs) else None
            first_words = " ".join(strip_image(nxt.text).split()[:6]) if nxt else "(end of session)"
            out.append(f"after {e.id:7s} ({e.speaker[:3]}) -> next {nxt.id if nxt else '-':7s} "
                       f"{first_words}")
    return "\n".join(out)


def qa_list(corpus, conv_id: str) -> str:
    return "\n".join(f"{q.id:14s} cat {q.category} {','.join(q.evidence):18s} {q.question} -> "
                     f"{q.answer or q.adversarial_answer}"
                     for q in corpus.qa if q.conversation == conv_id)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Read a TWIST-LoCoMo 2.0 conversation in place.")
    ap.add_argument("conversation")
    ap.add_argument("--locomo", type=Path, default=None)
    ap.add_argument("--plain", action="store_true")
    ap.add_argument("--session", type=int)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--stats", action="store_true")
    ap.add_argument("--boundaries", action="store_true")
    ap.add_argument("--qa", action="store_true")
    ap.add_argument("--crisis", action="store_true", help="include the opt-in crisis file")
    ap.add_argument("--restyled", nargs="?", const="", default=None, metavar="DIR",
                    help="apply the restyle file (default folder banks/locomo/restyle)")
    args = ap.parse_args(argv)
    try:
        placed, corpus, authored = load(
            args.conversation, args.locomo or default_locomo(), args.crisis,
            restyle=Path(args.restyled) if args.restyled else None,
            restyled=args.restyled is not None)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        for prob in placed.problems:
            print(prob)
        print(f"{len(placed.problems)} problem(s)")
        # LoCoMo's observations an anchor must not contradict: listed for reading, not refused
        notes = unread_observations(placed, load_contrast())
        for note in notes:
            print(f"to read: {note}")
        if notes:
            print(f"{len(notes)} observation(s) to read (not refused)")
        return 1 if placed.problems else 0
    if args.stats:
        print(stats(placed))
    elif args.boundaries:
        print(boundaries(placed, corpus))
    elif args.qa:
        print(qa_list(corpus, args.conversation))
    else:
        print(render(placed, plain=args.plain, session=args.session, authored=authored))
    return 0


if __name__ == "__main__":
    sys.exit(main())
