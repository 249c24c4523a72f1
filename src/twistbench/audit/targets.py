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
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import numpy as np

from twistbench.audit.traces import (
    Gold,
    Lineage,
    TraceRun,
    Unusual,
    arrow_available,
    iter_gold_arrow,
    iter_gold_columns,
    iter_lineage_arrow,
    iter_lineage_columns,
    read_gold,
    read_lineage,
    release_arrow_memory,
)

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
    instances, contiguously per conversation; the same id in two conversations is two codes.

    Conversation c's memories are codes conv_start[c] .. conv_start[c + 1] - 1; mem_local[c]
    maps a memory id to its position in that range. The local positions are shared int
    objects (one list for every conversation), so a store of millions of memories costs its
    id strings and the dict tables, not an int object per memory. An anchor is coded by a
    vocabulary of anchor strings shared by all conversations (turn ids such as "D1:3" repeat
    across conversations); the key of an anchor of conversation c is c * n_vocab + vocab code.
    Conversation code len(convs) stands for a conversation the store does not have (no memory).
    """

    convs: dict[str, int]  # conversation -> code, in order of first appearance
    conv_start: np.ndarray  # (C + 2,) first memory code of each conversation code
    mem_local: list[dict[str, int]]  # per conversation code: memory id -> local position
    anchor_vocab: dict[str, int]  # anchor -> vocabulary code
    mem_raw: np.ndarray  # (M,) raw flag per memory code
    mem_can: np.ndarray  # (M,) canonical flag per memory code
    edge_anchor: np.ndarray  # one edge per (memory, source anchor): anchor key, sorted
    edge_mem: np.ndarray  # the edge's memory code
    rows: int = 0  # lineage rows read

    @property
    def n_mem(self) -> int:
        return max(int(self.conv_start[-1]), 1)

    @property
    def n_vocab(self) -> int:
        return max(len(self.anchor_vocab), 1)

    def conv_code(self, conversation: str) -> int:
        return self.convs.get(conversation, len(self.convs))

    def memory_ids(self) -> list[str]:
        """Code -> memory id (built on demand: only the TREC export needs it)."""
        out: list[str] = []
        for d in self.mem_local:
            out.extend(d)  # a dict keeps insertion order = local position order
        return out


_SHARED_INTS: list[int] = []


def _shared_ints(n: int) -> list[int]:
    """range(n) as one list of int objects reused by every conversation's dict."""
    if len(_SHARED_INTS) < n:
        _SHARED_INTS.extend(range(len(_SHARED_INTS), max(n, 2 * len(_SHARED_INTS))))
    return _SHARED_INTS


