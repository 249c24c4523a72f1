"""The TIAP audit: rescore saved traces under Raw / Source / Canonical and compare.

What it computes (TIAP §3-§5), all on fixed saved rankings:
- per run: coverage per target (queries with an eligible id; targetless queries are listed,
  never scored), means over eligible queries and over the run's shared subset;
- score shifts: for each target pair (Source-Raw, Canonical-Raw, Canonical-Source) the mean
  per-query difference on that pair's shared subset, with a paired bootstrap CI;
- coverage gap: Raw score of queries with a Canonical target minus queries without one, per run
  (independent-groups bootstrap) and as the mean run-level gap;
- instability: per run and target pair, the share of queries whose score changes at all and by
  at least `min_change`, overall and per query category;
- run comparisons: Δ_t(A, B) = M_t(A) - M_t(B) per target on the queries eligible under t in
  both runs (n per target), paired bootstrap CI; the same on the shared subset (eligible under
  all three targets in both runs) with winner flips (Δ changes sign across targets). An empty
  subset is n = 0 with the reason (which run lacks which target), never a tie;
- design recommendations: per group of configurations, the best one per metric and target on
  the queries eligible under that target in every member, and whether it changes with the
  target;
- contested credits (raw_miss / source_hit / canonical_hit) with a CSV template for raters, and
  the semantic audit of any labels given.
Outputs in `out_dir`: audit.json, audit.md, per_query.jsonl, contested_cases.jsonl,
contested_labels_template.csv and trec/<run>/{run.txt, qrels.<target>.txt}.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from itertools import combinations, repeat
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from twistbench.audit import contested as ct
from twistbench.audit.metrics import (
    METRICS,
    VARIANTS,
    TraceScores,
    rescore,
    score_files,
    select_queries,
)
from twistbench.audit.report import render_audit_markdown
from twistbench.audit.result import AuditConfig, AuditResult
from twistbench.audit.scratch import scratch_folder
from twistbench.audit.targets import (
    TARGET_LABELS,
    TARGETS,
    CodedGold,
    CodedLineage,
    build_targets,
    code_gold,
    code_lineage,
    code_rows,
    eligible_pairs,
    read_coded_lineage,
)
from twistbench.audit.traces import (
    Gold,
    Lineage,
    Trace,
    TraceRun,
    TrecTee,
    Unusual,
    _open,
    arrow_available,
    bulk_build,
    encoded_traces,
    iter_encoded_chunks,
    iter_trace_chunks,
    read_gold,
    release_arrow_memory,
    run_name,
    trace_format,
    trec_id,
    write_trec_encoded,
    write_trec_qrels_coded,
    write_trec_traces,
)
from twistbench.errors import InputError
from twistbench.model import LineageRow
from twistbench.stats import (
    CONFIDENCE,
    TIAP_BOOTSTRAP_SEED,
    TIAP_RESAMPLES,
    BootstrapBatch,
    Interval,
)

TARGET_PAIRS: tuple[tuple[str, str], ...] = (("src", "raw"), ("can", "raw"), ("can", "src"))
OnStage = Callable[[str, float], None]  # (stage name, wall seconds), `twist audit --profile`
MIN_CHANGE = 0.1
_EPS = 1e-12


@contextmanager
def _stage(on_stage: OnStage | None, name: str) -> Iterator[None]:
    """Times one stage of the audit for `on_stage` (nothing is timed without one)."""
    if on_stage is None:
        yield
        return
    t0 = time.perf_counter()
    yield
    on_stage(name, time.perf_counter() - t0)


@dataclass(frozen=True)
class TraceFile:
    """A run left on disk (`twist audit`): scored as its trace file streams, by chunks of
    queries, keeping per-query results only; what needs rankings again (the contested cases,
    the TREC run export) streams the file once more. Memory does not grow with the traces."""

    name: str
    path: str
    fmt: str | None = None


AuditRun = TraceRun | TraceFile  # a run held in memory (native matrix) or a trace file


@dataclass(frozen=True, eq=False)
class LineageFile:
    """A store's lineage read as integer codes only (`twist audit`): its rows are never held
    as objects; the contested cases read back the few rows they quote (contested_index)."""

    path: str
    coded: CodedLineage


AuditLineage = Lineage | LineageFile


def _stored_memories(lin: AuditLineage) -> int:
    return len(lin.rows) if isinstance(lin, Lineage) else lin.coded.rows


def _coded_lineage(lin: AuditLineage) -> CodedLineage:
    if isinstance(lin, LineageFile):
        return lin.coded
    with bulk_build():
        return code_lineage(lin)


def contested_index(lin: LineageFile, memories: set[tuple[str, str]],
                    turns: set[tuple[str, str]]) -> ct.LineageIndex:
    """The LineageIndex of the lineage rows contested cases quote: the credited memories
    (conversation, memory id) and the raw memories of the anchor turns (conversation, turn),
    read from the file in its order (so a turn's text is the first raw memory's, as in the
    whole index). The file was read and checked once already (its coding). Only those
    memories and turns are indexed."""
    index = ct.LineageIndex(Lineage(lin.path, []))
    loads = orjson.loads
    with _open(Path(lin.path)) as fh, bulk_build():
        for line in fh:
            if not line.strip():
                continue
            obj = loads(line)
            conv = obj.get("conversation", "")
            key = (conv, obj["memory_id"])
            quoted = key in memories
            text_of = [(conv, a) for a in obj["sources"] if (conv, a) in turns] \
                if obj["raw"] and obj.get("text") else []
            if quoted or text_of:
                row = LineageRow.model_validate(obj)
                if quoted:
                    index.rows[key] = row
                for turn in text_of:
                    index.raw_text.setdefault(turn, row.text)
    return index


def _score(run: AuditRun, lineage: CodedLineage, gold: CodedGold, k: int | None,
           variant: str, tee: TrecTee | None = None) -> TraceScores:
    if isinstance(run, TraceFile):
        rs = score_files(run.path, lineage, gold, k, variant, fmt=run.fmt, name=run.name,
                         on_chunk=tee)
        if arrow_available():
            release_arrow_memory()  # the file's batches are gone
        return rs
    return rescore(run, lineage, gold, k, variant)


def _file_traces(run: TraceFile, columnar: bool = True,
                 wanted: set[str] | None = None) -> Iterator[Trace]:
    """The traces of a file in file order, as read_traces reads them (repeats dropped); with
    `wanted`, at least those (with pyarrow, only those). With `columnar` (and pyarrow), read
    by pyarrow's columns; Unusual, possibly after some traces, when the careful reading must
    read the file (the caller starts again with columnar=False)."""
    if columnar and trace_format(Path(run.path), run.fmt) != "trec" and arrow_available():
        for enc in iter_encoded_chunks(run.path, run.fmt):
            yield from encoded_traces(enc, wanted)
        release_arrow_memory()  # the batches are gone: their buffers must not stay in the peak
        return
    for ch in iter_trace_chunks(run.path, run.fmt):
        yield from map(Trace, ch.qids, ch.ids, ch.scores, ch.ks)


def _traces_in_order(run: AuditRun, qids: Sequence[str],
                     columnar: bool = True) -> Iterator[Trace]:
    """The traces of `qids` (each has a trace in the run), in that order. A file streams;
    only the traces read ahead of their turn are held (none when the file is in that order)."""
    if isinstance(run, TraceRun):
        yield from map(run.traces.__getitem__, qids)
        return
    wanted = set(qids)
    ahead: dict[str, Trace] = {}
    pos = 0
    for t in _file_traces(run, columnar, wanted):
        if t.query_id not in wanted:
            continue
        ahead[t.query_id] = t
        while pos < len(qids) and qids[pos] in ahead:
            yield ahead.pop(qids[pos])
            pos += 1
    if pos < len(qids):  # the file changed since it was scored
        raise InputError(run.path, f"no trace for query {qids[pos]!r} on a second reading",
                         expected="a trace file that does not change during the audit")


def _iv(iv: Interval) -> dict[str, Any]:
    return iv.as_dict()


def _nanmean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else math.nan


# ---------------------------------------------------------------------------------------------
# Sections


def _run_summary(rs: TraceScores, run: AuditRun, lineage: AuditLineage) -> dict[str, Any]:
    shared = rs.covered(TARGETS)
    out: dict[str, Any] = {
        "name": rs.name, "traces": run.path, "lineage": lineage.path,
        "k": rs.k, "scored": len(rs.qids), "errors": len(rs.errors),
        "missing": len(rs.missing), "extra_traces": rs.extra_traces,
        "duplicates_dropped": rs.duplicates_dropped, "unknown_ids": rs.unknown_ids,
        "stored_memories": _stored_memories(lineage),
        "shared_n": int(shared.sum()),
        "coverage": {}, "full": {}, "shared": {},
    }
    for t in TARGETS:
        el = rs.eligible(t)
        out["coverage"][t] = {"eligible": int(el.sum()), "targetless": int((~el).sum()),
                              "mean_eligible_ids": _nanmean(rs.n_rel[t][el].astype(float))}
        out["full"][t] = {m: _nanmean(rs.scores[t][m][el]) for m in METRICS}
        out["full"][t]["n"] = int(el.sum())
        out["shared"][t] = {m: _nanmean(rs.scores[t][m][shared]) for m in METRICS}
        out["shared"][t]["n"] = int(shared.sum())
    return out


def _shifts(rs: TraceScores, boot: BootstrapBatch, seed: int,
            conf: float) -> Callable[[], list[dict[str, Any]]]:
    """Registers the score shifts' bootstraps; the returned function builds the section."""
    pending = []
    for a, b in TARGET_PAIRS:
        mask = rs.covered((a, b))
        diffs = np.column_stack([rs.scores[a][m][mask] - rs.scores[b][m][mask] for m in METRICS])
        pending.append((a, b, int(mask.sum()), boot.paired(diffs, seed, conf)))

    def finish() -> list[dict[str, Any]]:
        return [{"run": rs.name, "a": a, "b": b, "n": n,
                 "delta": {m: _iv(iv) for m, iv in zip(METRICS, get())}}
                for a, b, n, get in pending]
    return finish


def _instability(rs: TraceScores, min_change: float) -> list[dict[str, Any]]:
    out = []
    names = sorted(set(rs.categories), key=_cat_key)  # category codes follow this order
    code = {c: i for i, c in enumerate(names)}
    codes = np.fromiter((code[c] for c in rs.categories), dtype=np.int32,
                        count=len(rs.categories))
    for a, b in TARGET_PAIRS:
        mask = rs.covered((a, b))
        entry: dict[str, Any] = {"run": rs.name, "a": a, "b": b, "n": int(mask.sum()),
                                 "overall": {}, "by_category": {}}
        diffs = {m: np.abs(rs.scores[a][m][mask] - rs.scores[b][m][mask]) for m in METRICS}
        for m in METRICS:
            entry["overall"][m] = _change_shares(diffs[m], min_change)
        in_mask = codes[mask]
        for c in np.unique(in_mask).tolist():
            sel = in_mask == c
            entry["by_category"][names[c]] = {m: _change_shares(diffs[m][sel], min_change)
                                              for m in METRICS}
        out.append(entry)
    return out


def _cat_key(c: str) -> tuple[int, Any]:
    return (0, int(c)) if str(c).isdigit() else (1, str(c))


def _change_shares(d: np.ndarray, min_change: float) -> dict[str, Any]:
    n = int(d.size)
    if n == 0:
        return {"n": 0, "changed": math.nan, "changed_ge": math.nan}
    return {"n": n, "changed": float((d > _EPS).mean()),
            "changed_ge": float((d >= min_change - _EPS).mean())}


def _coverage_gap(scores: Sequence[TraceScores], boot: BootstrapBatch, seed: int,
                  conf: float) -> Callable[[], dict[str, Any]]:
    per_run = []
    groups: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {m: [] for m in METRICS}
    for rs in scores:
        raw_ok = rs.eligible("raw")
        cov = raw_ok & rs.eligible("can")
        unc = raw_ok & ~rs.eligible("can")
        gaps = {}
        for m in METRICS:
            x, y = rs.scores["raw"][m][cov], rs.scores["raw"][m][unc]
            gaps[m] = boot.two_group(x, y, seed, conf)
            groups[m].append((x, y))
        per_run.append((rs.name, int(cov.sum()), int(unc.sum()), gaps))
    mean = {m: boot.mean_gap(groups[m], seed, conf) for m in METRICS}

    def finish() -> dict[str, Any]:
        return {"target": "raw", "split_by": "can",
                "per_run": [{"run": name, "covered": c, "uncovered": u,
                             "gap": {m: _iv(get()) for m, get in gaps.items()}}
                            for name, c, u, gaps in per_run],
                "mean_run_gap": {m: _iv(get()) for m, get in mean.items()}}
    return finish


def _sign(x: float) -> int:
    if math.isnan(x) or abs(x) <= _EPS:
        return 0
    return 1 if x > 0 else -1


def _common_rows(members: Sequence[TraceScores], targets: Sequence[str]) -> list[np.ndarray]:
    """Per member, the row indices of the queries eligible under every one of `targets` in
    every member (gold order of the first member)."""
    if not members:
        return []
    first = members[0].qids
    if all(rs.qids is first or rs.qids == first for rs in members[1:]):
        # the usual case (one gold, every query traced): rows line up, a mask joins them
        ok = np.ones(len(first), dtype=bool)
        for rs in members:
            ok &= rs.covered(targets)
        rows = np.flatnonzero(ok).astype(np.int64)
        return [rows for _ in members]
    sets = [{q for q, c in zip(rs.qids, rs.covered(targets).tolist()) if c} for rs in members]
    common = set.intersection(*sets)
    qset = [q for q in first if q in common]
    out = []
    for rs in members:
        idx = {q: i for i, q in enumerate(rs.qids)}
        out.append(np.asarray([idx[q] for q in qset], dtype=np.int64))
    return out


def why_empty(members: Sequence[TraceScores], targets: Sequence[str]) -> str:
    """Why no query is eligible under `targets` in every one of `members`: the runs that lack
    a target altogether, or else that their eligible queries do not overlap."""
    lacking = [f"{rs.name} has no {TARGET_LABELS[t]} target" for rs in members for t in targets
               if not rs.eligible(t).any()]
    if lacking:
        return "; ".join(lacking)
    names = " and ".join(TARGET_LABELS[t] for t in targets)
    return f"no query is eligible under {names} in every run"


def _winner(a: str, b: str, iv: dict[str, Any]) -> str | None:
    """The better run by the point estimate; None when nothing was compared (n = 0)."""
    if iv["n"] == 0:
        return None
    s = _sign(iv["estimate"])
    return a if s > 0 else b if s < 0 else "tie"


def _compare(ra: TraceScores, rb: TraceScores, boot: BootstrapBatch, seed: int,
             conf: float) -> Callable[[], dict[str, Any]]:
    """Δ_t(A, B) per target on the queries eligible under t in both runs (n per target), and
    on the shared subset (eligible under all three targets in both runs) with winner flips.
    An empty subset is n = 0 with the reason, never a tie. Registers the bootstraps; the
    returned function builds the comparison."""
    pending: dict[str, tuple[int, Callable[[], list[Interval]]]] = {}
    for t in TARGETS:
        ia, jb = _common_rows((ra, rb), (t,))
        diffs = np.column_stack([ra.scores[t][m][ia] - rb.scores[t][m][jb] for m in METRICS])
        pending[t] = (int(ia.size), boot.paired(diffs, seed, conf))
    ia, jb = _common_rows((ra, rb), TARGETS)
    n_shared = int(ia.size)
    cols = [ra.scores[t][m][ia] - rb.scores[t][m][jb] for t in TARGETS for m in METRICS]
    shared_get = boot.paired(np.column_stack(cols), seed, conf)

    def finish() -> dict[str, Any]:
        per_target: dict[str, Any] = {}
        for t, (n, get) in pending.items():
            delta = {m: _iv(iv) for m, iv in zip(METRICS, get())}
            per_target[t] = {"n": n, "delta": delta,
                             "winner": {m: _winner(ra.name, rb.name, delta[m]) for m in METRICS},
                             "why_empty": None if n else why_empty((ra, rb), (t,))}
        shared_delta: dict[str, dict[str, Any]] = {t: {} for t in TARGETS}
        for (t, m), iv in zip([(t, m) for t in TARGETS for m in METRICS], shared_get()):
            shared_delta[t][m] = _iv(iv)
        flips: dict[str, Any] = {}
        for m in METRICS:
            if n_shared == 0:  # nothing to flip: no query is scored under all three targets
                flips[m] = {"winner": {t: None for t in TARGETS}, "flip": None, "flip_ci": None}
                continue
            signs = {t: _sign(shared_delta[t][m]["estimate"]) for t in TARGETS}
            robust = {t: (1 if shared_delta[t][m]["low"] > 0 else
                          -1 if shared_delta[t][m]["high"] < 0 else 0)
                      for t in TARGETS if not math.isnan(shared_delta[t][m]["low"])}
            flips[m] = {"winner": {t: _winner(ra.name, rb.name, shared_delta[t][m])
                                   for t in TARGETS},
                        "flip": 1 in signs.values() and -1 in signs.values(),
                        "flip_ci": 1 in robust.values() and -1 in robust.values()}
        return {"a": ra.name, "b": rb.name, "per_target": per_target,
                "shared": {"n": n_shared, "delta": shared_delta,
                           "why_empty": None if n_shared else why_empty((ra, rb), TARGETS)},
                "flips": flips}
    return finish


def _recommend(group: str, members: Sequence[TraceScores]) -> dict[str, Any]:
    """The best configuration per metric and target, each target on the queries eligible under
    it in every member (n per target); a target no query is eligible under has no best, and
    the reason is given."""
    means: dict[str, dict[str, dict[str, float]]] = {m: {} for m in METRICS}
    best: dict[str, dict[str, str | None]] = {m: {} for m in METRICS}
    n: dict[str, int] = {}
    why: dict[str, str | None] = {}
    for t in TARGETS:
        rows = _common_rows(members, (t,))
        n[t] = int(rows[0].size) if rows else 0
        why[t] = None if n[t] else why_empty(members, (t,))
        for m in METRICS:
            vals = {rs.name: _nanmean(rs.scores[t][m][r]) for rs, r in zip(members, rows)}
            means[m][t] = vals
            finite = {k: v for k, v in vals.items() if not math.isnan(v)}
            if finite:
                top = max(finite.values())
                winners = sorted(k for k, v in finite.items() if v >= top - _EPS)
                best[m][t] = winners[0] if len(winners) == 1 else "tie: " + ", ".join(winners)
            else:
                best[m][t] = None
    changes = {m: len({b for b in best[m].values() if b is not None}) > 1 for m in METRICS}
    shared = _common_rows(members, TARGETS)
    return {"group": group, "configurations": [rs.name for rs in members], "n": n,
            "shared_n": int(shared[0].size) if shared else 0, "why_empty": why,
            "means": means, "best": best, "changes": changes}


# ---------------------------------------------------------------------------------------------
# Entry points


def audit(traces: Sequence[str | Path], lineage: str | Path | Sequence[str | Path] | None = None,
          gold: str | Path | None = None, out_dir: str | Path | None = None, *,
          metric_variant: str = "standard", n_resamples: int = TIAP_RESAMPLES,
          seed: int = TIAP_BOOTSTRAP_SEED,
          k: int | None = None, confidence: float = CONFIDENCE, min_change: float = MIN_CHANGE,
          names: Sequence[str] | None = None,
          pairs: Sequence[tuple[str, str]] | None = None,
          groups: Mapping[str, Sequence[str]] | None = None,
          labels: Sequence[str | Path] = (), export_trec: bool = True,
          on_stage: OnStage | None = None,
          on_note: Callable[[str], None] | None = None) -> AuditResult:
    """Audit saved traces from files (the function behind `twist audit`).

    traces: one entry per run: a trace file (JSONL or TREC run format) or a folder written by
        `twist trace` (traces.jsonl, lineage.jsonl, gold.jsonl). Run names default to the file
        stem (the folder name for traces.jsonl), or `names`.
    lineage: one lineage JSONL shared by every run, or one per run (same order); None = each
        run folder's lineage.jsonl.
    gold: gold JSONL (query id -> anchors, category, question, answer); None = the first run
        folder's gold.jsonl (every run folder's gold must then name the same queries/anchors).
    out_dir: where audit.json, audit.md, per_query.jsonl, the contested-credit files and the
        TREC exports go (None: compute only).
    metric_variant: "standard" or "longmemeval" (the nDCG discount; written into the output).
    n_resamples, seed, confidence: the bootstrap (defaults 3,000, 1337, 0.95).
    k: cutoff (default: the largest k the traces declare).
    pairs: run pairs to compare (default: every pair within each group, or every pair).
    groups: name -> run names, the configuration sets for design recommendations
        (default: one group "all" of every run).
    labels: CSV files of contested-credit labels (case_id, rater, label) to summarise.
    on_stage: called with (stage name, wall seconds) as each stage ends (`--profile`).
    on_note: called with a line for each temporary folder of an earlier, killed audit removed
        beside `out_dir` (audit/scratch.py).
    Raises InputError on any malformed or inconsistent input.
    """
    if not traces:
        raise InputError("<traces>", "no trace files given", expected="at least one trace file")
    trace_files: list[Path] = []
    folder_lineages: list[Path] = []
    folder_golds: list[Path] = []
    for t in traces:
        p = Path(t)
        if p.is_dir():
            for fname in ("traces.jsonl", "lineage.jsonl", "gold.jsonl"):
                if not (p / fname).is_file():
                    raise InputError(str(p), f"no {fname} in this folder",
                                     expected="a folder written by `twist trace`")
            trace_files.append(p / "traces.jsonl")
            folder_lineages.append(p / "lineage.jsonl")
            folder_golds.append(p / "gold.jsonl")
        elif p.is_file():
            trace_files.append(p)
        else:
            raise InputError(str(p), "no such trace file or folder",
                             expected="a trace file (JSONL or TREC run) or a `twist trace` folder")
    if lineage is None:
        if len(folder_lineages) != len(trace_files):
            raise InputError(str(trace_files[0]), "no lineage given for a trace file",
                             field="lineage", expected="--lineage, or run folders")
        lin_paths: list[str | Path] = list(folder_lineages)
    else:
        lin_paths = [lineage] if isinstance(lineage, (str, Path)) else list(lineage)
    if len(lin_paths) not in (1, len(trace_files)):
        raise InputError(str(lin_paths[0]), f"{len(lin_paths)} lineage files for "
                         f"{len(trace_files)} trace files", field="lineage",
                         expected="one lineage file, or one per trace file")
    if names is not None and len(names) != len(trace_files):
        raise InputError("<names>", f"{len(names)} names for {len(trace_files)} trace files",
                         expected="one name per trace file")
    if gold is None:
        if not folder_golds:
            raise InputError(str(trace_files[0]), "no gold file given", field="gold",
                             expected="--gold, or run folders")
        gold = folder_golds[0]
        with _stage(on_stage, "read gold"), bulk_build():  # acyclic records
            g = read_gold(gold)
            for other in folder_golds[1:]:
                og = read_gold(other)
                if {q: v.anchors for q, v in og.queries.items()} != \
                        {q: v.anchors for q, v in g.queries.items()}:
                    raise InputError(str(other), f"gold differs from {gold}", field="gold",
                                     expected="run folders traced on the same queries")
    else:
        with _stage(on_stage, "read gold"), bulk_build():  # acyclic records
            g = read_gold(gold)
    # as integer codes, no row objects (and no cycles: the collector paused)
    with _stage(on_stage, "read and code lineage"), bulk_build():
        lineages = [LineageFile(str(p), read_coded_lineage(p)) for p in lin_paths]
    # the traces are not read here: each run is scored as its file streams (audit_runs)
    runs = [(TraceFile(names[i] if names else run_name(p), str(p)),
             lineages[0] if len(lineages) == 1 else lineages[i])
            for i, p in enumerate(trace_files)]
    return audit_runs(runs, g, out_dir, metric_variant=metric_variant, n_resamples=n_resamples,
                      seed=seed, k=k, confidence=confidence, min_change=min_change,
                      pairs=pairs, groups=groups, labels=labels, export_trec=export_trec,
                      on_stage=on_stage, on_note=on_note)


def audit_runs(runs: Sequence[tuple[AuditRun, AuditLineage]], gold: Gold,
               out_dir: str | Path | None = None, *, metric_variant: str = "standard",
               n_resamples: int = TIAP_RESAMPLES, seed: int = TIAP_BOOTSTRAP_SEED,
               k: int | None = None,
               confidence: float = CONFIDENCE, min_change: float = MIN_CHANGE,
               pairs: Sequence[tuple[str, str]] | None = None,
               groups: Mapping[str, Sequence[str]] | None = None,
               labels: Sequence[str | Path] = (), export_trec: bool = True,
               on_stage: OnStage | None = None,
               on_note: Callable[[str], None] | None = None) -> AuditResult:
    """`audit` on runs in memory (the native matrix) or trace files (TraceFile, `audit`):
    a file is scored as it streams and never held."""
    if metric_variant not in VARIANTS:
        raise InputError("<metric_variant>", f"unknown metric variant {metric_variant!r}",
                         expected=" | ".join(VARIANTS))
    names = [r.name for r, _ in runs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InputError(runs[0][0].path, f"run name(s) {sorted(dup)} used twice",
                         expected="distinct run names (pass names=...)")
    # the TREC run of a trace file is written while its scoring reads it (TrecTee), into a
    # folder of our own until the outputs are written (nothing half-written on an error); the
    # folders of killed audits beside it are removed first (scratch.py says which are dead)
    scratch = scratch_folder(out_dir, on_note) \
        if out_dir is not None and export_trec and any(map(_teeable, (r for r, _ in runs))) \
        else nullcontext(None)
    with scratch as tee_dir:
        return _audit_runs(runs, gold, out_dir, tee_dir, metric_variant=metric_variant,
                           n_resamples=n_resamples, seed=seed, k=k, confidence=confidence,
                           min_change=min_change, pairs=pairs, groups=groups, labels=labels,
                           export_trec=export_trec, on_stage=on_stage)


def _teeable(run: AuditRun) -> bool:
    """A trace file: its TREC run is written as its scoring reads it (TrecTee)."""
    return isinstance(run, TraceFile)


def _audit_runs(runs: Sequence[tuple[AuditRun, AuditLineage]], gold: Gold,
                out_dir: str | Path | None, tee_dir: Path | None, *, metric_variant: str,
                n_resamples: int, seed: int, k: int | None, confidence: float,
                min_change: float, pairs: Sequence[tuple[str, str]] | None,
                groups: Mapping[str, Sequence[str]] | None, labels: Sequence[str | Path],
                export_trec: bool, on_stage: OnStage | None) -> AuditResult:
    names = [r.name for r, _ in runs]
    scores: dict[str, TraceScores] = {}
    coded: dict[int, CodedLineage] = {}
    coded_gold: dict[int, CodedGold] = {}
    tees: dict[str, TrecTee] = {}
    with _stage(on_stage, "code lineage + read and rescore traces (3 targets x 3 metrics)"):
        for i, (run, lin) in enumerate(runs):
            key = id(lin)
            if key not in coded:
                coded[key] = _coded_lineage(lin)
                with bulk_build():
                    coded_gold[key] = code_gold(gold, coded[key])
            if tee_dir is not None and _teeable(run):
                # cut at k when given; else the export's k is the largest any run declares,
                # which cuts no trace below its own k
                tees[run.name] = TrecTee(tee_dir / f"{i}.txt", coded_gold[key].index,
                                         k or None, trec_id(run.name))
            scores[run.name] = _score(run, coded[key], coded_gold[key], k, metric_variant,
                                      tees.get(run.name))
        # default k: the largest any run declares; a run scored at another k is scored again
        kk = int(k or max((rs.trace_k for rs in scores.values()), default=0) or 60)
        for run, lin in runs:
            if scores[run.name].k != kk:
                scores[run.name] = _score(run, coded[id(lin)], coded_gold[id(lin)], kk,
                                          metric_variant)
        prewritten = {n: tee.path for n, tee in tees.items() if tee.finish(scores[n].qids)}
    cfg = AuditConfig(kk, metric_variant, VARIANTS[metric_variant], n_resamples, seed,
                      confidence, min_change)
    by_name = {r.name: (r, lin) for r, lin in runs}
    ordered = [scores[n] for n in names]

    grp = {str(k2): list(v) for k2, v in (groups or {"all": names}).items()}
    for gname, members in grp.items():
        unknown = [m for m in members if m not in scores]
        if unknown:
            raise InputError("<groups>", f"group {gname!r} names unknown run(s) {unknown}",
                             expected=f"run names among {names}")
    if pairs is None:
        seen: set[tuple[str, str]] = set()
        plist: list[tuple[str, str]] = []
        for members in grp.values():
            for a, b in combinations(members, 2):
                if (a, b) not in seen:
                    seen.add((a, b))
                    plist.append((a, b))
    else:
        plist = [(a, b) for a, b in pairs]
        for a, b in plist:
            if a not in scores or b not in scores:
                raise InputError("<pairs>", f"unknown run in pair ({a}, {b})",
                                 expected=f"run names among {names}")

    with _stage(on_stage, "register the bootstraps (shared subsets, paired differences)"):
        boot = BootstrapBatch(n_resamples)
        shifts = [_shifts(scores[n], boot, seed, confidence) for n in names]
        gap = _coverage_gap(ordered, boot, seed, confidence)
        comparisons = [_compare(scores[a], scores[b], boot, seed, confidence) for a, b in plist]
    with _stage(on_stage, f"bootstrap: {n_resamples:,} resamples, {boot.draws} draw(s) of "
                          f"indices shared by {boot.columns} distinct column(s)"):
        boot.run()
    with _stage(on_stage, "sections: summaries, shifts, gap, instability, comparisons, flips, "
                          "recommendations"):
        result = AuditResult(
            config=cfg,
            runs=[_run_summary(scores[n], *by_name[n]) for n in names],
            shifts=[s for finish in shifts for s in finish()],
            coverage_gap=gap(),
            instability=[e for rs in ordered for e in _instability(rs, min_change)],
            comparisons=[finish() for finish in comparisons],
            recommendations=[_recommend(gname, [scores[m] for m in members])
                             for gname, members in grp.items() if len(members) >= 2],
            contested={},
            scores=scores,
        )
    # the cases are acyclic records: the collector, paused (bulk_build), no longer walks
    # everything alive two or three times over while they are built (0.9 s at 100,000 x 60)
    with _stage(on_stage, "contested credits"), bulk_build():
        cases: list[ct.ContestedCase] = []
        per_run_cases: dict[str, int] = {}
        # the credited memory of a case is known from the scoring (TraceScores.credited): no
        # ranking is read again. What the cases quote from each store: the credited memories
        # and the raw texts of the anchor turns.
        memory_ids = {key: cl.memory_ids() for key, cl in coded.items()}
        quoted: dict[int, tuple[set[tuple[str, str]], set[tuple[str, str]]]] = {}
        for n in names:
            key = id(by_name[n][1])
            memories, turns = quoted.setdefault(key, (set(), set()))
            rs = scores[n]
            for i in ct.contested_rows(rs).tolist():
                g = gold.queries[rs.qids[i]]
                memories.add((g.conversation, memory_ids[key][int(rs.credited[i])]))
                turns.update((g.conversation, a) for a in g.anchors)
        lineage_index: dict[int, ct.LineageIndex] = {}
        for n in names:
            lin = by_name[n][1]
            if id(lin) not in lineage_index:
                lineage_index[id(lin)] = contested_index(lin, *quoted[id(lin)]) \
                    if isinstance(lin, LineageFile) else ct.LineageIndex(lin)
            cs = ct.extract_cases(scores[n], None, lin, gold, lineage_index[id(lin)],
                                  memory_ids[id(lin)])
            per_run_cases[n] = len(cs)
            cases.extend(cs)
        del lineage_index, memory_ids  # the quoted rows: not held through the exports
        buckets: dict[str, int] = {}
        for c in cases:
            buckets[c.rank_bucket] = buckets.get(c.rank_bucket, 0) + 1
        result.contested = {"total": len(cases), "per_run": per_run_cases,
                            "by_rank_bucket": buckets,
                            "definition": "raw_miss / source_hit / canonical_hit on the run's "
                                          "shared subset; credited memory = best-ranked "
                                          "Canonical hit"}
        if labels:
            known = {c.case_id for c in cases}
            labs = [lab for p in labels for lab in ct.read_labels(p, known)]
            sem = ct.semantic_audit(cases, labs)
            result.semantic = {k2: v for k2, v in sem.as_dict().items()
                               if k2 != "majority_per_case"}

    if out_dir is not None:
        _write_outputs(Path(out_dir), result, runs, gold, cases, export_trec, on_stage, coded,
                       coded_gold, prewritten)
    return result


def _write_outputs(out: Path, result: AuditResult,
                   runs: Sequence[tuple[AuditRun, AuditLineage]],
                   gold: Gold, cases: list[ct.ContestedCase], export_trec: bool,
                   on_stage: OnStage | None = None,
                   coded: Mapping[int, CodedLineage] | None = None,
                   coded_gold: Mapping[int, CodedGold] | None = None,
                   prewritten: Mapping[str, Path] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    files = {"json": "audit.json", "markdown": "audit.md", "per_query": "per_query.jsonl",
             "contested_cases": "contested_cases.jsonl",
             "labels_template": "contested_labels_template.csv"}
    with _stage(on_stage, "write per_query.jsonl"), \
            open(out / files["per_query"], "w", encoding="utf-8") as fh:
        for rs in result.scores.values():
            fh.writelines(_per_query_lines(rs))
    with _stage(on_stage, "write contested cases + labels template"):
        ct.write_cases(out / files["contested_cases"], cases)
        ct.write_template(out / files["labels_template"], cases)
        cases.clear()  # written: the cases are not held through the TREC export
    if export_trec:
        files["trec"] = "trec/"
        with _stage(on_stage, "write TREC run + qrels files"):
            export_trec_files(out / "trec", runs, gold, result.config.k, coded=coded,
                              coded_gold=coded_gold, scored=result.scores,
                              prewritten=prewritten)
    result.files = files
    with _stage(on_stage, "write audit.json + audit.md"):
        (out / files["json"]).write_text(json.dumps(result.as_dict(), indent=1, sort_keys=True)
                                         + "\n", encoding="utf-8")
        (out / files["markdown"]).write_text(render_audit_markdown(result), encoding="utf-8")


_ROW_JSON = json.JSONEncoder(sort_keys=True).encode  # json.dumps(row, sort_keys=True), reused
_SLOT = re.compile(r'"@(\d+)@"')


def _json_float(v: float) -> str:
    """A float as json.dumps writes it (NaN = targetless: null)."""
    if v != v:
        return "null"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return float.__repr__(v)


def _per_query_lines(rs: TraceScores) -> Iterator[str]:
    """per_query.jsonl lines of one run: scored queries (gold order), then errors, then missing.

    Each line is json.dumps(row, sort_keys=True); the scored queries' lines are one template
    (json.dumps of a row whose values are slots, so keys, order and separators are its own)
    filled per query with the JSON text of each field, computed a column at a time."""
    fields: list[list[str]] = []

    def slot(texts: list[str]) -> str:
        fields.append(texts)
        return f"@{len(fields) - 1}@"

    # every value is a slot (the run name too: no name can pass for a slot)
    row: dict[str, Any] = {"run": slot([_ROW_JSON(rs.name)] * len(rs.qids)),
                           "query_id": slot(list(map(_ROW_JSON, rs.qids))),
                           "category": slot(list(map(_ROW_JSON, rs.categories)))}
    for t in TARGETS:
        row[t] = {"eligible": slot(list(map(int.__repr__, rs.n_rel[t].tolist()))),
                  "first_hit": slot(list(map(int.__repr__, rs.first_hit[t].tolist()))),
                  **{m: slot(list(map(_json_float, rs.scores[t][m].tolist())))
                     for m in METRICS}}
    template = _ROW_JSON(row).replace("%", "%%")
    order = [int(i) for i in _SLOT.findall(template)]
    template = _SLOT.sub("%s", template) + "\n"
    yield from map(template.__mod__, zip(*(fields[i] for i in order)))
    for q, err in rs.errors.items():
        yield json.dumps({"run": rs.name, "query_id": q, "error": err}) + "\n"
    for q in rs.missing:
        yield json.dumps({"run": rs.name, "query_id": q,
                          "error": "no trace line for this query"}) + "\n"


def export_trec_files(out: str | Path, runs: Sequence[tuple[AuditRun, AuditLineage]],
                      gold: Gold,
                      k: int, score_mode: str = "rank",
                      coded: Mapping[int, CodedLineage] | None = None,
                      coded_gold: Mapping[int, CodedGold] | None = None,
                      scored: Mapping[str, TraceScores] | None = None,
                      prewritten: Mapping[str, Path] | None = None,
                      ) -> dict[str, dict[str, str]]:
    """Per run: trec/<run>/run.txt and qrels.<raw|src|can>.txt (binary, eligible ids only).

    ranx or pytrec_eval re-check our numbers from these (with score_mode "rank" the written
    scores are strictly decreasing, so their tie handling cannot reorder the list). Queries
    without any eligible id under a target have no qrels line there (and are not scored).
    coded / coded_gold: id(lineage) -> its CodedLineage / CodedGold, where the caller has them;
    scored: run name -> its TraceScores (their scored queries are the ones exported). A trace
    file streams into run.txt (it is not held). prewritten: run name -> its run.txt written
    already (a TrecTee's, at `k` in rank mode), moved into place.
    """
    out = Path(out)
    written: dict[str, dict[str, str]] = {}
    coded = dict(coded or {})
    coded_gold = dict(coded_gold or {})
    # the eligible ids depend on the store and the scored queries only (gold anchors joined to
    # the lineage), not on the rankings: runs of one store on the same queries share them, so
    # the first one's qrels files are copied (the ids are not held from run to run)
    qrels_of: dict[tuple[int, tuple[str, ...]], Path] = {}
    for run, lin in runs:
        d = out / _safe_dir(run.name)
        with bulk_build():
            if id(lin) not in coded:
                coded[id(lin)] = _coded_lineage(lin)
            cl = coded[id(lin)]
            if id(lin) not in coded_gold:
                coded_gold[id(lin)] = code_gold(gold, cl)
            cg = coded_gold[id(lin)]
            rs = scored.get(run.name) if scored is not None else None
            if rs is None and not isinstance(run, TraceRun):
                rs = _score(run, cl, cg, k, "standard")
            qids = rs.qids if rs is not None else select_queries(run, gold)[0]
            key = (id(lin), tuple(qids))
            if key not in qrels_of:
                # the gold anchors of the queries, no ranking: empty id lists
                gidx = np.fromiter(map(cg.index.__getitem__, qids), dtype=np.int64,
                                   count=len(qids))
                cq = code_rows(qids, [()] * len(qids), gidx, cg, cl, k)
                ts = build_targets(cq, cl)
                docs = (cl.ids.data, cl.ids.start, cl.ids.length)
                for t in TARGETS:
                    write_trec_qrels_coded(d / f"qrels.{t}.txt", cq.qids,
                                           *eligible_pairs(ts, cl, t), docs)
                qrels_of[key] = d
                del cq, ts
            else:
                d.mkdir(parents=True, exist_ok=True)
                for t in TARGETS:
                    shutil.copyfile(qrels_of[key] / f"qrels.{t}.txt", d / f"qrels.{t}.txt")
        files = {"run": str(d / "run.txt")}
        if prewritten and run.name in prewritten and score_mode == "rank":
            d.mkdir(parents=True, exist_ok=True)
            shutil.move(prewritten[run.name], d / "run.txt")
            columnar: bool | None = True
        else:
            columnar = _write_run_columnar(d / "run.txt", run, qids, k, score_mode, rs)
        if not columnar:
            try:  # None: pyarrow may still read the traces (when installed)
                write_trec_traces(d / "run.txt", map(_cut, _traces_in_order(
                    run, qids, columnar is None), repeat(k)), trec_id(run.name),
                    score_mode=score_mode)
            except Unusual:  # pyarrow left the file to the careful reading: written again
                write_trec_traces(d / "run.txt", map(_cut, _traces_in_order(run, qids, False),
                                                     repeat(k)), trec_id(run.name),
                                  score_mode=score_mode)
        for t in TARGETS:
            files[t] = str(d / f"qrels.{t}.txt")
        written[run.name] = files
    return written


def _write_run_columnar(path: Path, run: AuditRun, qids: Sequence[str], k: int,
                        score_mode: str, rs: TraceScores | None) -> bool | None:
    """run.txt of a JSONL or Parquet trace file built from pyarrow's columns (no Python object
    per line; the same bytes as write_trec_traces): True when written; None where this does
    not apply (no pyarrow, a TREC file, a run in memory, scores as the system gave them:
    written per trace); False when pyarrow left the file to the careful reading (nothing in
    `path` to rely on)."""
    if not (isinstance(run, TraceFile) and score_mode == "rank" and arrow_available()
            and trace_format(Path(run.path), run.fmt) != "trec"):
        return None
    try:
        write_trec_encoded(path, iter_encoded_chunks(run.path, run.fmt), qids, k,
                           trec_id(run.name), run.path,
                           dedupe=rs is None or rs.duplicates_dropped > 0)
    except Unusual:
        return False
    finally:
        release_arrow_memory()  # the batches are gone
    return True


def _cut(t: Trace, k: int) -> Trace:
    return Trace(t.query_id, t.ids[:k], t.scores[:k], k)


def _safe_dir(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.=" else "_" for c in name) or "run"
