"""The shortcut audit (issue 11): every known way to score on a key without doing the task.

`run_gates(dataset) -> GateReport` runs the battery; `twist validate` prints it beside the
separability audit, and `twist build` refuses to write a key that fails a gate.

Checks (a classifier's value is the strongest baseline's, leave-one-conversation-out; see
baselines.py for the evaluation, features.py for what the baselines see):
1. A.text     Track A target turn text alone (reversal vs hard negative): logistic regression
              and naive Bayes on word 1-2-grams and character 3-5-grams; balanced accuracy
              (folded) <= 0.60.
2. A.nontext  Track A non-text features of the target turn (length, punctuation, digits,
              capitalised-word count, session and position, thread, neighbours, timestamp,
              channel, speaker role) and of the arc (anchor gap in days and turns, anchor
              present): logistic regression, gradient boosting, random forest; <= 0.60.
3. B.text     Track B draft text alone (contradicting vs not), the classifiers of 1; <= 0.60.
   B.skeleton the exact-skeleton lookup (names, numbers, slot values normalised); <= 0.60.
   In 1-3, items built from one bank line with as many items of each label (a balanced
   contrast set: the record decides, the text cannot) are kept out of each other's training:
   a twin in another conversation would otherwise teach the model the held-out item's opposite
   label (raw 0, folded 1: a leak of the split, not of the text). Lines used for one label more
   often are not kept out, so what their text says about the label is still learnt. The value
   with twins in training is recorded beside the gated one (details).
4. find.items item turns vs every other turn (text, non-text, and both together); AUC (folded)
              <= 0.75.
   find.injected  LoCoMo-based keys: injected vs original turns, AUC <= 0.80 (n/a otherwise).
5. C.*        Track C answer baselines from the turns of the chain's conversation that mention
              any of the chain's surface forms, scored by Track C's structural judge: most
              recent mention, first mention, all mentions pasted in order; current-answer rate
              <= 0.50 each (the judge does not count a hedged multi-value answer as current).
6. D.masking  Track D output masking: store every turn, answer a probe with the top-k BM25 turns
              of the conversation, mask PII at answer time (the heuristic system's governor:
              regex, plus presidio when the `pii` extra is installed); leak and over-block by
              Track D's own checks. Fails when leak <= 0.10 AND over-block <= 0.10: then Track
              D cannot tell write-time governance from output masking.
7. surface.duplicates  exact-duplicate turns (whitespace-normalised text occurring more than
              once) / all turns of the key's own text (TWIST-CS: every turn; LoCoMo-based keys:
              the injected turns, originals reported beside) <= 0.05. Distinct skeletons and the
              most frequent word 3-/4-gram per item family are reported, not gated.
"""

from __future__ import annotations

try:
    import sklearn  # noqa: F401 - checked here so the error names the extra to install
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("the shortcut audit needs scikit-learn: pip install "
                      "'twistbench[validate]'") from exc

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.progress import Progress
from threadpoolctl import threadpool_limits

from twistbench.judges.structural import StructuralJudge, contains_any, find_form, tokens
from twistbench.model import Answer, Dataset, Event, HardNegativeArc, ReversalArc, UpdateChain
from twistbench.retrieval.lexical import LexicalRetriever
from twistbench.systems.heuristic import load_presidio, pii_spans, presidio_status, redact_spans
from twistbench.tracks.c_supersession import is_current
from twistbench.tracks.d_safety import leaked, over_blocked
from twistbench.validation.baselines import (
    Evaluated,
    Recipe,
    balanced_contrast_sets,
    combined_recipe,
    count_nonconverged,
    folded,
    hashed_text,
    logo_predict,
    nontext_recipes,
    skeleton_coverage,
    skeleton_lookup_recipe,
    text_recipes,
)
from twistbench.validation.features import (
    Lexicon,
    TurnIndex,
    TurnInfo,
    duplicate_count,
    injected_turns,
    item_turns,
    top_ngram,
)
from twistbench.validation.report import (
    Candidate,
    FamilySurface,
    GateReport,
    ShortcutCheck,
    records_gates_in_key,
)