class LineageCoder:
    """Builds a CodedLineage from column batches of lineage rows, in any row order."""

    def __init__(self) -> None:
        self.convs: dict[str, int] = {}
        self.mem_local: list[dict[str, int]] = []
        self.vocab: dict[str, int] = {}
        self.n_rows = 0
        # per batch: row conversation, row local position, raw, canonical; edge anchor
        # vocabulary code, edge row
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(self, convs: Sequence[str], mids: Sequence[str], sources: Sequence[Sequence[str]],
            raw: Sequence[bool], can: Sequence[bool]) -> None:
        """One batch; ValueError on a memory id repeated within a conversation."""
        n = len(mids)
        for c in dict.fromkeys(convs):
            if c not in self.convs:
                self.convs[c] = len(self.convs)
                self.mem_local.append({})
        cc = np.fromiter(map(self.convs.__getitem__, convs), dtype=np.int32, count=n)
        local = self._locals(cc, mids)
        flat = list(chain.from_iterable(sources))
        vocab = self.vocab
        for a in dict.fromkeys(flat):
            if a not in vocab:
                vocab[a] = len(vocab)
        lens = np.fromiter(map(len, sources), dtype=np.int64, count=n)
        self.parts.append((
            cc, local, np.array(raw, dtype=bool), np.array(can, dtype=bool),
            np.fromiter(map(vocab.__getitem__, flat), dtype=np.int32, count=len(flat)),
            np.repeat(np.arange(self.n_rows, self.n_rows + n, dtype=np.int32), lens)))
        self.n_rows += n

    def add_arrow(self, batch: Any) -> None:
        """One pyarrow batch of iter_lineage_arrow: the anchors and conversations coded by
        pyarrow's dictionary encoding, so only the memory ids become Python strings."""
        # pyarrow is optional (the parquet extra): imported where it is used
        import pyarrow.compute as pc

        n = batch.num_rows
        conv = batch.column("conversation")
        if conv.null_count:  # absent in the whole batch: the default conversation ""
            conv_names, conv_idx = [""], np.zeros(n, dtype=np.int64)
        else:
            enc = pc.dictionary_encode(conv)
            conv_names = enc.dictionary.to_pylist()
            conv_idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        for c in conv_names:
            if c not in self.convs:
                self.convs[c] = len(self.convs)
                self.mem_local.append({})
        cc = np.fromiter(map(self.convs.__getitem__, conv_names), dtype=np.int32,
                         count=len(conv_names))[conv_idx] if n else np.zeros(0, np.int32)
        mids = batch.column("memory_id").to_pylist()
        local = self._locals(cc, mids)
        src = batch.column("sources")
        lens = pc.list_value_length(src).to_numpy(zero_copy_only=False).astype(np.int64)
        senc = pc.dictionary_encode(src.flatten())
        names = senc.dictionary.to_pylist()
        vocab = self.vocab
        for a in names:
            if a not in vocab:
                vocab[a] = len(vocab)
        to_vocab = np.fromiter(map(vocab.__getitem__, names), dtype=np.int32, count=len(names))
        e_vocab = to_vocab[senc.indices.to_numpy(zero_copy_only=False).astype(np.int64)]
        self.parts.append((
            cc, local, batch.column("raw").to_numpy(zero_copy_only=False).astype(bool),
            batch.column("canonical").to_numpy(zero_copy_only=False).astype(bool), e_vocab,
            np.repeat(np.arange(self.n_rows, self.n_rows + n, dtype=np.int32), lens)))
        self.n_rows += n

    def _locals(self, cc: np.ndarray, mids: Sequence[str]) -> np.ndarray:
        """Local positions of a batch's memories, added to their conversations' tables."""
        n = len(mids)
        local = np.empty(n, dtype=np.int32)
        pos = 0
        for code, grp in groupby(cc.tolist()):  # runs of one conversation
            size = len(list(grp))
            d = self.mem_local[code]
            start = len(d)
            d.update(zip(mids[pos:pos + size], _shared_ints(start + size)[start:start + size]))
            if len(d) != start + size:
                conv = next(k for k, v in self.convs.items() if v == code)
                raise ValueError(f"memory id repeated in conversation {conv!r}")
            local[pos:pos + size] = np.arange(start, start + size, dtype=np.int32)
            pos += size
        return local

    def done(self) -> CodedLineage:
        sizes = np.fromiter(map(len, self.mem_local), dtype=np.int64, count=len(self.mem_local))
        conv_start = np.zeros(len(sizes) + 2, dtype=np.int64)
        np.cumsum(sizes, out=conv_start[1:-1])
        conv_start[-1] = conv_start[-2]  # the store-less conversation: no memory
        parts = [list(p) for p in self.parts]  # each column freed as soon as it is joined
        self.parts = []
        cols = []
        for i in range(6):
            cols.append(np.concatenate([p[i] for p in parts]) if parts else
                        np.zeros(0, dtype=np.int32))
            for p in parts:
                p[i] = None
        del parts
        rc, local, raw_rows, can_rows, e_vocab, e_row = cols
        del cols
        code = (conv_start[rc] + local).astype(np.int32 if conv_start[-1] < 2**31 else np.int64)
        m = int(conv_start[-1])
        raw = np.zeros(m, dtype=bool)
        can = np.zeros(m, dtype=bool)
        raw[code] = raw_rows
        can[code] = can_rows
        del raw_rows, can_rows, local
        key = rc[e_row].astype(np.int64)
        key *= max(len(self.vocab), 1)
        key += e_vocab
        mem = code[e_row]
        del e_row, e_vocab, rc, code
        # A stable sort by anchor key: one memory's edges keep their order among equal keys,
        # so a source listed twice for one memory gives two adjacent equal edges.
        order = np.argsort(key, kind="stable")
        key = key[order]
        mem = mem[order]
        del order
        if key.size > 1:  # a source listed twice for one memory is one edge
            keep = np.concatenate(([True], (key[1:] != key[:-1]) | (mem[1:] != mem[:-1])))
            if not keep.all():
                key, mem = key[keep], mem[keep]
        return CodedLineage(self.convs, conv_start, self.mem_local, self.vocab, raw, can, key,
                            mem, self.n_rows)


