"""Small hand-built datasets, records and a fake guarded system for the track tests.

Import with `from twist_fixtures import ...` (pytest puts this folder on sys.path)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from twistbench.model import (
    Answer,
    Conversation,
    Dataset,
    Event,
    IngestResult,
    Tension,
    Verdict,
)
from twistbench.records import ItemError, ItemRecord, SystemCallError, stable_hash

T0 = datetime(2025, 1, 1)


def conversation(conv_id: str, sessions: list[list[tuple[str, str]]]) -> Conversation:
    """sessions: per session a list of (speaker, text); turn ids '<conv>:<s>:<i>'."""
    events = []
    n = 0
    for si, turns in enumerate(sessions, start=1):
        for ti, (speaker, text) in enumerate(turns):
            events.append(Event(id=f"{conv_id}:{si}:{ti}", conversation=conv_id, session=si,
                                timestamp=T0 + timedelta(days=7 * si, minutes=n), speaker=speaker,
                                text=text))
            n += 1
    return Conversation(id=conv_id, speakers=sorted({e.speaker for e in events}), events=events)


def dataset(conversations: list[Conversation], **items: Any) -> Dataset:
    return Dataset(name="toy", version="toy-1", key_sha256="toysha", conversations=conversations,
                   **items)


def ok_record(item_id: str, track: str, kind: str, conv: str, output: dict) -> ItemRecord:
    return ItemRecord(item_id=item_id, track=track, kind=kind, conversation=conv,
                      input_hash=stable_hash(item_id), output=output)


def err_record(item_id: str, track: str, kind: str, conv: str, call: str = "recall") -> ItemRecord:
    return ItemRecord(item_id=item_id, track=track, kind=kind, conversation=conv,
                      input_hash=stable_hash(item_id), output=None,
                      error=ItemError(kind="exception", call=call, message="boom"))


def ingest_record(conv: str, session: int, tensions=(), referrals=(), audits=(),
                  error: bool = False) -> ItemRecord:
    iid = f"ingest:{conv}:s{session}"
    if error:
        return err_record(iid, "ingest", "session", conv, call="ingest")
    result = IngestResult(tensions=[t if isinstance(t, Tension) else Tension(**t)
                                    for t in tensions],
                          referrals=list(referrals), audit_records=list(audits))
    return ok_record(iid, "ingest", "session", conv,
                     {"session": session, "result": result.model_dump(mode="json")})


def tension(tid: str, claim: list[str], new: list[str]) -> dict:
    return {"id": tid, "claim_evidence": claim, "new_evidence": new, "rationale": ""}


def answer_output(text: str, evidence: list[str] | None = None) -> dict:
    return {"answer": Answer(text=text, evidence=evidence or []).model_dump(mode="json")}


class FakeGuarded:
    """Stands in for the SystemView (runs.guard.GuardedSystem) inside task.run: canned answers,
    a call log."""

    def __init__(self, answers: dict[str, Answer] | None = None,
                 verdicts: dict[str, Verdict] | None = None,
                 tensions: list[Tension] | None = None, fail: set[str] | None = None, caps=None):
        self.answers = answers or {}
        self.verdicts = verdicts or {}
        self.tensions = tensions or []
        self.fail = fail or set()
        self.calls: list[tuple[str, str]] = []
        self.capabilities = caps

    def _check(self, call: str, arg: str) -> None:
        self.calls.append((call, arg))
        if call in self.fail or arg in self.fail:
            raise SystemCallError("exception", call, "fails on purpose")

    def recall(self, query: str) -> Answer:
        self._check("recall", query)
        return self.answers.get(query, Answer(text="I don't know."))

    def check_alignment(self, draft: str) -> Verdict:
        self._check("check_alignment", draft)
        return self.verdicts.get(draft, Verdict(aligned=True))

    def flag_tensions(self) -> list[Tension]:
        self._check("flag_tensions", "")
        return list(self.tensions)

    def resolve(self, tension_id: str) -> None:
        self._check("resolve", tension_id)