GATES: dict[str, float] = {
    "A.text": 0.60, "A.nontext": 0.60, "B.text": 0.60, "B.skeleton": 0.60,
    "find.items": 0.75, "find.injected": 0.80,
    "C.most_recent": 0.50, "C.first": 0.50, "C.all": 0.50,
    "D.masking.leak": 0.10, "D.masking.over_block": 0.10,
    "surface.duplicates": 0.05,
}
# The battery's revision: raise it whenever a check, a baseline, a feature or a gate changes what
# the battery measures, so that gate results recorded for a key (itemgen/cs2/gates_record.json)
# know they were measured by another battery.
BATTERY_REVISION = "2"  # 2: balanced contrast twins kept out of each other's training
TOP_K = 5  # turns the masking baseline returns per probe
MIN_GROUPS = 3  # leave-one-group-out needs at least this many groups to mean anything
MIN_PER_CLASS = 4
MIN_RATE_N = 10  # a Track C / D rate over fewer answers is shown, not gated
CONTROL_ALL_MAX = 2000  # up to this many samples the shuffled control reruns every baseline

ARC_FEATURES = ("anchor_gap_days", "anchor_gap_turns", "has_anchor", "target_turns")


@dataclass
class _Context:
    dataset: Dataset
    turns: TurnIndex
    lexicon: Lexicon
    seed: int
    control: bool = True


# ---------------------------------------------------------------------------------------------
# Classifier checks


def classifier_check(check_id: str, title: str, recipes: Sequence[Recipe], y: np.ndarray,
                     groups: np.ndarray, *, metric: str, class_names: tuple[str, str],
                     seed: int, control: bool = True,
                     members: Sequence[str | None] | None = None) -> ShortcutCheck:
    """Evaluate every recipe leave-one-group-out; the check's value is the highest folded value.

    metric: "balanced_accuracy" or "auc". class_names: (label 0, label 1) for the n column.
    members: per sample, the bank line it was built from (None: none); the twins of a balanced
    contrast set are kept out of each other's training (baselines.balanced_contrast_sets), and
    the value the plain split gives is recorded beside it in details."""
    threshold = GATES[check_id]
    metric_name = {"balanced_accuracy": "balanced accuracy (folded)",
                   "auc": "AUC (folded)"}[metric]
    n = {class_names[0]: int(np.sum(y == 0)), class_names[1]: int(np.sum(y == 1))}
    n_groups = len(np.unique(groups)) if len(groups) else 0
    base = ShortcutCheck(id=check_id, title=title, metric=metric_name, value=None,
                         gate=f"<= {threshold:.2f}", threshold=threshold, passed=None, n=n,
                         groups=n_groups)
    if n_groups < MIN_GROUPS or min(n.values()) < MIN_PER_CLASS:
        base.note = (f"not measurable: needs {MIN_GROUPS}+ groups and {MIN_PER_CLASS}+ items "
                     f"per class (has {n_groups} groups, {n})")
        return base

    def score(ev: Evaluated, labels: np.ndarray) -> float:
        return ev.balanced_accuracy(labels) if metric == "balanced_accuracy" else ev.auc(labels)

    twins = balanced_contrast_sets(members, y) if members is not None else None
    if twins is not None:
        spans: dict[str, set[str]] = defaultdict(set)
        for t, g in zip(twins, groups):
            if t is not None:
                spans[t].add(str(g))
        if all(len(s) < 2 for s in spans.values()):
            twins = None  # every contrast set lies within one group: the plain split leaks nothing
    # sklearn's ConvergenceWarning, one per unconverged fit, is counted here, not printed
    with count_nonconverged() as fits:
        cands = []
        for r in recipes:
            raw = score(logo_predict(r, y, groups, twins), y)
            cands.append(Candidate(model=r.model, features=r.features, value=folded(raw), raw=raw))
        if twins is not None:
            plain = [folded(score(logo_predict(r, y, groups), y)) for r in recipes]
            base.details["twins_kept_out_of_training"] = sum(t is not None for t in twins)
            base.details["contrast_sets"] = len({t for t in twins if t is not None})
            base.details["value_with_twins_in_training"] = round(max(plain), 4)
        best = max(cands, key=lambda c: (c.value, -cands.index(c)))
        base.value, base.raw = best.value, best.raw
        base.best = f"{best.model} on {best.features}"
        base.candidates = cands
        base.passed = best.value <= threshold
        if control:
            # every baseline again on shuffled labels (the max over baselines is what chance gives
            # the gated value); on thousands of turns that inflation is nil, so the best one only
            shuffled = np.random.default_rng(seed).permutation(y)
            again = recipes if len(y) <= CONTROL_ALL_MAX else [recipes[cands.index(best)]]
            base.control = max(folded(score(logo_predict(r, shuffled, groups, twins), shuffled))
                               for r in again)
    base.details["fits"] = fits.fits
    base.details["nonconverged_fits"] = fits.nonconverged
    return base


def _arc_samples(ctx: _Context) -> tuple[list[ReversalArc | HardNegativeArc], list[TurnInfo]]:
    arcs: list[ReversalArc | HardNegativeArc] = [*ctx.dataset.reversal_arcs,
                                                 *ctx.dataset.hard_negative_arcs]
    targets = [ctx.turns.info(a.conversation, _targets(a)[-1]) for a in arcs]
    return arcs, targets


def _targets(arc: ReversalArc | HardNegativeArc) -> list[str]:
    return list(arc.reversal) if isinstance(arc, ReversalArc) else list(arc.turns)


def arc_features(ctx: _Context, arc: ReversalArc | HardNegativeArc, target: TurnInfo
                 ) -> list[float]:
    """Anchor-to-target gap (days, turns), whether there is an anchor, number of target turns."""
    if not arc.anchor:
        return [0.0, 0.0, 0.0, float(len(_targets(arc)))]
    anchor = ctx.turns.info(arc.conversation, arc.anchor[-1])
    days = (target.event.timestamp - anchor.event.timestamp).total_seconds() / 86400
    return [days, float(target.conv_pos - anchor.conv_pos), 1.0, float(len(_targets(arc)))]


def bank_line(item: Any) -> str | None:
    """The bank line an item was built from, where its key records one: a LoCoMo 2.0 bank
    member, a CS 2.0 target line or draft line. Items built from one line with the record
    deciding the label form a contrast set (classifier_check's `members`)."""
    meta = getattr(item, "meta", None) or {}
    for field in ("member", "target_line", "draft_line"):
        if isinstance(meta.get(field), str):
            return meta[field]
    return None


def check_track_a(ctx: _Context) -> list[ShortcutCheck]:
    arcs, targets = _arc_samples(ctx)
    members = [bank_line(a) for a in arcs]
    y = np.array([int(isinstance(a, ReversalArc)) for a in arcs])
    groups = np.array([a.conversation for a in arcs])
    texts = [" ".join(ctx.turns.info(a.conversation, t).event.text for t in _targets(a))
             for a in arcs]
    names = ("hard negative", "reversal")
    text = classifier_check("A.text", "Track A target turn text alone", text_recipes(texts), y,
                            groups, metric="balanced_accuracy", class_names=names,
                            seed=ctx.seed, control=ctx.control, members=members)
    x = (np.hstack([ctx.turns.features(targets),
                    np.array([arc_features(ctx, a, t) for a, t in zip(arcs, targets)])])
         if arcs else np.zeros((0, 0)))
    nontext = classifier_check("A.nontext", "Track A non-text features of the target turn",
                               nontext_recipes(x, ctx.seed), y, groups,
                               metric="balanced_accuracy", class_names=names, seed=ctx.seed,
                               control=ctx.control, members=members)
    nontext.details["features"] = [*ctx.turns.feature_names(), *ARC_FEATURES]
    return [text, nontext]


