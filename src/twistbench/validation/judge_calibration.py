"""`twist judge calibrate`: a judge against the LoCoMo audit's decoys and the TWIST decoys of
some datasets' Track C chains (judges/calibration.py has the decoys, the rates and the store).

The record names its sources (each decoy file's sha256, each dataset's version and key sha256,
the sample size) and is stored per judge identity, where runs and reports find it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from twistbench.datasets.decoys import decoy_path, load_locomo_decoys
from twistbench.datasets.keyfile import sha256_file
from twistbench.datasets.paths import LOCOMO_DECOYS
from twistbench.judges.base import Judge
from twistbench.judges.calibration import (
    ChainDecoy,
    calibrate,
    store_calibration,
    twist_decoys,
)
from twistbench.model import Dataset, QADecoy


def sampled(items: Sequence[Any], key: Any, limit: int | None) -> list[Any]:
    """At most `limit` items per style, chosen by the sha256 of their ids (the same sample on
    every machine and for every judge); all of them when limit is None."""
    if limit is None:
        return list(items)
    out: list[Any] = []
    by_style: dict[str, list[Any]] = {}
    for item in items:
        by_style.setdefault(item.style, []).append(item)
    for group in by_style.values():
        order = sorted(group, key=lambda it: hashlib.sha256(key(it).encode()).hexdigest())
        keep = {id(it) for it in order[:limit]}
        out.extend(it for it in group if id(it) in keep)
    return out


def run_calibration(judge: Judge, datasets: Sequence[Dataset], *, locomo_decoys: bool = True,
                    sample: int | None = None, out: str | Path | None = None
                    ) -> tuple[dict[str, Any], Path]:
    """Calibrate `judge`; store the record (in `out`, else the calibration folder) and return
    it with its path."""
    qa: list[QADecoy] = []
    sources: dict[str, Any] = {"sample_per_style": sample, "locomo_decoys": {}, "datasets": []}
    if locomo_decoys:
        for style in LOCOMO_DECOYS:
            path = decoy_path(style)
            qa.extend(load_locomo_decoys(style, path))
            sources["locomo_decoys"][style] = {"file": path.name, "sha256": sha256_file(path)}
    chains: list[ChainDecoy] = []
    for ds in datasets:
        made, skipped = twist_decoys(ds.update_chains)
        chains.extend(made)
        sources["datasets"].append({"name": ds.name, "version": ds.version,
                                    "sha256": ds.key_sha256, "chains": len(ds.update_chains),
                                    "skipped": skipped})
    qa = sampled(qa, lambda d: d.id, sample)
    chains = sampled(chains, lambda d: d.chain.id, sample)
    record = calibrate(judge, qa, chains, sources)
    return record, store_calibration(record, out)