def _np(buf: array, dtype: type) -> np.ndarray:
    return np.frombuffer(buf, dtype=dtype) if len(buf) else np.zeros(0, dtype=dtype)


@_no_gc
def code_lineage(lineage: Lineage) -> CodedLineage:
    """Integer-code a lineage held in memory (the same coder as read_coded_lineage).

    Raises ValueError on a memory id repeated within a conversation (read_lineage reports the
    same defect as an InputError with the line number).
    """
    rows = lineage.rows
    coder = LineageCoder()
    coder.add([r.conversation for r in rows], [r.memory_id for r in rows],
              [r.sources for r in rows], [r.raw for r in rows], [r.canonical for r in rows])
    return coder.done()


@_no_gc
def read_coded_lineage(path: str | Path, columnar: bool = True) -> CodedLineage:
    """Read and code a lineage file batch by batch, never holding its rows as objects (with
    pyarrow, when installed and `columnar`, else orjson; anything pyarrow leaves aside is read
    by the orjson reading). InputError (through read_lineage, which names the line) on any
    defect."""
    try:
        if columnar and arrow_available():
            try:
                coder = LineageCoder()
                for batch in iter_lineage_arrow(path):
                    coder.add_arrow(batch)
                release_arrow_memory()
                return coder.done()
            except Unusual:
                pass
        coder = LineageCoder()
        for cols in iter_lineage_columns(path):
            coder.add(cols.conversations, cols.memory_ids, cols.sources, cols.raw,
                      cols.canonical)
    except ValueError:
        read_lineage(path)  # raises the InputError naming the repeated id's line
        raise
    return coder.done()


@dataclass
class CodedGold:
    """Gold queries coded against one store: conversation codes and anchor keys (CSR)."""

    qids: list[str]  # gold order
    index: dict[str, int]  # query id -> gold index
    conv: np.ndarray  # (G,) conversation code (CodedLineage.conv_code)
    categories: list[str]
    anchor_off: np.ndarray  # (G + 1,) query g's anchor keys are anchor_key[off[g]:off[g + 1]]
    anchor_key: np.ndarray  # anchors that some memory derives from, one per (query, anchor)


class GoldCoder:
    def __init__(self, lineage: CodedLineage) -> None:
        self.lineage = lineage
        self.qids: list[str] = []
        self.conv = array("i")
        self.cats: list[str] = []
        self.cat_cache: dict[str, str] = {}
        self.q_of_anchor = array("q")
        self.anchor_key = array("q")

    def add(self, qids: Sequence[str], convs: Sequence[str], anchors: Sequence[Sequence[str]],
            categories: Sequence[str]) -> None:
        cl = self.lineage
        q0 = len(self.qids)
        self.qids.extend(qids)
        cc = np.fromiter(map(cl.conv_code, convs), dtype=np.int64, count=len(convs))
        self.conv.extend(cc.astype(np.int32).tolist())
        self.cats.extend(map(self.cat_cache.setdefault, categories, categories))
        lens = np.fromiter(map(len, anchors), dtype=np.int64, count=len(anchors))
        voc = np.fromiter(map(cl.anchor_vocab.get, chain.from_iterable(anchors), repeat(-1)),
                          dtype=np.int64, count=int(lens.sum()))
        qrep = np.repeat(np.arange(len(qids), dtype=np.int64), lens)
        known = voc >= 0  # an anchor no memory derives from cannot make anything eligible
        qk = qrep[known]
        keys = cc[qk] * cl.n_vocab + voc[known]
        self.q_of_anchor.extend((qk + q0).tolist())
        self.anchor_key.extend(keys.tolist())

    def add_arrow(self, batch: Any) -> None:
        """One pyarrow batch of iter_gold_arrow (conversations, categories and anchors coded
        through pyarrow's dictionary encoding)."""
        # pyarrow is optional (the parquet extra): imported where it is used
        import pyarrow.compute as pc

        def encoded(col: Any) -> tuple[list[str], np.ndarray]:
            enc = pc.dictionary_encode(col)
            return enc.dictionary.to_pylist(), enc.indices.to_numpy(
                zero_copy_only=False).astype(np.int64)

        cl = self.lineage
        qids = batch.column("query_id").to_pylist()
        q0 = len(self.qids)
        self.qids.extend(qids)
        n = len(qids)
        if n == 0:
            return
        names, idx = encoded(batch.column("conversation"))
        cc = np.fromiter(map(cl.conv_code, names), dtype=np.int64, count=len(names))[idx]
        self.conv.extend(cc.astype(np.int32).tolist())
        names, idx = encoded(batch.column("category"))
        names = [self.cat_cache.setdefault(c, c) for c in names]
        self.cats.extend(map(names.__getitem__, idx.tolist()))
        anchors = batch.column("anchors")
        lens = pc.list_value_length(anchors).to_numpy(zero_copy_only=False).astype(np.int64)
        names, idx = encoded(anchors.flatten())
        to_voc = np.fromiter(map(cl.anchor_vocab.get, names, repeat(-1)), dtype=np.int64,
                             count=len(names))
        voc = to_voc[idx] if idx.size else np.zeros(0, dtype=np.int64)
        qrep = np.repeat(np.arange(n, dtype=np.int64), lens)
        known = voc >= 0
        qk = qrep[known]
        self.q_of_anchor.extend((qk + q0).tolist())
        self.anchor_key.extend((cc[qk] * cl.n_vocab + voc[known]).tolist())

    def done(self) -> CodedGold:
        g = len(self.qids)
        index = dict(zip(self.qids, range(g)))
        if len(index) != g:
            raise ValueError("a query id appears twice")
        q = _np(self.q_of_anchor, np.int64)
        key = _np(self.anchor_key, np.int64)
        if key.size > 1:  # an anchor listed twice for one query is one anchor
            order = np.lexsort((key, q))
            q, key = q[order], key[order]
            keep = np.concatenate(([True], (q[1:] != q[:-1]) | (key[1:] != key[:-1])))
            q, key = q[keep], key[keep]
        off = np.zeros(g + 1, dtype=np.int64)
        np.cumsum(np.bincount(q, minlength=g), out=off[1:])
        return CodedGold(self.qids, index, _np(self.conv, np.int32).astype(np.int64),
                         self.cats, off, key)