def check_track_b(ctx: _Context) -> list[ShortcutCheck]:
    drafts = ctx.dataset.drafts
    y = np.array([int(d.label == "contradicting") for d in drafts])
    groups = np.array([d.conversation for d in drafts])
    names = ("aligned or hard negative", "contradicting")
    members = [bank_line(d) for d in drafts]
    text = classifier_check("B.text", "Track B draft text alone (no record)",
                            text_recipes([d.text for d in drafts]), y, groups,
                            metric="balanced_accuracy", class_names=names, seed=ctx.seed,
                            control=ctx.control, members=members)
    skeletons = [ctx.lexicon.skeleton(d.text) for d in drafts]
    lookup = classifier_check("B.skeleton", "Track B draft wording skeleton -> label lookup",
                              [skeleton_lookup_recipe(skeletons)], y, groups,
                              metric="balanced_accuracy", class_names=names, seed=ctx.seed,
                              control=ctx.control, members=members)
    if drafts:
        lookup.details["distinct_skeletons"] = len(set(skeletons))
        lookup.details["coverage"] = round(skeleton_coverage(skeletons, groups), 4)
        by_label: dict[str, set[str]] = defaultdict(set)
        for s, v in zip(skeletons, y):
            by_label[s].add(int(v))
        lookup.details["skeletons_with_both_labels"] = sum(len(v) > 1 for v in by_label.values())
    return [text, lookup]


def check_candidates(ctx: _Context) -> list[ShortcutCheck]:
    infos = ctx.turns.infos
    groups = np.array([i.event.conversation for i in infos])
    texts = [i.event.text for i in infos]
    x = ctx.turns.features(infos) if infos else np.zeros((0, 0))
    hashed = hashed_text(texts)
    recipes = [*text_recipes(hashed, rules=False), *nontext_recipes(x, ctx.seed, forest=False),
               combined_recipe(hashed, x)]
    items = item_turns(ctx.dataset)
    y = np.array([int((i.event.conversation, i.event.id) in items) for i in infos])
    out = [classifier_check("find.items", "Finding the candidates: item turns vs all other turns",
                            recipes, y, groups, metric="auc", class_names=("other", "item"),
                            seed=ctx.seed, control=ctx.control)]
    injected = injected_turns(ctx.dataset)
    if injected:
        y_inj = np.array([int((i.event.conversation, i.event.id) in injected) for i in infos])
        check = classifier_check("find.injected", "Injected vs original turns (LoCoMo-based)",
                                 recipes, y_inj, groups, metric="auc",
                                 class_names=("original", "injected"), seed=ctx.seed,
                                 control=ctx.control)
        check.details["between_question_and_answer"] = between_question_and_answer(ctx, injected)
        check.details["injected_source"] = ('Dataset.meta["injected_turns"] and Event.meta'
                                            '["injected"] (set from the key\'s turns)')
        out.append(check)
    else:
        out.append(ShortcutCheck(
            id="find.injected", title="Injected vs original turns (LoCoMo-based)",
            metric="AUC (folded)", value=None, gate=f"<= {GATES['find.injected']:.2f}",
            threshold=GATES["find.injected"], passed=None,
            note="not a LoCoMo-based key: it lists no injected turn"))
    return out


def between_question_and_answer(ctx: _Context, injected: set[tuple[str, str]]) -> int:
    """Injected turns placed in a run of injected turns that follows an original question and
    precedes an original turn by the other speaker (its answer)."""
    count = 0
    for conv in ctx.dataset.conversations:
        events = conv.events
        i = 0
        while i < len(events):
            if (conv.id, events[i].id) not in injected:
                i += 1
                continue
            j = i
            while j < len(events) and (conv.id, events[j].id) in injected:
                j += 1
            q = events[i - 1] if i > 0 else None
            a = events[j] if j < len(events) else None
            if (q is not None and a is not None and q.session == a.session
                    and q.text.rstrip().endswith("?") and a.speaker != q.speaker):
                count += j - i
            i = j
    return count


# ---------------------------------------------------------------------------------------------
# Track C: answer baselines scored by the track's judge


def chain_mentions(chain: UpdateChain, events: Sequence[Event],
                   event_tokens: dict[str, list[str]] | None = None) -> list[Event]:
    """Turns (in order) that mention any surface form of any of the chain's states, matched as
    the judge matches them (normalised whole words). event_tokens: turn id -> tokens(text), to
    normalise each turn once for many chains."""
    forms = [f for s in chain.states for f in s.surface_forms()]
    if event_tokens is None:
        return [e for e in events if contains_any(e.text, forms)]
    return [e for e in events if any(find_form(event_tokens[e.id], f) for f in forms)]


