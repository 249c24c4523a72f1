"""Toy systems for the core tests. Importable as `toy_systems:Class` (tests/ on PYTHONPATH).

TOY_LOG (environment): when set, every call is appended to that file as one JSON line, so a
test can see exactly which calls a system received (the log path is deliberately not an option:
options are part of the run's fingerprint).
"""

from __future__ import annotations

import json
import os
import threading
import time
import zlib
from collections.abc import Sequence

from twistbench.contract import BaseSystem, Capabilities
from twistbench.model import Answer, Event, IngestResult, Tension, Verdict

# Hangs that tests control. A toy that hangs sets HANGING and blocks until RELEASE (or its
# hang_s) passes. `hang_aware_wait` replaces the guard's clock in-process: a call times out
# exactly when the toy signals its hang, so no test depends on how fast the machine is.
HANGING = threading.Event()
RELEASE = threading.Event()


def hang(seconds: float) -> None:
    HANGING.set()
    RELEASE.wait(seconds)


def hang_aware_wait(done: threading.Event, timeout_s: float) -> bool:
    while not done.is_set():
        if HANGING.is_set():
            HANGING.clear()
            return done.is_set()
        done.wait(0.002)
    return True


def _log(call: str, arg: str) -> None:
    path = os.environ.get("TOY_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"call": call, "arg": arg}) + "\n")


class KeywordToy(BaseSystem):
    """Deterministic: recall returns the stored turn sharing most words with the query; flags a
    tension when a speaker's new turn shares 3+ words with an earlier turn of theirs and one of
    the two contains a negation-ish word. Enough to exercise every track."""

    name = "keyword-toy"
    capabilities = Capabilities(online_tensions=True, batch_tensions=True, check_alignment=True,
                                recall=True, resolve=True)

    def __init__(self, delay: float = 0.0, api_key: str = ""):
        self.delay = float(delay)
        self.api_key = api_key
        self.events: list[Event] = []
        self.tensions: list[Tension] = []
        self.resolved: set[str] = set()

    def config(self) -> dict:
        return {"delay": self.delay, "api_key": self.api_key}

    def reset(self, conversation_id: str) -> None:
        _log("reset", conversation_id)
        self.events, self.tensions, self.resolved = [], [], set()

    @staticmethod
    def _words(text: str) -> set[str]:
        return {w.strip(".,!?;:'\"").lower() for w in text.split() if len(w) > 3}

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        _log("ingest", events[0].id if events else "")
        new: list[Tension] = []
        for ev in events:
            for old in self.events:
                if old.speaker != ev.speaker:
                    continue
                shared = self._words(old.text) & self._words(ev.text)
                neg = any(w in ev.text.lower() for w in ("competitor", "dropping", "no longer"))
                if len(shared) >= 2 and neg:
                    t = Tension(id=f"t{len(self.tensions)}", claim_evidence=[old.id],
                                new_evidence=[ev.id], rationale=f"shares {sorted(shared)[:3]}")
                    self.tensions.append(t)
                    new.append(t)
                    break
            self.events.append(ev)
        return IngestResult(tensions=new)

    def flag_tensions(self) -> list[Tension]:
        _log("flag_tensions", "")
        return list(self.tensions)

    def recall(self, query: str) -> Answer:
        _log("recall", query)
        if self.delay:
            time.sleep(self.delay)
        q = self._words(query)
        best = max(self.events, key=lambda e: len(q & self._words(e.text)), default=None)
        if best is None:
            return Answer(text="I don't know.")
        return Answer(text=best.text, evidence=[best.id])

    def check_alignment(self, draft: str) -> Verdict:
        _log("check_alignment", draft)
        if self.delay:
            time.sleep(self.delay)
        return Verdict(aligned=True)

    def resolve(self, tension_id: str) -> None:
        _log("resolve", tension_id)
        self.resolved.add(tension_id)


class FaultyToy(KeywordToy):
    """Raises, hangs, or returns garbage on a deterministic subset of calls (by a hash of the
    input), so a run can check every fault is counted as an error and none is scored."""

    name = "faulty-toy"

    def __init__(self, hang_s: float = 3.0):
        super().__init__()
        self.hang_s = float(hang_s)

    @staticmethod
    def fault(arg: str) -> str | None:
        return ["raise", "hang", "garbage", None][zlib.crc32(arg.encode()) % 4]

    def recall(self, query: str):  # type: ignore[override]
        f = self.fault(query)
        if f == "raise":
            raise RuntimeError("recall exploded")
        if f == "hang":
            hang(self.hang_s)
        if f == "garbage":
            return {"txt": 42}
        return super().recall(query)

    def check_alignment(self, draft: str):  # type: ignore[override]
        f = self.fault(draft)
        if f == "raise":
            raise ValueError("alignment exploded")
        if f == "hang":
            hang(self.hang_s)
        if f == "garbage":
            return {"aligned": "maybe-ish"}
        return super().check_alignment(draft)


class ProcessProbe(KeywordToy):
    """For --isolate process tests: "pid" answers with its process id, "hang" never returns,
    "huge" returns an output larger than a small cap."""

    name = "process-probe"

    def recall(self, query: str) -> Answer:
        if query == "hang":
            time.sleep(3600)
        if query == "huge":
            return Answer(text="x" * 5000)
        if query == "pid":
            return Answer(text=str(os.getpid()))
        return super().recall(query)
