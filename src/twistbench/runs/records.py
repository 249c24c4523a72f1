"""The per-item record of a run folder (one line of items.jsonl)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ItemError(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description="exception | timeout | invalid_output | declined")
    call: str = Field(description="the system call that failed, e.g. check_alignment")
    message: str


class ItemRecord(BaseModel):
    """What one item produced. `error` set means: counted as an error, excluded from metrics."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    track: str = Field(description="ingest | A | B | C | D | locomo")
    kind: str = Field(description="item type within the track, e.g. draft, current, probe")
    conversation: str
    input_hash: str
    output: dict[str, Any] | None = None
    scores: dict[str, Any] = Field(default_factory=dict)
    error: ItemError | None = None
    latency_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def stable_hash(obj: Any) -> str:
    """sha256 of a canonical JSON encoding (sorted keys, no whitespace)."""
    data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()