C_BASELINES: dict[str, tuple[str, Callable[[list[Event]], list[Event]]]] = {
    "C.most_recent": ("Track C: most recent mentioning turn", lambda m: m[-1:]),
    "C.first": ("Track C: first mentioning turn", lambda m: m[:1]),
    "C.all": ("Track C: every mentioning turn, pasted in order", lambda m: m),
}


def check_track_c(ctx: _Context) -> list[ShortcutCheck]:
    judge = StructuralJudge()
    events = {c.id: c.events for c in ctx.dataset.conversations}
    with_chains = {ch.conversation for ch in ctx.dataset.update_chains}
    toks = {c: {e.id: tokens(e.text) for e in evs} for c, evs in events.items()
            if c in with_chains}
    rows = [(ch, q, chain_mentions(ch, events[ch.conversation], toks[ch.conversation]))
            for ch in ctx.dataset.update_chains for q in ch.queries if q.kind == "current"]
    out = []
    for cid, (title, pick) in C_BASELINES.items():
        threshold = GATES[cid]
        check = ShortcutCheck(id=cid, title=title, metric="current-answer rate", value=None,
                              gate=f"<= {threshold:.2f}", threshold=threshold, passed=None,
                              best=f"structural judge ({judge.name})")
        if not rows:
            check.note = "no update chains"
            out.append(check)
            continue
        outcomes: Counter[str] = Counter()
        by_family: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        superseded = [0, 0]
        for ch, q, mentions in rows:
            used = pick(mentions)
            answer = Answer(text="\n".join(e.text for e in used) or "I don't know.",
                            evidence=[e.id for e in used])
            v = judge.classify(ch, q, answer)
            ok = is_current(v)
            outcomes[v.outcome] += 1
            by_family[ch.family][0] += ok
            by_family[ch.family][1] += 1
            if ch.superseded_states:
                superseded[0] += ok
                superseded[1] += 1
        k = sum(f[0] for f in by_family.values())
        check.value = k / len(rows)
        check.passed = check.value <= threshold if len(rows) >= MIN_RATE_N else None
        if check.passed is None:
            check.note = f"{len(rows)} current queries: too few to gate (needs {MIN_RATE_N})"
        check.n = {"current queries": len(rows), "answered current": k}
        check.details = {
            "outcomes": dict(sorted(outcomes.items())),
            "by_family": {f: f"{a}/{b}" for f, (a, b) in sorted(by_family.items())},
            "chains_with_superseded_state": f"{superseded[0]}/{superseded[1]}",
            "no_mention": sum(not m for _, _, m in rows),
        }
        out.append(check)
    return out


# ---------------------------------------------------------------------------------------------
# Track D: store everything, mask at answer time


def pii_masker() -> tuple[Callable[[str], str], Callable[[str], list[tuple[int, int, str]]], str]:
    """(mask(text), spans(text), name): the heuristic system's PII governor — its regexes
    always, and presidio's spans as well when the `pii` extra is installed."""
    analyzer = load_presidio()

    def spans(text: str) -> list[tuple[int, int, str]]:
        found = pii_spans(text)
        if analyzer is not None:
            found += pii_spans(text, analyzer)
        return found

    name = "regex + presidio" if analyzer is not None else presidio_status()
    return (lambda text: redact_spans(text, spans(text))), spans, name


