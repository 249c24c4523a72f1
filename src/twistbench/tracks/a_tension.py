"""Track A: unprompted tension detection (whitepaper §3, Track A).

Driving: online tensions arrive with the runner's ingest records (track "ingest", output
{"session": k, "result": IngestResult}); for batch systems one task per conversation
("A:<conv>:batch", PHASE_BATCH) calls flag_tensions() once after full ingest. Online and batch
are scored separately and never mixed.

Scoring (pure, from records + gold):
- Detections are deduplicated on (set of claim evidence, set of new evidence); for online the
  first emission wins (its session gives the latency). Duplicates are counted, not scored.
- A detection *can match* an arc when its claim evidence overlaps the arc's anchor or drift
  turns and its new evidence overlaps the reversal turns. Matching is one-to-one (maximum
  bipartite matching; earlier emission preferred), so re-flagging one arc twice gives one true
  positive and one false positive.
- Attribution: of the matched detections, the share whose claim evidence cites an anchor turn
  (not merely a drift turn). This is why matching admits drift turns as claim evidence: a
  detection that only cites the drift found the reversal but attributed it wrongly.
- False flag: a hard-negative arc is falsely flagged when any detection's new evidence overlaps
  its look-alike turns.
- Supersession flags: an unmatched detection whose claim cites a superseded state of a genuine
  update chain (not a coexisting-facts chain) and whose new evidence cites a later state of it
  is a true change of belief, the tension Track C's post-resolution sub-track resolves. It is
  neither a true nor a false positive here, and is counted apart ("supersession_flags").
- Precision = matched / detections (detections in this track's conversations only), recall =
  matched / arcs, F1 = 2TP / (2TP + FP + FN) with a conversation-clustered bootstrap interval.
- Latency (online only): session of first emission minus the session of the arc's earliest
  reversal turn.
- Errors: a failed ingest call makes every Track A item of that conversation an online error
  (the system never saw part of it); a failed flag_tensions call does the same for batch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from twistbench.contract import Capabilities
from twistbench.judges.base import Judge
from twistbench.model import Dataset, HardNegativeArc, ReversalArc, Tension, UpdateChain
from twistbench.records import ItemRecord
from twistbench.stats import Metric, f1_metric, mean_metric, proportion
from twistbench.tracks.base import (
    PHASE_BATCH,
    ConversationState,
    EmittedTension,
    HeadlinePair,
    ItemOutcome,
    SystemView,
    Task,
    TrackResult,
)

KEY = "A"
TITLE = "Unprompted tension detection"
MODES = ("online", "batch")


@dataclass(frozen=True)
class Detection:
    """A deduplicated tension: first emission wins."""

    claim: frozenset[str]
    new: frozenset[str]
    session: int | None  # session after which it was first emitted (online); None for batch
    order: int  # position in emission order, for deterministic tie-breaks
    tension_id: str

    @property
    def key(self) -> tuple[frozenset[str], frozenset[str]]:
        return (self.claim, self.new)


Emitted = Iterable[tuple[int | None, Tension | dict[str, Any]]]


def dedupe(emitted: Emitted) -> tuple[list[Detection], int]:
    """Deduplicate (session, tension) pairs in emission order; return (detections, duplicates).

    The same claim/new evidence sets emitted again (after a later session, or twice in one
    call) count once; the first emission is kept."""
    seen: dict[tuple[frozenset[str], frozenset[str]], Detection] = {}
    dups = 0
    for order, (session, t) in enumerate(emitted):
        tension = t if isinstance(t, Tension) else Tension.model_validate(t)
        d = Detection(frozenset(tension.claim_evidence), frozenset(tension.new_evidence), session,
                      order, tension.id)
        if d.key in seen:
            dups += 1
            continue
        seen[d.key] = d
    return list(seen.values()), dups


def can_match(d: Detection, arc: ReversalArc) -> bool:
    return bool(d.claim & (set(arc.anchor) | set(arc.drift))) and bool(d.new & set(arc.reversal))


def attributed(d: Detection, arc: ReversalArc) -> bool:
    return bool(d.claim & set(arc.anchor))


def false_flagged(hn: HardNegativeArc, detections: Iterable[Detection]) -> bool:
    turns = set(hn.turns)
    return any(d.new & turns for d in detections)


def flags_supersession(d: Detection, chain: UpdateChain) -> bool:
    """The detection links an earlier state of a genuine update chain to a later one."""
    if chain.family == "coexisting" or all(s.current for s in chain.states):
        return False
    for i, old in enumerate(chain.states[:-1]):
        if old.current or not d.claim & set(old.turns):
            continue
        if any(d.new & set(new.turns) for new in chain.states[i + 1:]):
            return True
    return False


def match(arcs: list[ReversalArc], detections: list[Detection]) -> dict[str, Detection]:
    """One-to-one maximum matching of arcs to detections (Kuhn's augmenting paths).

    Candidates are tried earliest emission first, then anchor-citing first, so among maximum
    matchings the one found favours early, well-attributed detections. Returns arc id ->
    detection."""
    def pref(arc: ReversalArc, d: Detection) -> tuple:
        return (d.session if d.session is not None else -1, not attributed(d, arc), d.order)

    cands = {a.id: sorted((d for d in detections if can_match(d, a)), key=lambda d: pref(a, d))
             for a in arcs}
    owner: dict[int, str] = {}  # detection order -> arc id

    def augment(arc_id: str, seen: set[int]) -> bool:
        for d in cands[arc_id]:
            if d.order in seen:
                continue
            seen.add(d.order)
            if d.order not in owner or augment(owner[d.order], seen):
                owner[d.order] = arc_id
                return True
        return False

    for a in arcs:
        augment(a.id, set())
    by_order = {d.order: d for d in detections}
    return {arc_id: by_order[o] for o, arc_id in owner.items()}


@dataclass
class ConversationScore:
    tp: int
    fp: int
    fn: int
    detections: int
    duplicates: int
    attributed: int
    false_flags: list[str]
    hard_negatives: int
    latencies: list[int]
    supersession: int
    matched: dict[str, Detection]
    arc_ids: list[str]
    hn_ids: list[str]
    # the scored detections (deduplicated, supersession flags set apart): the report shows which
    # of them flagged a hard negative
    detections_scored: list[Detection] = field(default_factory=list)


def score_conversation(arcs: list[ReversalArc], negatives: list[HardNegativeArc],
                       emitted: Iterable[tuple[int | None, Tension | dict[str, Any]]],
                       turn_session: dict[str, int] | None = None,
                       chains: list[UpdateChain] | None = None) -> ConversationScore:
    """Pure scoring of one conversation's emitted tensions against its gold arcs."""
    dets, dups = dedupe(emitted)
    matched = match(arcs, dets)
    used = {d.order for d in matched.values()}
    neutral = {d.order for d in dets if d.order not in used
               and any(flags_supersession(d, ch) for ch in chains or [])}
    dets = [d for d in dets if d.order not in neutral]
    tp = len(matched)
    lat: list[int] = []
    n_attr = 0
    for a in arcs:
        d = matched.get(a.id)
        if d is None:
            continue
        n_attr += attributed(d, a)
        if d.session is not None and turn_session is not None:
            rev = [turn_session[t] for t in a.reversal if t in turn_session]
            if rev:
                lat.append(d.session - min(rev))
    flagged = [hn.id for hn in negatives if false_flagged(hn, dets)]
    return ConversationScore(tp=tp, fp=len(dets) - tp, fn=len(arcs) - tp, detections=len(dets),
                             duplicates=dups, attributed=n_attr, false_flags=flagged,
                             hard_negatives=len(negatives), latencies=lat,
                             supersession=len(neutral), matched=matched,
                             arc_ids=[a.id for a in arcs], hn_ids=[h.id for h in negatives],
                             detections_scored=dets)


def batch_item_id(conversation_id: str) -> str:
    return f"{KEY}:{conversation_id}:batch"


def _run_batch(guarded: SystemView, state: ConversationState) -> dict[str, Any]:
    tensions = guarded.flag_tensions()
    for t in tensions:
        state.tensions.append(EmittedTension(mode="batch", session=None, tension=t))
    return {"tensions": [t.model_dump(mode="json") for t in tensions]}


def _replay_batch(guarded: SystemView, state: ConversationState, output: dict[str, Any]) -> None:
    """A resumed run puts the saved batch tensions back; flag_tensions is not called again."""
    for t in output.get("tensions", []):
        state.tensions.append(EmittedTension(mode="batch", session=None,
                                             tension=Tension.model_validate(t)))


def _a_conversations(dataset: Dataset) -> list[str]:
    ids = {a.conversation for a in dataset.reversal_arcs}
    ids |= {h.conversation for h in dataset.hard_negative_arcs}
    return [c.id for c in dataset.conversations if c.id in ids]


def _emissions(dataset: Dataset, records: list[ItemRecord], mode: str
               ) -> tuple[dict[str, list[tuple[int | None, dict]]], set[str], set[str]]:
    """Per conversation: emitted (session, tension) in order; conversations with an error;
    conversations with no record at all (missing)."""
    convs = _a_conversations(dataset)
    emitted: dict[str, list[tuple[int | None, dict]]] = {c: [] for c in convs}
    errored: set[str] = set()
    seen: set[str] = set()
    if mode == "online":
        ing = sorted((r for r in records if r.track == "ingest" and r.conversation in emitted),
                     key=lambda r: _session_of(r))
        for r in ing:
            seen.add(r.conversation)
            if not r.ok or r.output is None:
                errored.add(r.conversation)
                continue
            k = _session_of(r)
            for t in (r.output.get("result") or {}).get("tensions", []):
                emitted[r.conversation].append((k, t))
    else:
        for r in records:
            if r.track != KEY or r.kind != "batch" or r.conversation not in emitted:
                continue
            seen.add(r.conversation)
            if not r.ok or r.output is None:
                errored.add(r.conversation)
                continue
            for t in r.output.get("tensions", []):
                emitted[r.conversation].append((None, t))
    missing = set(convs) - seen
    return emitted, errored, missing


def _session_of(r: ItemRecord) -> int:
    if r.output and isinstance(r.output.get("session"), int):
        return r.output["session"]
    # "ingest:<conv>:s<k>"
    tail = r.item_id.rsplit(":", 1)[-1]
    return int(tail[1:]) if tail.startswith("s") and tail[1:].isdigit() else 0


def _turn_sessions(dataset: Dataset, conversation_id: str) -> dict[str, int]:
    return {e.id: e.session for e in dataset.conversation(conversation_id).events}


def score_mode(dataset: Dataset, records: list[ItemRecord], mode: str
               ) -> tuple[dict[str, Metric], dict[str, Any], int, int,
                          dict[str, ConversationScore]]:
    """Metrics of one tension mode; returns (metrics, details, errors, missing, per-conv)."""
    emitted, errored, missing = _emissions(dataset, records, mode)
    per_conv: dict[str, ConversationScore] = {}
    errors = miss = 0
    for c in emitted:
        arcs = dataset.items_of(c, "reversal_arcs")
        hns = dataset.items_of(c, "hard_negative_arcs")
        if c in errored:
            errors += len(arcs) + len(hns)
            continue
        if c in missing:
            miss += len(arcs) + len(hns)
            continue
        per_conv[c] = score_conversation(arcs, hns, emitted[c],
                                         _turn_sessions(dataset, c) if mode == "online" else None,
                                         dataset.items_of(c, "update_chains"))
    p = f"{mode}."
    tp = sum(s.tp for s in per_conv.values())
    dets = sum(s.detections for s in per_conv.values())
    arcs_n = sum(len(s.arc_ids) for s in per_conv.values())
    ff = sum(len(s.false_flags) for s in per_conv.values())
    hn_n = sum(s.hard_negatives for s in per_conv.values())
    attr = sum(s.attributed for s in per_conv.values())
    metrics = {
        p + "f1": f1_metric(p + "f1", {c: (s.tp, s.fp, s.fn) for c, s in per_conv.items()}),
        p + "precision": proportion(p + "precision", tp, dets),
        p + "recall": proportion(p + "recall", tp, arcs_n),
        p + "false_flag_rate": proportion(p + "false_flag_rate", ff, hn_n),
        p + "attribution": proportion(p + "attribution", attr, tp,
                                      note="matched detections citing an anchor turn"),
    }
    if mode == "online":
        metrics[p + "latency_sessions"] = mean_metric(
            p + "latency_sessions",
            {c: s.latencies for c, s in per_conv.items() if s.latencies},
            note="mean sessions from reversal turn to first emission")
    # per-family breakdown (recall by arc family, false-flag rate by hard-negative family)
    fam_arcs: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    fam_hn: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for c, s in per_conv.items():
        for a in dataset.items_of(c, "reversal_arcs"):
            fam_arcs[a.family][0] += a.id in s.matched
            fam_arcs[a.family][1] += 1
        for h in dataset.items_of(c, "hard_negative_arcs"):
            fam_hn[h.family][0] += h.id in s.false_flags
            fam_hn[h.family][1] += 1
    details = {
        "detections": dets,
        "duplicates": sum(s.duplicates for s in per_conv.values()),
        "supersession_flags": sum(s.supersession for s in per_conv.values()),
        "recall_by_family": {f: proportion(f, k, n).model_dump()
                             for f, (k, n) in sorted(fam_arcs.items())},
        "false_flag_by_family": {f: proportion(f, k, n).model_dump()
                                 for f, (k, n) in sorted(fam_hn.items())},
        "conversations_scored": len(per_conv),
    }
    return metrics, details, errors, miss, per_conv


class TensionTrack:
    key = KEY
    title = TITLE
    headline = (
        HeadlinePair("A.online", "A online", KEY, "online.f1", "online.false_flag_rate",
                     "F1 / false-flag", True, False, "online"),
        HeadlinePair("A.batch", "A batch", KEY, "batch.f1", "batch.false_flag_rate",
                     "F1 / false-flag", True, False, "batch"),
    )

    def not_applicable(self, caps: Capabilities, dataset: Dataset) -> str | None:
        if not (caps.online_tensions or caps.batch_tensions):
            return "system declares neither online_tensions nor batch_tensions"
        if not dataset.reversal_arcs and not dataset.hard_negative_arcs:
            return "dataset has no reversal or hard-negative arcs"
        return None

    def tasks(self, dataset: Dataset, conversation_id: str, caps: Capabilities,
              judge: Judge | None = None) -> list[Task]:
        if self.not_applicable(caps, dataset) or not caps.batch_tensions:
            return []
        if conversation_id not in _a_conversations(dataset):
            return []
        return [Task(item_id=batch_item_id(conversation_id), track=KEY, kind="batch",
                     conversation=conversation_id, phase=PHASE_BATCH,
                     request={"call": "flag_tensions", "conversation": conversation_id},
                     run=_run_batch, replay=_replay_batch)]

    def score(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
              judge: Judge | None = None) -> TrackResult:
        why = self.not_applicable(caps, dataset)
        if why:
            return TrackResult.not_applicable(KEY, TITLE, why)
        res = TrackResult(track=KEY, title=TITLE, status="scored")
        for mode in MODES:
            if mode not in caps.tension_modes():
                res.na[mode] = f"system does not declare {mode}_tensions"
                continue
            metrics, details, errors, miss, _ = score_mode(dataset, records, mode)
            res.metrics.update(metrics)
            res.details[mode] = details
            res.errors[mode] = errors
            res.missing[mode] = miss
        res.counts = {"reversal_arcs": len(dataset.reversal_arcs),
                      "hard_negative_arcs": len(dataset.hard_negative_arcs)}
        return res

    def outcomes(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
                 judge: Judge | None = None) -> list[ItemOutcome]:
        """Per item: arc detected (1/0) and hard negative left alone (1/0), per mode."""
        out: list[ItemOutcome] = []
        if self.not_applicable(caps, dataset):
            return out
        for mode in caps.tension_modes():
            _, _, _, _, per_conv = score_mode(dataset, records, mode)
            for c, s in per_conv.items():
                for aid in s.arc_ids:
                    out.append(ItemOutcome(item_id=f"{mode}:{aid}", item_type=f"A.{mode}:arc",
                                           conversation=c, value=float(aid in s.matched)))
                for hid in s.hn_ids:
                    out.append(ItemOutcome(item_id=f"{mode}:{hid}",
                                           item_type=f"A.{mode}:hard_negative", conversation=c,
                                           value=float(hid not in s.false_flags)))
        return out


TRACK = TensionTrack()