@_no_gc
def code_gold(gold: Gold, lineage: CodedLineage) -> CodedGold:
    """Code gold queries held in memory (the same coder as read_coded_gold)."""
    gs = list(gold.queries.values())
    coder = GoldCoder(lineage)
    coder.add([g.query_id for g in gs], [g.conversation for g in gs], [g.anchors for g in gs],
              [g.category for g in gs])
    return coder.done()


@_no_gc
def read_coded_gold(path: str | Path, lineage: CodedLineage, columnar: bool = True) -> CodedGold:
    """Read and code a gold file batch by batch (pyarrow when installed and `columnar`, else
    or for anything unusual orjson); InputError (through read_gold) on a defect."""
    coder = None
    if columnar and arrow_available():
        try:
            coder = GoldCoder(lineage)
            for batch in iter_gold_arrow(path):
                coder.add_arrow(batch)
            release_arrow_memory()
        except Unusual:
            coder = None
    if coder is None:
        coder = GoldCoder(lineage)
        for cols in iter_gold_columns(path):
            coder.add(cols.query_ids, cols.conversations, cols.anchors, cols.categories)
    try:
        return coder.done()
    except ValueError:
        read_gold(path)  # raises the InputError naming the repeated query's line
        raise


@dataclass
class CodedQueries:
    """The scored queries of one chunk: trace matrix and gold anchor edges, integer-coded."""

    qids: list[str]
    conv: np.ndarray  # (Q,) conversation code of each query
    ids: np.ndarray  # (Q, w) memory codes, -1 = padding or an id not stored in q's conversation
    lengths: np.ndarray  # (Q,) number of ranked ids (<= k)
    gold_q: np.ndarray  # gold edges: query index
    gold_anchor: np.ndarray  # gold edges: anchor key (anchors no memory derives from dropped)
    unknown_ids: int  # retrieved ids absent from the query's store
    duplicates_dropped: int = 0  # repeated ids dropped here (code_rows with dedupe=True)


