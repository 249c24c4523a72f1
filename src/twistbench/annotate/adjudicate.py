"""`twist annotate adjudicate KEY QUEUE DECISIONS`: the third person's decisions become the next
key version.

The adjudicator fills the decision columns of queue.csv (or writes JSONL with the same keys):
`decision` is `keep` (the key's answer stands), `drop` (the item leaves the key) or `relabel`
(Track B only: `new_label` one of agrees / contradicts / agrees_with_change, or the key's own
aligned / contradicting / hard_negative; `evidence` the turns a now-contradicting draft
contradicts, as ids or as #positions from the item text), and `decision_reason` says why. Any
other wrong label is a `drop`: moving an arc between reversal and hard negative, or changing
which value of a chain is current, means re-authoring the item, not editing a field.

Then every item of a family below the threshold is dropped (whatever was decided for it; not
after a sampled pilot round), the decisions are applied, and datasets/versions.py writes
version X.(Y+1) with the pending errata of the key folded in, a changelog entry and the round's
agreement figures in the key's metadata (`meta.annotation[<new version>]`).
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from twistbench.annotate.agreement import QUEUE_FORMAT, Figures, passes
from twistbench.annotate.labels import DRAFT_LABEL_OF
from twistbench.datasets.keyfile import read_key
from twistbench.datasets.versions import Change, Release, release_next_version
from twistbench.errors import InputError

DECISIONS = ("keep", "drop", "relabel")
_POSITION = re.compile(r"^#(\d+)$")


@dataclass
class Queue:
    header: dict[str, Any]
    entries: dict[str, dict[str, Any]]  # queue id -> entry


def read_queue(path: str | Path) -> Queue:
    path = Path(path)
    try:
        lines = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines()
                 if ln.strip()]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"cannot read the queue: {exc}",
                         expected="queue.jsonl written by `twist annotate agreement`") from exc
    if not lines or lines[0].get("format") != QUEUE_FORMAT:
        raise InputError(str(path), "not an adjudication queue", where="line 1", field="format",
                         expected=repr(QUEUE_FORMAT))
    return Queue(header=lines[0], entries={e["queue_id"]: e for e in lines[1:]})


def read_decisions(path: str | Path) -> list[tuple[str, dict[str, str]]]:
    """(where, row) of a decisions CSV (the filled queue.csv) or JSONL."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"cannot read the decisions: {exc}") from exc
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines(keepends=True))
        if "queue_id" not in (reader.fieldnames or []) or "decision" not in reader.fieldnames:
            raise InputError(str(path), "missing columns", where="header row",
                             expected="queue_id, decision (new_label, evidence, decision_reason)")
        return [(f"row {i + 1}", {k: (v or "") for k, v in row.items() if k})
                for i, row in enumerate(reader)]
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append((f"line {n}", {k: str(v) if v is not None else "" for k, v in
                                           json.loads(line).items()}))
            except (json.JSONDecodeError, AttributeError) as exc:
                raise InputError(str(path), f"not a JSON object: {exc}", where=f"line {n}"
                                 ) from exc
    return rows


def _evidence(raw: str, turn_ids: list[str] | None, where: str, path: str) -> list[str] | None:
    pieces = [p for p in re.split(r"[\s,;]+", raw.strip()) if p]
    if not pieces:
        return None
    out = []
    for p in pieces:
        m = _POSITION.match(p)
        if m:
            if turn_ids is None:
                raise InputError(path, f"{p}: positions need the key's conversation",
                                 where=where, field="evidence", expected="turn ids")
            k = int(m[1])
            if not 1 <= k <= len(turn_ids):
                raise InputError(path, f"no turn {p} in the conversation", where=where,
                                 field="evidence", expected=f"#1 to #{len(turn_ids)}")
            out.append(turn_ids[k - 1])
        else:
            out.append(p)
    return out