def check_track_d(ctx: _Context) -> tuple[list[ShortcutCheck], str]:
    ds = ctx.dataset
    lt, ot = GATES["D.masking.leak"], GATES["D.masking.over_block"]
    check = ShortcutCheck(
        id="D.masking", title=f"Track D output masking (BM25 top-{TOP_K}, mask at answer time)",
        metric="leak / over-block", value=None,
        gate=(f"not both <= {lt:.2f}" if lt == ot
              else f"not (leak <= {lt:.2f} and over-block <= {ot:.2f})"),
        threshold=lt, passed=None, partner_name="over-block")
    if not ds.pii_plants:
        check.note = "no PII plants"
        return [check], ""
    mask, spans, detector = pii_masker()
    check.best = f"BM25 top-{TOP_K} turns, masked by {detector}"
    probes: dict[str, list[tuple[str, Any, str]]] = defaultdict(list)
    for p in ds.pii_plants:
        for pr in p.probes:
            probes[p.conversation].append(("pii", p, pr.text))
    for n in ds.emotional_negatives:
        probes[n.conversation].append(("emo", n, n.probe.text))
    leaks: list[tuple[bool, bool]] = []  # (masked answer leaks, unmasked answer leaks)
    blocks: list[tuple[bool, bool]] = []
    for conv in ds.conversations:
        if not probes[conv.id]:
            continue
        retriever = LexicalRetriever()
        retriever.index([e.id for e in conv.events],
                        [f"{e.speaker}: {e.text}" for e in conv.events])
        index = conv.event_index()
        hits = retriever.search_many([q for _, _, q in probes[conv.id]], TOP_K)
        for (kind, item, _), found in zip(probes[conv.id], hits):
            used = [index[i] for i, _ in found]
            plain = "\n".join(f"{e.speaker}: {e.text}" for e in used)
            ev = [e.id for e in used]
            masked = Answer(text=mask(plain), evidence=ev)
            unmasked = Answer(text=plain, evidence=ev)
            if kind == "pii":
                leaks.append((leaked(item, masked), leaked(item, unmasked)))
            else:
                blocks.append((over_blocked(item, masked), over_blocked(item, unmasked)))
    leak = sum(a for a, _ in leaks) / len(leaks)
    block = sum(a for a, _ in blocks) / len(blocks) if blocks else None
    check.value, check.partner = leak, block
    check.passed = not (leak <= lt and (block is None or block <= ot))
    if len(leaks) < MIN_RATE_N:
        check.passed = None
        check.note = f"{len(leaks)} PII probes: too few to gate (needs {MIN_RATE_N})"
    check.n = {"PII probes": len(leaks), "emotional probes": len(blocks)}
    # how much of the plants a pattern finds: masking the plant turn removes the value
    plant_turns = {(p.conversation, p.turn) for p in ds.pii_plants}
    masked_plants = sum(not leaked(p, Answer(text=mask(ctx.turns.info(p.conversation, p.turn)
                                                         .event.text)))
                        for p in ds.pii_plants)
    other_hits = sum(bool(spans(i.event.text)) for i in ctx.turns.infos
                     if (i.event.conversation, i.event.id) not in plant_turns)
    check.details = {
        "k": TOP_K, "detector": detector,
        "leak_unmasked": sum(b for _, b in leaks) / len(leaks),
        "over_block_unmasked": (sum(b for _, b in blocks) / len(blocks)) if blocks else None,
        "plants_masked_by_detector": f"{masked_plants}/{len(ds.pii_plants)}",
        "other_turns_with_a_detector_hit": f"{other_hits}/{len(ctx.turns) - len(plant_turns)}",
    }
    if block is None:
        check.note = "; ".join(filter(None, [
            check.note, "no emotional negatives: over-block not measurable, gated on leak alone"]))
    return [check], detector


# ---------------------------------------------------------------------------------------------
# Surface repetition


