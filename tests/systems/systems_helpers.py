"""Helpers for the reference-system tests: small hand-made conversations and a runner wrapper."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from twistbench.model import Conversation, Event

START = datetime(2025, 1, 6, 9, 0)


def conversation(conv_id: str, script: list[tuple[int, int, str, str]]) -> Conversation:
    """script rows: (session, day offset, speaker, text)."""
    events = [Event(id=f"{conv_id}:e{i:02d}", conversation=conv_id, session=s,
                    timestamp=START + timedelta(days=d, minutes=i), speaker=sp, text=t)
              for i, (s, d, sp, t) in enumerate(script)]
    return Conversation(id=conv_id, speakers=sorted({e.speaker for e in events}), events=events)


def ingest_all(system, conv: Conversation) -> list:
    """reset + ingest session by session; returns the IngestResults."""
    system.reset(conv.id)
    return [system.ingest(evs) for _, evs in conv.sessions()]


def run_and_score(dataset, spec: str, tmp: Path, options: dict | None = None):
    """Drive a registered system through every track with the real runner; return RunScores."""
    from twistbench.runs.folder import Redactor, RunFolder
    from twistbench.runs.runner import RunSettings, run_system
    from twistbench.systems import make_system
    from twistbench.tracks import score_run

    system, entry = make_system(spec, options or {})
    outcome = run_system(dataset, system, tmp / spec, spec=spec, options=options or {},
                         gold_channel=entry.gold_channel, settings=RunSettings(progress=False))
    assert outcome.errors == 0, outcome.errors_by_track
    records = RunFolder(tmp / spec, Redactor({})).records()
    return score_run(dataset, records, system.capabilities)


def metric(scores, track: str, name: str):
    m = scores.tracks[track].metrics.get(name)
    return None if m is None else m.value
