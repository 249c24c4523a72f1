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

Everything is integer-coded so that 100,000 queries × 60 ids × 3 targets is a few array passes:
T_src is one sorted array of keys `query_index * M + memory_code` (M = number of memory codes)
with a parallel raw flag and canonical flag; one searchsorted of the (Q × k) trace keys against
it gives the hit matrices of all three targets at once (T_raw, T_can ⊆ T_src).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from twistbench.audit.traces import Gold, Lineage, TraceRun

TARGETS: tuple[str, ...] = ("raw", "src", "can")
TARGET_LABELS = {"raw": "Raw", "src": "Source", "can": "Canonical"}
ANCHOR_POLICY = (
    "a memory is eligible for a query when any of its source anchors is any of the query's gold "
    "anchors (intersection; equal to the paper's l(m) = s(q) for single anchors), within the "
    "query's conversation"
)
_SEP = "\x1f"  # joins conversation and id into one dictionary key


@dataclass
class CodedLineage:
    """A store's lineage as integer arrays."""

    mem_codes: dict[str, int]  # memory id -> code (conversation-agnostic)
    conv_codes: dict[str, int]  # conversation -> code
    anchor_codes: dict[str, int]  # conversation + SEP + anchor -> code
    edge_anchor: np.ndarray  # one edge per (memory, source anchor), sorted by anchor code
    edge_mem: np.ndarray
    edge_raw: np.ndarray  # bool flags of the edge's memory
    edge_can: np.ndarray
    store_keys: np.ndarray  # sorted conv_code * M + mem_code of every stored memory
    texts: dict[tuple[str, str], str]

    @property
    def n_mem(self) -> int:
        return max(len(self.mem_codes), 1)


def code_lineage(lineage: Lineage) -> CodedLineage:
    """Integer-code a lineage (memory ids, conversations, anchors) into edge arrays."""
    mem_codes: dict[str, int] = {}
    conv_codes: dict[str, int] = {}
    anchor_codes: dict[str, int] = {}
    e_a: list[int] = []
    e_m: list[int] = []
    e_r: list[bool] = []
    e_c: list[bool] = []
    s_conv: list[int] = []
    s_mem: list[int] = []
    texts: dict[tuple[str, str], str] = {}
    for row in lineage.rows:
        m = mem_codes.setdefault(row.memory_id, len(mem_codes))
        c = conv_codes.setdefault(row.conversation, len(conv_codes))
        s_conv.append(c)
        s_mem.append(m)
        if row.text:
            texts[(row.conversation, row.memory_id)] = row.text
        for src in dict.fromkeys(row.sources):  # a source listed twice is one edge
            a = anchor_codes.setdefault(row.conversation + _SEP + src, len(anchor_codes))
            e_a.append(a)
            e_m.append(m)
            e_r.append(row.raw)
            e_c.append(row.canonical)
    ea = np.asarray(e_a, dtype=np.int64)
    order = np.argsort(ea, kind="stable")
    n_mem = max(len(mem_codes), 1)
    store = np.unique(np.asarray(s_conv, dtype=np.int64) * n_mem + np.asarray(s_mem, np.int64))
    return CodedLineage(
        mem_codes, conv_codes, anchor_codes,
        ea[order], np.asarray(e_m, dtype=np.int64)[order],
        np.asarray(e_r, dtype=bool)[order], np.asarray(e_c, dtype=bool)[order],
        store, texts,
    )


@dataclass
class CodedQueries:
    """The scored queries of one run: trace matrix and gold anchor edges, integer-coded."""

    qids: list[str]
    conv: np.ndarray  # (Q,) conversation code, -1 when the store has no such conversation
    ids: np.ndarray  # (Q, k) memory codes, -1 = padding or an id the lineage does not know
    lengths: np.ndarray  # (Q,) number of ranked ids (<= k)
    gold_q: np.ndarray  # gold edges: query index
    gold_anchor: np.ndarray  # gold edges: anchor code (anchors no memory derives from dropped)
    unknown_ids: int  # retrieved ids absent from the query's store


def code_queries(run: TraceRun, gold: Gold, lineage: CodedLineage, qids: Sequence[str],
                 k: int) -> CodedQueries:
    """Integer-code the traces and gold anchors of `qids` (each must have a trace in `run`)."""
    q = len(qids)
    mc = lineage.mem_codes
    flat: list[int] = []
    lengths = np.zeros(q, dtype=np.int64)
    conv = np.full(q, -1, dtype=np.int64)
    g_q: list[int] = []
    g_a: list[int] = []
    ac = lineage.anchor_codes
    for qi, qid in enumerate(qids):
        t = run.traces[qid]
        ids = t.ids[:k]
        lengths[qi] = len(ids)
        flat.extend([mc.get(x, -1) for x in ids])
        g = gold.queries[qid]
        conv[qi] = lineage.conv_codes.get(g.conversation, -1)
        prefix = g.conversation + _SEP
        for a in dict.fromkeys(g.anchors):
            code = ac.get(prefix + a)
            if code is not None:
                g_q.append(qi)
                g_a.append(code)
    mat = np.full((q, k), -1, dtype=np.int64)
    mask = np.arange(k)[None, :] < lengths[:, None]
    codes = np.asarray(flat, dtype=np.int64)
    mat[mask] = codes
    # An id counts as known only if it is stored in this query's conversation.
    n_mem = lineage.n_mem
    known = mat >= 0
    keys = np.where(known, conv[:, None] * n_mem + mat, -1)
    ok = np.zeros_like(known)
    if known.any():
        ok[known] = np.isin(keys[known], lineage.store_keys) & (np.broadcast_to(
            conv[:, None], mat.shape)[known] >= 0)
    unknown = int(mask.sum() - ok.sum())
    mat[~ok] = -1
    return CodedQueries(list(qids), conv, mat, lengths, np.asarray(g_q, dtype=np.int64),
                        np.asarray(g_a, dtype=np.int64), unknown)


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
    keys = qrep * n_mem + lineage.edge_mem[pos]
    raw = lineage.edge_raw[pos]
    can = lineage.edge_can[pos]
    # A memory reached through two anchors is one eligible id: deduplicate by key.
    ukeys, first = np.unique(keys, return_index=True)
    raw = raw[first]
    can = can[first]
    uq = ukeys // n_mem
    n_rel = {
        "src": np.bincount(uq, minlength=q),
        "raw": np.bincount(uq[raw], minlength=q),
        "can": np.bincount(uq[can], minlength=q),
    }
    return TargetSets(ukeys, raw, can, n_rel)


def hit_matrices(cq: CodedQueries, ts: TargetSets, n_mem: int) -> dict[str, np.ndarray]:
    """(Q, k) boolean hit matrices of the three targets from one searchsorted pass."""
    shape = cq.ids.shape
    if ts.keys.size == 0 or cq.ids.size == 0:
        z = np.zeros(shape, dtype=bool)
        return {t: z.copy() for t in TARGETS}
    qidx = np.arange(shape[0], dtype=np.int64)[:, None]
    keys = qidx * n_mem + cq.ids
    pos = np.searchsorted(ts.keys, keys)
    np.minimum(pos, ts.keys.size - 1, out=pos)
    src = (ts.keys[pos] == keys) & (cq.ids >= 0)
    return {"raw": src & ts.raw[pos], "src": src, "can": src & ts.can[pos]}


def eligible_ids(cq: CodedQueries, ts: TargetSets, lineage: CodedLineage,
                 target: str) -> dict[str, list[str]]:
    """Query id -> eligible memory ids under `target` (for TREC qrels export)."""
    names = np.empty(len(lineage.mem_codes), dtype=object)
    for mid, code in lineage.mem_codes.items():
        names[code] = mid
    sel = {"src": np.ones(ts.keys.size, dtype=bool), "raw": ts.raw, "can": ts.can}[target]
    keys = ts.keys[sel]
    n_mem = lineage.n_mem
    out: dict[str, list[str]] = {}
    for key in keys.tolist():
        out.setdefault(cq.qids[key // n_mem], []).append(names[key % n_mem])
    return out