@_no_gc
def code_rows(qids: Sequence[str], id_lists: Sequence[Sequence[str]], gidx: np.ndarray,
              gold: CodedGold, lineage: CodedLineage, k: int | None,
              dedupe: bool = False) -> CodedQueries:
    """Integer-code ranked id lists of gold queries `gidx` (cut at k when given).

    dedupe=True: a list may repeat an id; the repeats are dropped (the first rank kept) before
    the cut, and counted in `duplicates_dropped`. They are found on the codes (a row whose sorted
    known codes repeat, or with two ids the store does not know), so only such rows are looked
    at as strings."""
    q = len(id_lists)
    if not dedupe and k is not None and any(len(x) > k for x in id_lists):
        id_lists = [x[:k] for x in id_lists]
    conv = gold.conv[gidx]
    mat, lengths = _code_matrix(id_lists, conv, lineage)
    dropped = 0
    if dedupe and q:
        s = np.sort(mat, axis=1)
        rep = ((s[:, 1:] == s[:, :-1]) & (s[:, 1:] >= 0)).any(axis=1) if s.shape[1] > 1 else \
            np.zeros(q, dtype=bool)
        within = np.arange(mat.shape[1])[None, :] < lengths[:, None]
        rep |= ((mat < 0) & within).sum(axis=1) >= 2
        if rep.any():
            id_lists = list(id_lists)
            for i in np.flatnonzero(rep).tolist():
                ids = id_lists[i]
                if len(set(ids)) != len(ids):
                    id_lists[i] = list(dict.fromkeys(ids))  # first rank kept
                    dropped += len(ids) - len(id_lists[i])
            if dropped:
                mat, lengths = _code_matrix(id_lists, conv, lineage)
        if k is not None and mat.shape[1] > k:
            mat = mat[:, :k]
            lengths = np.minimum(lengths, k)
    return _finish_rows(qids, gidx, conv, mat, lengths, gold, dropped)


def _finish_rows(qids: Sequence[str], gidx: np.ndarray, conv: np.ndarray, mat: np.ndarray,
                 lengths: np.ndarray, gold: CodedGold, dropped: int) -> CodedQueries:
    """CodedQueries of a coded matrix: the unknown ids counted, the gold anchor edges taken."""
    within = np.arange(mat.shape[1])[None, :] < lengths[:, None]
    unknown = int(((mat < 0) & within).sum())
    off = gold.anchor_off
    cnt = off[gidx + 1] - off[gidx]
    total = int(cnt.sum())
    starts = np.repeat(off[gidx] - (np.cumsum(cnt) - cnt), cnt)
    gold_anchor = gold.anchor_key[np.arange(total, dtype=np.int64) + starts]
    gold_q = np.repeat(np.arange(len(gidx), dtype=np.int64), cnt)
    return CodedQueries(list(qids), conv, mat, lengths, gold_q, gold_anchor, unknown, dropped)


@_no_gc
def code_encoded(qids: Sequence[str], gidx: np.ndarray, lengths: np.ndarray, ids: np.ndarray,
                 vocab: Sequence[str], gold: CodedGold, lineage: CodedLineage,
                 k: int | None) -> CodedQueries:
    """Integer-code dictionary-encoded ranked ids: row r's ids are vocab[ids[o_r : o_r + len_r]]
    (o = the running sum of `lengths`, each already cut at the trace's own k). A repeated id is
    an equal index, so repeats are found and dropped (first rank kept) without the strings;
    each distinct (conversation, id) pair is looked up once."""
    q = len(gidx)
    conv = gold.conv[gidx]
    width = int(lengths.max()) if q else 0
    mat_idx = np.full((q, width), -1, dtype=np.int64)
    mask = np.arange(width)[None, :] < lengths[:, None]
    mat_idx[mask] = ids
    dropped = 0
    if width > 1:
        s = np.sort(mat_idx, axis=1)
        rep = np.flatnonzero(((s[:, 1:] == s[:, :-1]) & (s[:, 1:] >= 0)).any(axis=1))
        for r in rep.tolist():
            row = mat_idx[r, :lengths[r]].copy()
            keep = np.sort(np.unique(row, return_index=True)[1])
            dropped += row.size - keep.size
            mat_idx[r] = -1
            mat_idx[r, :keep.size] = row[keep]
            lengths[r] = keep.size
        if rep.size:
            mask = np.arange(width)[None, :] < lengths[:, None]
    if k is not None and width > k:
        mat_idx = mat_idx[:, :k]
        mask = mask[:, :k]
        lengths = np.minimum(lengths, k)
    n_vocab = max(len(vocab), 1)
    pair = np.repeat(conv, mask.sum(axis=1)) * n_vocab + mat_idx[mask]
    upair, inverse = np.unique(pair, return_inverse=True)
    up_conv = upair // n_vocab
    local = np.full(upair.size, -1, dtype=np.int64)
    bounds = np.flatnonzero(np.diff(up_conv)) + 1  # the pairs are sorted by conversation
    n_conv = len(lineage.mem_local)
    for lo, hi in zip(np.concatenate(([0], bounds)).tolist(),
                      np.concatenate((bounds, [upair.size])).tolist()):
        c = int(up_conv[lo]) if hi > lo else n_conv
        if c < n_conv:
            names = map(vocab.__getitem__, (upair[lo:hi] % n_vocab).tolist())
            local[lo:hi] = np.fromiter(map(lineage.mem_local[c].get, names, repeat(-1)),
                                       dtype=np.int64, count=hi - lo)
    start = lineage.conv_start[up_conv]
    ucode = np.where(local >= 0, local + start, -1)
    mat = np.full(mat_idx.shape, -1, dtype=np.int64)
    mat[mask] = ucode[inverse.reshape(-1)]
    return _finish_rows(qids, gidx, conv, mat, lengths, gold, dropped)