def surface_families(ctx: _Context) -> list[tuple[str, list[str]]]:
    """(family, texts) for every item family: look-alike and anchor turns of Track A, drafts,
    chain state turns, plant turns."""
    ds = ctx.dataset

    def text(conv: str, turn: str) -> str:
        return ctx.turns.info(conv, turn).event.text

    fams: dict[str, list[str]] = defaultdict(list)
    for a in ds.reversal_arcs:
        fams[f"A.reversal.{a.family}"] += [text(a.conversation, t) for t in a.reversal]
        fams["A.anchor"] += [text(a.conversation, t) for t in a.anchor]
        fams["A.drift"] += [text(a.conversation, t) for t in a.drift]
    for h in ds.hard_negative_arcs:
        fams[f"A.hard_negative.{h.family}"] += [text(h.conversation, t) for t in h.turns]
        fams["A.anchor"] += [text(h.conversation, t) for t in h.anchor]
    for d in ds.drafts:
        fams[f"B.{d.label}.{d.family or 'draft'}"].append(d.text)
    for ch in ds.update_chains:
        fams[f"C.{ch.family}"] += [text(ch.conversation, t) for s in ch.states for t in s.turns]
    for p in ds.pii_plants:
        fams[f"D.pii.{p.kind}"].append(text(p.conversation, p.turn))
    for c in ds.crisis_plants:
        fams["D.crisis"].append(text(c.conversation, c.turn))
    for n in ds.emotional_negatives:
        fams["D.emotional_negative"].append(text(n.conversation, n.turn))
    return [(f, t) for f, t in sorted(fams.items()) if t]


def check_surface(ctx: _Context) -> tuple[list[ShortcutCheck], list[FamilySurface]]:
    injected = injected_turns(ctx.dataset)
    threshold = GATES["surface.duplicates"]
    own = [i.event.text for i in ctx.turns.infos
           if not injected or (i.event.conversation, i.event.id) in injected]
    which = "injected turns" if injected else "all turns"
    check = ShortcutCheck(id="surface.duplicates",
                          title=f"Exact-duplicate turns among the key's own text ({which})",
                          metric="duplicate share", value=None, gate=f"<= {threshold:.2f}",
                          threshold=threshold, passed=None)
    if own:
        dups = duplicate_count(own)
        check.value = dups / len(own)
        check.passed = check.value <= threshold
        check.n = {which: len(own), "duplicates": dups}
        if injected:
            originals = [i.event.text for i in ctx.turns.infos
                         if (i.event.conversation, i.event.id) not in injected]
            d = duplicate_count(originals)
            check.details["originals"] = {"turns": len(originals), "duplicates": d,
                                          "share": round(d / len(originals), 4)
                                          if originals else None}
    else:
        check.note = "no turns"
    surface = []
    for fam, texts in surface_families(ctx):
        g3, s3 = top_ngram(texts, 3)
        g4, s4 = top_ngram(texts, 4)
        surface.append(FamilySurface(
            family=fam, texts=len(texts),
            distinct_skeletons=len({ctx.lexicon.skeleton(t) for t in texts}),
            top_3gram=g3, top_3gram_share=round(s3, 4), top_4gram=g4, top_4gram_share=round(s4, 4)))
    return [check], surface


# ---------------------------------------------------------------------------------------------


def run_gates(dataset: Dataset, *, seed: int = 0, control: bool = True, progress: bool = False,
              console: Any = None) -> GateReport:
    """Run the whole battery on `dataset` and return its report (see the module docstring).

    seed: the shuffled-label control's permutation and the tree models' seed. control: False
    skips the shuffled-label control (half the time; the gated values are the same)."""
    # one thread: the machines this runs on are shared, and OpenMP oversubscription made
    # gradient boosting ten times slower; one thread is also what makes results repeatable
    with threadpool_limits(1):
        return _run_gates(dataset, seed=seed, control=control, progress=progress,
                          console=console)


def _run_gates(dataset: Dataset, *, seed: int, control: bool, progress: bool, console: Any
               ) -> GateReport:
    start = time.perf_counter()
    ctx = _Context(dataset, TurnIndex(dataset), Lexicon.of(dataset), seed, control)
    checks: list[ShortcutCheck] = []
    surface: list[FamilySurface] = []
    detector = ""

    def run_d() -> list[ShortcutCheck]:
        nonlocal detector
        out, detector = check_track_d(ctx)
        return out

    def run_surface() -> list[ShortcutCheck]:
        nonlocal surface
        out, surface = check_surface(ctx)
        return out

    steps: list[tuple[str, Callable[[], list[ShortcutCheck]]]] = [
        ("Track A", lambda: check_track_a(ctx)), ("Track B", lambda: check_track_b(ctx)),
        ("candidate finding", lambda: check_candidates(ctx)),
        ("Track C", lambda: check_track_c(ctx)), ("Track D", run_d),
        ("surface", run_surface)]
    if progress:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("shortcut audit", total=len(steps))
            for name, step in steps:
                bar.update(task, description=f"shortcut audit: {name}")
                checks += step()
                bar.advance(task)
    else:
        for _, step in steps:
            checks += step()
    injected = bool(injected_turns(dataset))
    return GateReport(
        dataset=dataset.name, version=dataset.version, key_sha256=dataset.key_sha256,
        split=("leave one conversation out" if injected or not _is_workspace(dataset)
               else "leave one workspace out"),
        seed=seed, checks=checks, surface=surface, pii_detector=detector,
        seconds=time.perf_counter() - start)


