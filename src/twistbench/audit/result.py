"""What the audit returns: its configuration and result (audit.json is `AuditResult.as_dict()`).

Apart from core.py (which computes it) and report.py (which renders it), so that neither
imports the other's caller.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from twistbench.audit.metrics import METRICS, TraceScores
from twistbench.audit.targets import ANCHOR_POLICY, TARGETS


@dataclass
class AuditConfig:
    k: int
    metric_variant: str
    metric_definition: str
    n_resamples: int
    seed: int
    confidence: float
    min_change: float
    anchor_policy: str = ANCHOR_POLICY
    targets: tuple[str, ...] = TARGETS
    metrics: tuple[str, ...] = METRICS
    ci_method: str = "percentile bootstrap over queries (paired where runs/targets are paired)"


@dataclass
class AuditResult:
    """Everything the audit found; `as_dict()` is what audit.json holds."""

    config: AuditConfig
    runs: list[dict[str, Any]]
    shifts: list[dict[str, Any]]
    coverage_gap: dict[str, Any]
    instability: list[dict[str, Any]]
    comparisons: list[dict[str, Any]]
    recommendations: list[dict[str, Any]]
    contested: dict[str, Any]
    semantic: dict[str, Any] | None = None
    files: dict[str, str] = field(default_factory=dict)
    scores: dict[str, TraceScores] = field(default_factory=dict, repr=False)

    def as_dict(self) -> dict[str, Any]:
        # not asdict(self): it would deep-copy every per-query array of `scores` first
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "scores"}
        d["config"] = asdict(self.config)
        return clean_json(d)


def clean_json(obj: Any) -> Any:
    """JSON-safe: NaN -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(obj, dict):
        return {str(k): clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj
