"""Scoring targets Raw, Source and Canonical (TIAP §3.1), built and matched with numpy.

For a query q with source evidence s(q) (the gold anchors) and a store S described by its
lineage contract (memory id -> source anchors, raw flag, canonical flag):

    T_src(q, S) = { m in I(S) : sources(m) ∩ s(q) ≠ ∅ }
    T_raw(q, S) = { m in T_src(q, S) : raw(m) }
    T_can(q, S) = { m in T_src(q, S) : canonical(m) }

The paper writes ℓ(m) = s(q) for a single anchor. LoCoMo queries cite several evidence turns and
a memory may derive from several turns, so we use intersection: a memory is eligible when any of
its sources is any of the query's anchors. With one anchor and one source per memory this is the
paper's equality. Anchors and memory ids are scoped by conversation (one store per conversation).

Everything is integer-coded so that 100,000 queries × 60 ids × 3 targets is a few array passes.
Memory codes are contiguous per conversation. T_src is one sorted array of keys
`query_index * M + memory_code` with the raw / canonical flags of its memories. Hits of all three
targets come from one lookup per trace position: a per-conversation dense table of bit flags
(queries × memories of that conversation; 1 = Source, 2 = Raw, 4 = Canonical) when it is small
enough, else a searchsorted of the trace keys in the sorted T_src keys.
"""

from __future__ import annotations

import functools
import gc
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain, groupby, repeat
from typing import ParamSpec, TypeVar

import numpy as np

from twistbench.audit.traces import Gold, Lineage, TraceRun

TARGETS: tuple[str, ...] = ("raw", "src", "can")
TARGET_LABELS = {"raw": "Raw", "src": "Source", "can": "Canonical"}
ANCHOR_POLICY = (
    "a memory is eligible for a query when any of its source anchors is any of the query's gold "
    "anchors (intersection; equal to the paper's l(m) = s(q) for single anchors), within the "
    "query's conversation"
)
P = ParamSpec("P")
R = TypeVar("R")
DENSE_MAX_CELLS = 200_000_000  # the dense hit table is one byte per (query, memory) cell


def _no_gc(fn: Callable[P, R]) -> Callable[P, R]:
    """Pause the cyclic garbage collector while coding: these passes allocate millions of
    small objects and create no cycles, and with a large heap (a 750k-row lineage) every
    generation-2 collection re-scans it, which made coding several times slower."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was:
                gc.enable()

    return wrapper


@dataclass
class CodedLineage:
    """A store's lineage as integer arrays. Memory codes number (conversation, memory id)
    instances, contiguously per conversation; the same id in two conversations is two codes."""

    mem_codes: dict[str, dict[str, int]]  # conversation -> memory id -> code
    anchor_codes: dict[str, dict[str, int]]  # conversation -> anchor -> code
    conv_range: dict[str, tuple[int, int]]  # conversation -> (first code, number of memories)
    mem_raw: np.ndarray  # (M,) raw flag per memory code
    mem_can: np.ndarray  # (M,) canonical flag per memory code
    edge_anchor: np.ndarray  # one edge per (memory, source anchor), sorted by anchor code
    edge_mem: np.ndarray
    conv_of: list[str]  # code -> conversation
    memory_id: list[str]  # code -> memory id

    @property
    def n_mem(self) -> int:
        return max(len(self.memory_id), 1)


@_no_gc
def code_lineage(lineage: Lineage) -> CodedLineage:
    """Integer-code a lineage into arrays (column-wise, C-level dict/zip/map calls).

    Raises ValueError on a memory id repeated within a conversation (read_lineage reports the
    same defect as an InputError with the line number).
    """
    rows = lineage.rows
    n = len(rows)
    convs = [r.conversation for r in rows]
    # Rows of one conversation may be scattered: order them by conversation (stable) so that
    # every conversation's memory codes are one contiguous range.
    runs: dict[str, list[tuple[int, int]]] = {}
    pos = 0
    for conv, grp in groupby(convs):
        size = len(list(grp))
        runs.setdefault(conv, []).append((pos, pos + size))
        pos += size
    if all(len(v) == 1 for v in runs.values()):
        order = None
        rows_o = rows
    else:
        order = [i for spans in runs.values() for lo, hi in spans for i in range(lo, hi)]
        rows_o = [rows[i] for i in order]
    convs_o = [r.conversation for r in rows_o] if order is not None else convs
    mids = [r.memory_id for r in rows_o]
    srcs = [r.sources for r in rows_o]
    raw = np.array([r.raw for r in rows_o], dtype=bool)
    can = np.array([r.canonical for r in rows_o], dtype=bool)
    lens = np.fromiter(map(len, srcs), dtype=np.int64, count=n)
    flat = list(chain.from_iterable(srcs))
    e_off = np.concatenate(([0], np.cumsum(lens)))
    mem_codes: dict[str, dict[str, int]] = {}
    anchor_codes: dict[str, dict[str, int]] = {}
    conv_range: dict[str, tuple[int, int]] = {}
    e_a: list[int] = []
    n_anchor = 0
    lo = 0
    for conv, spans in runs.items():
        hi = lo + sum(b - a for a, b in spans)
        mdict = dict(zip(mids[lo:hi], range(lo, hi)))
        if len(mdict) != hi - lo:
            seen: set[str] = set()
            for m in mids[lo:hi]:
                if m in seen:
                    raise ValueError(f"memory id {m!r} repeated in conversation {conv!r}")
                seen.add(m)
        mem_codes[conv] = mdict
        conv_range[conv] = (lo, hi - lo)
        group = flat[int(e_off[lo]):int(e_off[hi])]
        adict = dict(zip(dict.fromkeys(group), range(n_anchor, n_anchor + len(group))))
        n_anchor += len(adict)
        anchor_codes[conv] = adict
        e_a.extend(map(adict.__getitem__, group))
        lo = hi
    ea = np.asarray(e_a, dtype=np.int64)
    em = np.repeat(np.arange(n, dtype=np.int64), lens)
    if any(len(set(s)) != len(s) for s in srcs if len(s) > 1):
        # a source listed twice for one memory is one edge
        key = np.unique(ea * max(n, 1) + em)
        ea, em = key // max(n, 1), key % max(n, 1)
    order_e = np.argsort(ea, kind="stable")
    return CodedLineage(mem_codes, anchor_codes, conv_range, raw, can, ea[order_e],
                        em[order_e], convs_o, mids)


@dataclass
class CodedQueries:
    """The scored queries of one run: trace matrix and gold anchor edges, integer-coded."""

    qids: list[str]
    conv: list[str]  # (Q,) conversation of each query
    ids: np.ndarray  # (Q, k) memory codes, -1 = padding or an id not stored in q's conversation
    lengths: np.ndarray  # (Q,) number of ranked ids (<= k)
    gold_q: np.ndarray  # gold edges: query index
    gold_anchor: np.ndarray  # gold edges: anchor code (anchors no memory derives from dropped)
    unknown_ids: int  # retrieved ids absent from the query's store


@_no_gc
def code_queries(run: TraceRun, gold: Gold, lineage: CodedLineage, qids: Sequence[str],
                 k: int) -> CodedQueries:
    """Integer-code the traces and gold anchors of `qids` (each must have a trace in `run`)."""
    q = len(qids)
    traces = run.traces
    gq = gold.queries
    id_lists = [traces[x].ids for x in qids]
    if any(len(x) > k for x in id_lists):
        id_lists = [x[:k] for x in id_lists]
    golds = [gq[x] for x in qids]
    convs = [g.conversation for g in golds]
    lengths = np.fromiter(map(len, id_lists), dtype=np.int64, count=q)
    # one C-level map per conversation over all of its queries' ids
    order = sorted(range(q), key=convs.__getitem__)
    flat = array("q")
    g_q: list[int] = []
    g_a: list[int] = []
    empty: dict[str, int] = {}
    for conv, grp in groupby(order, key=convs.__getitem__):
        idx = list(grp)
        mdict = lineage.mem_codes.get(conv, empty)
        ids = chain.from_iterable(map(id_lists.__getitem__, idx))
        flat.extend(map(mdict.get, ids, repeat(-1)))  # straight into a C int64 buffer
        adict = lineage.anchor_codes.get(conv, empty)
        for qi in idx:
            anchors = golds[qi].anchors
            for a in (anchors if len(anchors) < 2 else dict.fromkeys(anchors)):
                code = adict.get(a)
                if code is not None:
                    g_q.append(qi)
                    g_a.append(code)
    codes = np.frombuffer(flat, dtype=np.int64) if len(flat) else np.zeros(0, np.int64)
    order_a = np.asarray(order, dtype=np.int64)
    identity = bool(np.all(order_a == np.arange(q)))
    if q and codes.size == q * k:  # every trace is full: no padding mask needed
        mat_o = codes.reshape(q, k)
    else:
        mat_o = np.full((q, k), -1, dtype=np.int64)
        mat_o[np.arange(k)[None, :] < lengths[order_a][:, None]] = codes
    if identity:
        mat = mat_o
    else:
        mat = np.empty_like(mat_o)
        mat[order_a] = mat_o
    return CodedQueries(list(qids), convs, mat, lengths, np.asarray(g_q, dtype=np.int64),
                        np.asarray(g_a, dtype=np.int64), int((codes < 0).sum()))


@dataclass
class TargetSets:
    """T_src as sorted keys (query_index * M + memory_code) with raw / canonical flags."""

    keys: np.ndarray
    raw: np.ndarray
    can: np.ndarray
    n_rel: dict[str, np.ndarray]  # target -> (Q,) number of eligible stored ids


def build_targets(cq: CodedQueries, lineage: CodedLineage) -> TargetSets:
    """Join gold anchor edges to lineage edges (sort + searchsorted, no Python loop)."""
    q = len(cq.qids)
    n_mem = lineage.n_mem
    lo = np.searchsorted(lineage.edge_anchor, cq.gold_anchor, side="left")
    hi = np.searchsorted(lineage.edge_anchor, cq.gold_anchor, side="right")
    cnt = hi - lo
    total = int(cnt.sum())
    if total == 0:
        empty = np.zeros(0, dtype=np.int64)
        zeros = {t: np.zeros(q, dtype=np.int64) for t in TARGETS}
        return TargetSets(empty, empty.astype(bool), empty.astype(bool), zeros)
    starts = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt)
    pos = np.arange(total, dtype=np.int64) + starts
    qrep = np.repeat(cq.gold_q, cnt)
    # A memory reached through two anchors is one eligible id: deduplicate by key.
    keys = np.sort(qrep * n_mem + lineage.edge_mem[pos])
    ukeys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    mem = ukeys % n_mem
    raw = lineage.mem_raw[mem]
    can = lineage.mem_can[mem]
    uq = ukeys // n_mem
    n_rel = {
        "src": np.bincount(uq, minlength=q),
        "raw": np.bincount(uq[raw], minlength=q),
        "can": np.bincount(uq[can], minlength=q),
    }
    return TargetSets(ukeys, raw, can, n_rel)


def hit_matrices(cq: CodedQueries, ts: TargetSets, lineage: CodedLineage,
                 dense_max_cells: int | None = None) -> dict[str, np.ndarray]:
    """(Q, k) boolean hit matrices of the three targets from one lookup per trace position."""
    shape = cq.ids.shape
    if ts.keys.size == 0 or cq.ids.size == 0:
        z = np.zeros(shape, dtype=bool)
        return {t: z.copy() for t in TARGETS}
    limit = DENSE_MAX_CELLS if dense_max_cells is None else dense_max_cells
    base = _dense_bases(cq, lineage, limit)
    valid = cq.ids >= 0
    if base is not None:
        table_size, offset = base  # cell(q, m) = offset[q] + m
        table = np.zeros(table_size, dtype=np.uint8)
        n_mem = lineage.n_mem
        tq = ts.keys // n_mem
        tm = ts.keys % n_mem
        table[offset[tq] + tm] = 1 | (ts.raw.astype(np.uint8) << 1) | (ts.can.astype(np.uint8) << 2)
        cells = np.where(valid, offset[:, None] + cq.ids, 0)
        flags = np.where(valid, table[cells], 0)
        return {"raw": (flags & 2) > 0, "src": (flags & 1) > 0, "can": (flags & 4) > 0}
    n_mem = lineage.n_mem
    qidx = np.arange(shape[0], dtype=np.int64)[:, None]
    keys = qidx * n_mem + cq.ids
    pos = np.searchsorted(ts.keys, keys)
    np.minimum(pos, ts.keys.size - 1, out=pos)
    src = (ts.keys[pos] == keys) & valid
    return {"raw": src & ts.raw[pos], "src": src, "can": src & ts.can[pos]}


def _dense_bases(cq: CodedQueries, lineage: CodedLineage,
                 limit: int) -> tuple[int, np.ndarray] | None:
    """Per query the offset of its row in a per-conversation dense table, or None if the
    table would exceed `limit` cells."""
    counts: dict[str, int] = {}
    for c in cq.conv:
        counts[c] = counts.get(c, 0) + 1
    total = 0
    conv_base: dict[str, int] = {}
    for c, nq in counts.items():
        size = lineage.conv_range.get(c, (0, 0))[1]
        conv_base[c] = total
        total += nq * size
    if total > limit:
        return None
    local: dict[str, int] = {}
    offset = np.empty(len(cq.conv), dtype=np.int64)
    for i, c in enumerate(cq.conv):
        j = local.get(c, 0)
        local[c] = j + 1
        lo, size = lineage.conv_range.get(c, (0, 0))
        offset[i] = conv_base[c] + j * size - lo
    return max(total, 1), offset


def eligible_ids(cq: CodedQueries, ts: TargetSets, lineage: CodedLineage,
                 target: str) -> dict[str, list[str]]:
    """Query id -> eligible memory ids under `target` (for TREC qrels export)."""
    sel = {"src": np.ones(ts.keys.size, dtype=bool), "raw": ts.raw, "can": ts.can}[target]
    q_idx, m_idx = np.divmod(ts.keys[sel], lineage.n_mem)
    if not q_idx.size:
        return {}
    ids = np.asarray(lineage.memory_id, dtype=object)[m_idx].tolist()
    # keys are sorted, so each query's ids are one slice (query order, then memory code)
    cuts = (np.flatnonzero(q_idx[1:] != q_idx[:-1]) + 1).tolist()
    starts, ends = [0, *cuts], [*cuts, len(ids)]
    return {cq.qids[q]: ids[a:b] for q, a, b in zip(q_idx[starts].tolist(), starts, ends)}