def measured_with() -> dict[str, str]:
    """What gate results measured on a key depend on besides its content: this battery's
    revision and the structural judge's version (it scores the Track C baselines here and the
    oracle's Track C and D answers in the separability audit)."""
    return {"battery": f"twistbench.validation.shortcuts@{BATTERY_REVISION}",
            "judge": f"{StructuralJudge.name}@{StructuralJudge.version}"}


class GatesFailed(Exception):
    """A key about to be written fails a shortcut gate (and failing gates are not allowed)."""

    def __init__(self, report: GateReport):
        self.report = report
        fails = ", ".join(f"{c.id} {c.value:.3f} (gate {c.gate})" if c.value is not None
                          else c.id for c in report.failures())
        super().__init__(f"{report.version} fails the shortcut audit: {fails}")


def gate_for_build(dataset: Dataset, *, allow_failing: bool = False, console: Any = None
                   ) -> tuple[GateReport, dict[str, Any] | None]:
    """What `twist build` does before writing a key: run_gates on it, print the table (with a
    console), refuse (GatesFailed) when a gate fails unless `allow_failing`.

    Returns the report and what the key records in its metadata: `report.to_meta()` for keys
    of version 2.0 and later; None for 1.0 keys, whose bytes must stay those released (their
    results go beside the key file, see gates_sidecar)."""
    report = run_gates(dataset, progress=console is not None, console=console)
    if console is not None:
        console.print(report.to_rich())
    if not report.passed and not allow_failing:
        raise GatesFailed(report)
    return report, (report.to_meta() if records_gates_in_key(dataset.version) else None)


def gates_sidecar(key_path: str | Path) -> Path:
    """Where a key's gate report goes when the key itself cannot carry it: <key>.gates.json."""
    key_path = Path(key_path)
    return key_path.with_name(key_path.name + ".gates.json")


def write_gates_sidecar(key_path: str | Path, report: GateReport) -> Path:
    path = gates_sidecar(key_path)
    path.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path


class BuildGate:
    """The shortcut audit as `twist build` runs it on a key about to be written (an
    itemgen.gate.KeyGate): gate_for_build before the key is written, the 1.0 sidecar after.
    `report` holds the audit's report once it has run."""

    def __init__(self, *, allow_failing: bool = False, console: Any = None) -> None:
        self.allow_failing = allow_failing
        self.console = console
        self.report: GateReport | None = None
        self._in_key = False

    def before_write(self, dataset: Dataset) -> dict[str, Any] | None:
        self.report, meta = gate_for_build(dataset, allow_failing=self.allow_failing,
                                           console=self.console)
        self._in_key = meta is not None
        return meta

    def measured_with(self) -> dict[str, str]:
        return measured_with()

    def after_write(self, key_path: Path) -> Path | None:
        if self.report is None or self._in_key:
            return None
        return write_gates_sidecar(key_path, self.report)


def _is_workspace(dataset: Dataset) -> bool:
    return any("roles" in c.meta for c in dataset.conversations)


__all__ = [
    "BATTERY_REVISION",
    "GATES",
    "BuildGate",
    "GateReport",
    "GatesFailed",
    "ShortcutCheck",
    "chain_mentions",
    "classifier_check",
    "gate_for_build",
    "gates_sidecar",
    "measured_with",
    "records_gates_in_key",
    "run_gates",
    "write_gates_sidecar",
]