def _code_matrix(id_lists: Sequence[Sequence[str]], conv: np.ndarray,
                 lineage: CodedLineage) -> tuple[np.ndarray, np.ndarray]:
    """(Q, longest) memory codes (-1: padding or not stored in the query's conversation), and
    the lengths."""
    q = len(id_lists)
    lengths = np.fromiter(map(len, id_lists), dtype=np.int64, count=q)
    width = int(lengths.max()) if q else 0
    empty: dict[str, int] = {}
    n_conv = len(lineage.mem_local)
    dicts = [lineage.mem_local[c] if c < n_conv else empty for c in conv.tolist()]
    flat = array("q")
    for d, ids in zip(dicts, id_lists):
        flat.extend(map(d.get, ids, repeat(-1)))  # the local position, straight into C int64s
    local = _np(flat, np.int64)
    codes = np.where(local >= 0, local + np.repeat(lineage.conv_start[conv], lengths), -1)
    if q and codes.size == q * width:  # every trace is full: no padding mask needed
        return codes.reshape(q, width), lengths
    mat = np.full((q, width), -1, dtype=np.int64)
    mat[np.arange(width)[None, :] < lengths[:, None]] = codes
    return mat, lengths


def code_queries(run: TraceRun, gold: Gold | CodedGold, lineage: CodedLineage,
                 qids: Sequence[str], k: int) -> CodedQueries:
    """Integer-code the traces and gold anchors of `qids` (each must have a trace in `run`)."""
    cg = gold if isinstance(gold, CodedGold) else code_gold(gold, lineage)
    gidx = np.fromiter(map(cg.index.__getitem__, qids), dtype=np.int64, count=len(qids))
    return code_rows(qids, [run.traces[x].ids for x in qids], gidx, cg, lineage, k)


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
    conv = cq.conv
    sizes = np.diff(lineage.conv_start)  # per conversation code, the last one 0
    counts = np.bincount(conv, minlength=sizes.size)
    cells = counts * sizes
    total = int(cells.sum())
    if total > limit:
        return None
    conv_base = np.concatenate(([0], np.cumsum(cells)[:-1]))
    order = np.argsort(conv, kind="stable")  # the j-th query of its conversation
    j = np.empty(conv.size, dtype=np.int64)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    j[order] = np.arange(conv.size, dtype=np.int64) - first[conv[order]]
    offset = conv_base[conv] + j * sizes[conv] - lineage.conv_start[conv]
    return max(total, 1), offset


def eligible_ids(cq: CodedQueries, ts: TargetSets, lineage: CodedLineage,
                 target: str) -> dict[str, list[str]]:
    """Query id -> eligible memory ids under `target` (for TREC qrels export)."""
    sel = {"src": np.ones(ts.keys.size, dtype=bool), "raw": ts.raw, "can": ts.can}[target]
    q_idx, m_idx = np.divmod(ts.keys[sel], lineage.n_mem)
    if not q_idx.size:
        return {}
    ids = np.asarray(lineage.memory_ids(), dtype=object)[m_idx].tolist()
    # keys are sorted, so each query's ids are one slice (query order, then memory code)
    cuts = (np.flatnonzero(q_idx[1:] != q_idx[:-1]) + 1).tolist()
    starts, ends = [0, *cuts], [*cuts, len(ids)]
    return {cq.qids[q]: ids[a:b] for q, a, b in zip(q_idx[starts].tolist(), starts, ends)}
