"""Track B: output-time draft alignment (whitepaper §3, Track B; TWIST-v1.0 Track B scorer).

Driving: after full ingest, one check_alignment(draft text) per draft ("B:<draft.id>",
PHASE_QUERY). The output keeps the verdict, the cited ids in order (conflicts flattened,
duplicates dropped) and the conflicts as returned.

Scoring (same definitions as the public TWIST-v1.0 scorer):
- contradiction recall (CR): contradicting drafts flagged (aligned = false);
- aligned specificity (AS): aligned drafts passed; hard-negative specificity (HNS): hard-negative
  drafts passed — the paired partner of balanced accuracy;
- balanced accuracy: (CR + AS) / 2, hard negatives excluded. This is the public TWIST-v1.0
  definition (`balanced_acc` in the TWIST results files): HNS is reported beside it as its partner
  and must not also sit inside it. (Releases up to 0.1.0 averaged CR with the specificity over
  aligned and hard-negative drafts together, which disagreed with 12 of the 13 published
  systems.) `specificity` over both non-contradicting labels is still reported on its own;
- attribution (conditional): of the correctly flagged contradicting drafts, those whose first
  three cited ids include a gold evidence id; grounded contradiction recall: the same count over
  all contradicting drafts.

Exchange format (public TWIST predictions): one JSON object per line
{"item_id": <draft id>, "aligned": bool, "evidence": [turn ids, best first]}.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from twistbench.contract import Capabilities
from twistbench.errors import InputError, decode_utf8, load_json, read_bytes
from twistbench.judges.base import Judge
from twistbench.model import Dataset, Draft
from twistbench.records import ItemRecord, stable_hash
from twistbench.stats import balanced_accuracy, proportion
from twistbench.tracks.base import (
    PHASE_QUERY,
    ConversationState,
    HeadlinePair,
    ItemOutcome,
    SystemView,
    Task,
    TrackResult,
)

KEY = "B"
TITLE = "Output-time draft alignment"
ATTRIBUTION_BUDGET = 3  # only the first three cited ids count
LABELS = ("contradicting", "aligned", "hard_negative")


def item_id(draft_id: str) -> str:
    return f"{KEY}:{draft_id}"


def draft_id_of(task_item_id: str) -> str:
    """The dataset draft id of a Track B task id ('B:conv-26:v1b1' -> 'conv-26:v1b1')."""
    prefix = f"{KEY}:"
    if not task_item_id.startswith(prefix):
        raise ValueError(f"not a Track B item id: {task_item_id!r}")
    return task_item_id[len(prefix):]


def _make_run(text: str):
    def run(guarded: SystemView, state: ConversationState) -> dict[str, Any]:
        v = guarded.check_alignment(text)
        cited: list[str] = []
        for c in v.conflicts:
            for e in c.evidence:
                if e not in cited:
                    cited.append(e)
        return {"aligned": v.aligned, "evidence": cited,
                "conflicts": [c.model_dump(mode="json") for c in v.conflicts]}
    return run


def score_item(draft: Draft, aligned: bool, evidence: list[str]) -> dict[str, Any]:
    """Per-item fields: verdict_correct, and attributed (contradicting + flagged only)."""
    correct = aligned == draft.gold_aligned
    attributed = None
    if draft.label == "contradicting" and correct:
        cited = [e for e in evidence if isinstance(e, str)][:ATTRIBUTION_BUDGET]
        attributed = bool(set(cited) & set(draft.evidence))
    return {"verdict_correct": correct, "attributed": attributed}


def _verdicts(dataset: Dataset, records: list[ItemRecord]
              ) -> tuple[dict[str, tuple[Draft, bool, list[str]]], dict[str, int], dict[str, int]]:
    """draft id -> (draft, predicted aligned, evidence); errors and missing by label."""
    drafts = {d.id: d for d in dataset.drafts}
    got: dict[str, tuple[Draft, bool, list[str]]] = {}
    errors: dict[str, int] = defaultdict(int)
    for r in records:
        if r.track != KEY:
            continue
        did = draft_id_of(r.item_id)
        d = drafts.get(did)
        if d is None:
            continue  # a record for a draft the dataset does not have: not ours to score
        if not r.ok or r.output is None:
            errors[d.label] += 1
            continue
        got[did] = (d, *_verdict_of(r))
    missing: dict[str, int] = defaultdict(int)
    err_ids = {draft_id_of(r.item_id) for r in records if r.track == KEY and not r.ok}
    for d in dataset.drafts:
        if d.id not in got and d.id not in err_ids:
            missing[d.label] += 1
    return got, dict(errors), dict(missing)


def _verdict_of(r: ItemRecord) -> tuple[bool, list[str]]:
    """(aligned, cited ids) of a saved Track B record; InputError for an output of another
    shape (a hand-edited or foreign items.jsonl), which would otherwise be scored as a guess."""
    out = r.output or {}
    aligned = out.get("aligned")
    evidence = out.get("evidence")
    if evidence is None:
        evidence = []
    if not isinstance(aligned, bool):
        raise InputError("items.jsonl", f"aligned is {aligned!r}", where=f"item {r.item_id}",
                         field="output.aligned", expected="true or false")
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise InputError("items.jsonl", "not a list of turn ids", where=f"item {r.item_id}",
                         field="output.evidence", expected='a list like ["D19:1"]')
    return aligned, list(evidence)


def score_verdicts(verdicts: Iterable[tuple[Draft, bool, list[str]]]) -> dict[str, Any]:
    """Pure Track B metrics from (draft, predicted aligned, cited ids) triples."""
    by_label: dict[str, list[tuple[Draft, dict]]] = defaultdict(list)
    per_conv: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for d, aligned, ev in verdicts:
        s = score_item(d, aligned, ev)
        by_label[d.label].append((d, s))
        pc = per_conv[d.conversation]
        if d.label == "contradicting":
            pc[0] += s["verdict_correct"]
            pc[1] += 1
        elif d.label == "aligned":  # hard negatives are HNS, the partner, never inside balanced
            pc[2] += s["verdict_correct"]
            pc[3] += 1

    def k_of(label: str) -> tuple[int, int]:
        rows = by_label.get(label, [])
        return sum(s["verdict_correct"] for _, s in rows), len(rows)

    cr_k, cr_n = k_of("contradicting")
    as_k, as_n = k_of("aligned")
    hn_k, hn_n = k_of("hard_negative")
    flagged = [s for _, s in by_label.get("contradicting", []) if s["verdict_correct"]]
    attr_k = sum(bool(s["attributed"]) for s in flagged)
    metrics = {
        "contradiction_recall": proportion("contradiction_recall", cr_k, cr_n),
        "aligned_specificity": proportion("aligned_specificity", as_k, as_n),
        "hard_negative_specificity": proportion("hard_negative_specificity", hn_k, hn_n),
        "specificity": proportion("specificity", as_k + hn_k, as_n + hn_n,
                                  note="aligned and hard-negative drafts together"),
        "balanced_accuracy": balanced_accuracy(
            "balanced_accuracy", {c: tuple(v) for c, v in per_conv.items()},
            note="(contradiction recall + aligned specificity) / 2, hard negatives excluded "
                 "(public TWIST-v1.0 definition)"),
        "attribution": proportion("attribution", attr_k, len(flagged),
                                  note="first 3 cited ids, over correctly flagged contradictions"),
        "grounded_contradiction_recall": proportion(
            "grounded_contradiction_recall", attr_k, cr_n,
            note="flagged with a gold id in the first 3 cited, over all contradicting drafts"),
    }
    fam: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for label, rows in by_label.items():
        for d, s in rows:
            key = f"{label}/{d.family or '-'}"
            fam[key][0] += s["verdict_correct"]
            fam[key][1] += 1
    return {"metrics": metrics,
            "by_family": {k: proportion(k, a, b).model_dump() for k, (a, b) in sorted(fam.items())}}


class AlignmentTrack:
    key = KEY
    title = TITLE
    headline = (HeadlinePair("B", "B", KEY, "balanced_accuracy", "hard_negative_specificity",
                             "balanced / hard-negative", True, True),)

    def not_applicable(self, caps: Capabilities, dataset: Dataset) -> str | None:
        if not caps.check_alignment:
            return "system does not declare check_alignment"
        if not dataset.drafts:
            return "dataset has no drafts"
        return None

    def tasks(self, dataset: Dataset, conversation_id: str, caps: Capabilities,
              judge: Judge | None = None) -> list[Task]:
        if self.not_applicable(caps, dataset):
            return []
        out = []
        for d in dataset.items_of(conversation_id, "drafts"):
            out.append(Task(
                item_id=item_id(d.id), track=KEY, kind=d.label, conversation=conversation_id,
                phase=PHASE_QUERY, request={"call": "check_alignment", "draft": d.text},
                run=_make_run(d.text),
                score=(lambda out, d=d: score_item(d, bool(out["aligned"]),
                                                   list(out.get("evidence") or []))),
            ))
        return out

    def score(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
              judge: Judge | None = None) -> TrackResult:
        why = self.not_applicable(caps, dataset)
        if why:
            return TrackResult.not_applicable(KEY, TITLE, why)
        got, errors, missing = _verdicts(dataset, records)
        scored = score_verdicts(got.values())
        return TrackResult(
            track=KEY, title=TITLE, status="scored", metrics=scored["metrics"],
            errors=errors, missing=missing,
            counts={label: sum(d.label == label for d in dataset.drafts) for label in LABELS},
            details={"by_family": scored["by_family"]},
        )

    def outcomes(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
                 judge: Judge | None = None) -> list[ItemOutcome]:
        """Per draft: verdict correct (1/0), typed by gold label."""
        if self.not_applicable(caps, dataset):
            return []
        got, _, _ = _verdicts(dataset, records)
        return [ItemOutcome(item_id=did, item_type=f"B:{d.label}", conversation=d.conversation,
                            value=float(aligned == d.gold_aligned))
                for did, (d, aligned, _) in got.items()]


TRACK = AlignmentTrack()


# ---------------------------------------------------------------------------------------------
# The public TWIST predictions format


def write_predictions(records: Iterable[ItemRecord]) -> list[str]:
    """One JSON line {"item_id", "aligned", "evidence"} per successful Track B record, keyed by
    the dataset draft id (not the task id). Failed calls are left out: they are errors, and the
    public format has no way to say so (the run folder keeps them)."""
    lines = []
    for r in records:
        if r.track != KEY or not r.ok or r.output is None:
            continue
        aligned, evidence = _verdict_of(r)
        lines.append(json.dumps({"item_id": draft_id_of(r.item_id), "aligned": aligned,
                                 "evidence": evidence}, ensure_ascii=False))
    return lines


_LINE_SHAPE = '{"item_id": str, "aligned": bool, "evidence": [str]}'


class Prediction(NamedTuple):
    """One line of a predictions file; `line` (1-based) lets a later check name where it is."""

    aligned: bool
    evidence: list[str]
    line: int


def read_predictions(path: str | Path) -> dict[str, Prediction]:
    """Read a predictions file: item id -> Prediction. Blank lines are skipped.

    Raises InputError naming the file, the line number and the field for: invalid JSON, a line
    that is not an object, a missing or non-string item_id, aligned that is not a boolean,
    evidence that is not a list of strings, and a duplicate item_id."""
    path = Path(path)
    text = decode_utf8(read_bytes(path, "predictions file"), str(path))
    out: dict[str, Prediction] = {}
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {no}"
        obj = load_json(line, str(path), where, expected=_LINE_SHAPE)
        if not isinstance(obj, dict):
            raise InputError(str(path), "not a JSON object", where=where, expected=_LINE_SHAPE)
        iid = obj.get("item_id")
        if not isinstance(iid, str) or not iid:
            raise InputError(str(path), "missing or not a string", where=where, field="item_id",
                             expected="the draft id, e.g. 'conv-26:v1b1'")
        if not isinstance(obj.get("aligned"), bool):
            raise InputError(str(path), f"is {obj.get('aligned')!r}", where=where, field="aligned",
                             expected="true or false")
        ev = obj.get("evidence", [])
        if ev is None:
            ev = []
        if not isinstance(ev, list) or not all(isinstance(e, str) for e in ev):
            raise InputError(str(path), f"is {ev!r}", where=where, field="evidence",
                             expected="a list of turn id strings")
        if iid in out:
            raise InputError(str(path), f"duplicate item_id {iid!r}", where=where,
                             field="item_id", expected="one line per item")
        out[iid] = Prediction(obj["aligned"], list(ev), no)
    return out


def records_from_predictions(dataset: Dataset, predictions: dict[str, Prediction],
                             source: str = "predictions") -> list[ItemRecord]:
    """ItemRecords for predictions made elsewhere, so they score through the same code.
    Raises InputError, naming the prediction's line in `source`, for a prediction naming a
    draft the dataset does not have."""
    drafts = {d.id: d for d in dataset.drafts}
    out = []
    for did, p in predictions.items():
        d = drafts.get(did)
        if d is None:
            example = f", e.g. {dataset.drafts[0].id!r}" if dataset.drafts else " (it has none)"
            raise InputError(source, f"{did!r} is not a draft of {dataset.name}",
                             where=f"line {p.line}", field="item_id",
                             expected=f"a draft id of key {dataset.version}{example}")
        out.append(ItemRecord(item_id=item_id(did), track=KEY, kind=d.label,
                              conversation=d.conversation,
                              input_hash=stable_hash({"call": "check_alignment", "draft": d.text}),
                              output={"aligned": p.aligned, "evidence": p.evidence}))
    return out


def score_predictions(dataset: Dataset, path: str | Path) -> TrackResult:
    """Score a public-format predictions file against the dataset's drafts. Drafts without a
    prediction are reported as missing (the public scorer refuses them; we count them)."""
    preds = read_predictions(path)
    recs = records_from_predictions(dataset, preds, source=str(path))
    return TRACK.score(dataset, recs, Capabilities(check_alignment=True))