def adjudicate(key_path: str | Path, queue_path: str | Path, decisions_path: str | Path,
               out: str | Path | None = None, min_kappa: float | None = None,
               on: date | None = None) -> tuple[Release, dict[str, Any]]:
    """Apply the queue's family threshold and the adjudicator's decisions; write the next key
    version. Returns the release and the annotation record written into the key's metadata."""
    queue = read_queue(queue_path)
    head = queue.header
    doc, digest = read_key(key_path)
    if (doc["version"], digest) != (head["key"]["version"], head["key"]["sha256"]):
        raise InputError(str(key_path), f"this is key {doc['version']} (sha256 {digest}); the "
                         f"queue is for key {head['key']['version']} (sha256 "
                         f"{head['key']['sha256']})", field="KEY",
                         expected="the key file the packet was exported from")
    threshold = head["threshold"] if min_kappa is None else min_kappa
    fams: dict[str, dict[str, Any]] = head["agreement"]["families"]
    failing = sorted(f for f, fig in fams.items() if not passes(_fig(fig), threshold))
    sampled = head.get("sample") is not None  # a pilot round drops no family (agreement.py)
    changes: list[Change] = []
    dropped: set[str] = set()
    for fam in [] if sampled else failing:
        fig = fams[fam]
        for item in head["family_members"].get(fam, []):
            dropped.add(item)
            changes.append(Change(item=item, action="drop",
                                  why=f"family {fam}: kappa {_k(fig)} below {threshold:g} "
                                  f"(annotation packet {head['packet']})"))
    conv_turns = _conversation_turns(doc["payload"])
    decided: dict[str, str] = {}
    counts: Counter[str] = Counter()
    for where, row in read_decisions(decisions_path):
        qid = row.get("queue_id", "").strip()
        entry = queue.entries.get(qid)
        if entry is None:
            raise InputError(str(decisions_path), f"queue id {qid!r} is not in the queue",
                             where=where, field="queue_id", expected="a queue id of queue.jsonl")
        decision = row.get("decision", "").strip().lower()
        if not decision:
            continue  # checked below: a needed decision that is missing is an error
        if qid in decided:
            raise InputError(str(decisions_path), f"{qid} decided twice (first at "
                             f"{decided[qid]})", where=where, field="queue_id",
                             expected="one decision per queue entry")
        decided[qid] = where
        if decision not in DECISIONS:
            raise InputError(str(decisions_path), f"unknown decision {decision!r}", where=where,
                             field="decision", expected=" | ".join(DECISIONS))
        counts[decision] += 1
        item = entry["item"]
        if item in dropped or decision == "keep":
            continue
        reason = row.get("decision_reason", "").strip() or "no reason given"
        why = f"adjudication {qid} (packet {head['packet']}): {reason}"
        if decision == "drop":
            changes.append(Change(item=item, action="drop", why=why))
            continue
        if entry["track"] != "B":
            raise InputError(str(decisions_path), f"{qid} ({item}) is a Track {entry['track']} "
                             "item: only a draft's label can be changed", where=where,
                             field="decision", expected="keep or drop")
        raw_label = row.get("new_label", "").strip()
        label = DRAFT_LABEL_OF.get(raw_label, raw_label)
        if label not in DRAFT_LABEL_OF.values():
            raise InputError(str(decisions_path), f"unknown label {raw_label!r}", where=where,
                             field="new_label",
                             expected=" | ".join([*DRAFT_LABEL_OF, *DRAFT_LABEL_OF.values()]))
        evidence = _evidence(row.get("evidence", ""), conv_turns.get(entry["conversation"]),
                             where, str(decisions_path))
        changes.append(Change(item=item, action="relabel", why=why, label=label,
                              evidence=evidence))
    missing = [q for q, e in queue.entries.items()
               if q not in decided and e["item"] not in dropped]
    if missing:
        raise InputError(str(decisions_path), f"{len(missing)} queue entries have no decision: "
                         f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}",
                         field="decision", expected="keep, drop or relabel for each of them")
    annotated = set(head["annotated"])
    record = {"packet": head["packet"], "annotators": head["annotators"],
              "method": head["method"], "threshold": threshold,
              "tracks": head["agreement"]["tracks"], "families": fams,
              "failing_families": failing, "dropped_families": [] if sampled else failing,
              "sample": head.get("sample"), "queue": len(queue.entries),
              "decisions": dict(sorted(counts.items())),
              "annotated": len(annotated),
              "not_annotated": sorted(i for lst in head["family_members"].values() for i in lst
                                      if i not in annotated and i not in dropped)}
    rel = release_next_version(key_path, changes, out=out, on=on,
                               why=f"annotation round {head['packet']} "
                               f"({len(head['annotators'])} annotators, adjudicated)",
                               meta={"annotation": record})
    return rel, record


def _fig(d: dict[str, Any]) -> Figures:
    return Figures(group=d["group"], n=d["n"], raw=d["raw"],
                   kappa=float("nan") if d["kappa"] is None else d["kappa"], kappa_ci=None,
                   categories=d["categories"], confusion={},
                   kappa_track=(float("nan") if d.get("kappa_track") is None
                                else d["kappa_track"]))


def _k(d: dict[str, Any]) -> str:
    k = d.get("kappa_track")
    return "undefined" if k is None else f"{k:.3f}"


def _conversation_turns(payload: dict[str, Any]) -> dict[str, list[str]]:
    convs = payload.get("conversations")
    if not isinstance(convs, list):
        return {}
    return {c["id"]: [e["id"] for e in c.get("events", [])] for c in convs}

