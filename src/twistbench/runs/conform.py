"""`twist conform`: check a system against the contract on the built-in demo conversations.

Each declared capability is exercised once per conversation and its output validated; a declined
capability is reported as declined (the matching tracks will be N/A), never as a failure. Evidence
ids a system returns must name turns it was given. resolve is called on a tension the system
flagged; close (optional in the contract) ends each conversation. A failed check carries the
request that was sent and what came back, so the offending payload can be read off the report.
The oracle's gold channel is opened with the demo's gold (`gold`), as the runner opens it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel

from twistbench.contract import Capabilities, MemorySystem
from twistbench.datasets.demo import demo_dataset
from twistbench.model import Dataset
from twistbench.records import SystemCallError
from twistbench.runs.guard import GuardedSystem
from twistbench.sanitize import Redactor, type_name

_CONTRACT_CALLS = ("reset", "ingest", "flag_tensions", "recall", "check_alignment", "resolve",
                   "retrieve", "lineage")
MAX_PAYLOAD = 2000  # characters of a request or output kept in a failed check


@dataclass
class CheckResult:
    check: str
    status: str  # pass | fail | declined
    detail: str = ""
    call: str = ""
    conversation: str = ""
    request: Any = None  # what was sent (failed checks only)
    output: Any = None  # what came back (failed checks only)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _attr(obj: object, name: str) -> object:
    """getattr that treats a raising property as absent (a plug-in's attribute may raise)."""
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001
        return None


def check_conformance(system: MemorySystem, timeout_s: float = 30.0,
                      redactor: Redactor | None = None,
                      gold_channel: bool = False) -> list[CheckResult]:
    """Every check with its result. Details and payloads are redacted (a system may echo its
    API key). gold_channel: open the system's gold channel with the demo's gold first."""
    redactor = redactor or Redactor({})
    out = _checks(system, timeout_s, redactor, gold_channel)
    for r in out:
        r.detail = redactor.cut(r.detail, 500)
        r.request = _cut(r.request, redactor)
        r.output = _cut(r.output, redactor)
    return out


def _cut(value: Any, redactor: Redactor) -> Any:
    if value is None:
        return None
    text = redactor.text(json.dumps(value, ensure_ascii=False, default=str))
    if len(text) <= MAX_PAYLOAD:
        return json.loads(text)
    return text[:MAX_PAYLOAD] + " …(cut)"


@dataclass
class _Conv:
    """The checks of one conversation."""

    out: list[CheckResult]
    guarded: GuardedSystem
    conversation: str
    known: set[str]
    tensions: list[str] = field(default_factory=list)

    def ids_known(self, ids: list[str]) -> str | None:
        bad = sorted(set(ids) - self.known)
        return f"cites unknown turn ids {bad[:5]}" if bad else None

    def run(self, declared: bool, check: str, call: str, request: Any,
            fn: Callable[[], Any], validate: Callable[[Any], str | None]) -> Any:
        if not declared:
            self.out.append(CheckResult(check, "declined", "tracks needing it are N/A", call,
                                        self.conversation))
            return None
        self.guarded.last_rejected = None
        try:
            value = fn()
        except SystemCallError as exc:
            self.out.append(CheckResult(check, "fail", f"{exc.kind}: {exc.message}", call,
                                        self.conversation, request,
                                        self.guarded.last_rejected))
            return None
        problem = validate(value)
        if problem:
            self.out.append(CheckResult(check, "fail", problem, call, self.conversation, request,
                                        _plain(value)))
        else:
            self.out.append(CheckResult(check, "pass", "", call, self.conversation))
        return value


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value  # an output refused by the guard arrives as JSON text already


def _checks(system: MemorySystem, timeout_s: float, redactor: Redactor,
            gold_channel: bool) -> list[CheckResult]:
    out: list[CheckResult] = []
    missing = [c for c in _CONTRACT_CALLS if not callable(_attr(system, c))]
    out.append(CheckResult("has every contract method", "fail" if missing else "pass",
                           f"missing: {', '.join(missing)}" if missing else ""))
    caps = _attr(system, "capabilities")
    if not isinstance(caps, Capabilities):
        out.append(CheckResult("declares capabilities", "fail",
                               f"capabilities is {type_name(caps)}, expected Capabilities"))
        return out
    out.append(CheckResult("declares capabilities", "pass",
                           ", ".join(k for k, v in caps.as_dict().items() if v) or "none"))
    if missing:
        return out

    guarded = GuardedSystem(system, timeout_s, redactor=redactor)
    dataset = demo_dataset()
    try:
        if gold_channel:
            try:
                guarded.receive_gold(dataset)
            except SystemCallError as exc:
                out.append(CheckResult("gold channel", "fail", f"{exc.kind}: {exc.message}",
                                       "receive_gold"))
                return out
        for conv in dataset.conversations:
            _conversation(out, guarded, caps, dataset, conv.id)
    finally:
        guarded.close()
    return out


def _conversation(out: list[CheckResult], guarded: GuardedSystem, caps: Capabilities,
                  dataset: Dataset, conversation_id: str) -> None:
    conv = dataset.conversation(conversation_id)
    c = _Conv(out, guarded, conv.id, set(conv.event_index()))
    tag = f"[{conv.id}]"

    def tension_ids(ts: list[Any]) -> str | None:
        c.tensions.extend(t.id for t in ts)
        return c.ids_known([i for t in ts for i in (*t.claim_evidence, *t.new_evidence)])

    c.run(True, f"reset {tag}", "reset", {"conversation_id": conv.id},
          lambda: guarded.reset(conv.id), lambda _: None)
    for k, events in conv.sessions():
        c.run(True, f"ingest session {k} {tag}", "ingest",
              {"session": k, "events": [e.id for e in events]},
              lambda ev=events: guarded.ingest(ev), lambda r: tension_ids(r.tensions))
    c.run(caps.batch_tensions, f"flag_tensions {tag}", "flag_tensions", {},
          guarded.flag_tensions, tension_ids)
    query = dataset.update_chains[0].queries[0].text
    c.run(caps.recall, f"recall {tag}", "recall", {"query": query},
          lambda: guarded.recall(query), lambda a: c.ids_known(a.evidence))
    draft = dataset.drafts[0].text
    c.run(caps.check_alignment, f"check_alignment {tag}", "check_alignment", {"draft": draft},
          lambda: guarded.check_alignment(draft),
          lambda v: c.ids_known([i for x in v.conflicts for i in x.evidence]))
    c.run(caps.retrieve, f"retrieve {tag}", "retrieve", {"query": "renewal", "k": 5},
          lambda: guarded.retrieve("renewal", 5),
          lambda hits: None if len(hits) <= 5 else f"returned {len(hits)} > k=5 ids")
    c.run(caps.lineage, f"lineage {tag}", "lineage", {}, guarded.lineage,
          lambda recs: c.ids_known([s for r in recs for s in r.sources]))
    if caps.resolve and c.tensions:
        tid = c.tensions[0]
        c.run(True, f"resolve {tag}", "resolve", {"tension_id": tid},
              lambda: guarded.resolve(tid), lambda _: None)
    elif caps.resolve:
        out.append(CheckResult(f"resolve {tag}", "pass", "declared; not exercised: the system "
                               "flagged no tension here to resolve", "resolve", conv.id))
    else:
        out.append(CheckResult(f"resolve {tag}", "declined", "Track C post-resolution is N/A",
                               "resolve", conv.id))
    failed = guarded.end_conversation()
    out.append(CheckResult(f"close {tag}", "fail" if failed else "pass",
                           f"{failed.kind}: {failed.message}" if failed else "", "close",
                           conv.id, {} if failed else None))
