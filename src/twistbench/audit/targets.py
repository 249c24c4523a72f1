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
from itertools import chain, repeat
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
from twistbench.audit.traces import (
    _ranks as ranks,
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


# --- memory ids as bytes: hashed, sorted, verified ---------------------------------------------
# A store of millions of memories held its ids as Python strings in one dict per conversation
# (about 190 bytes per memory with the dict tables: 1.4 GB for 7.5 M memories). Here an id is
# its UTF-8 bytes in one uint8 array; a (conversation code, id) key is found through a sorted
# array of 64-bit hashes, and every hash hit is checked on the conversation and the bytes, so a
# collision costs a second probe, never a wrong match (about 30 bytes per memory).
_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xBF58476D1CE4E5B9)
_K3 = np.uint64(0x94D049BB133111EB)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place (uint64 arithmetic wraps)."""
    h ^= h >> np.uint64(30)
    h *= _K2
    h ^= h >> np.uint64(27)
    h *= _K3
    h ^= h >> np.uint64(31)
    return h


def utf8_columns(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Strings as (bytes, start, length): string i is data[start[i] : start[i] + length[i]].
    Lone surrogates (possible in strings built in memory) keep their 3-byte form, so two
    strings are equal exactly when their bytes are."""
    joined = "".join(strings)
    raw = joined.encode("utf-8", "surrogatepass")
    n = len(strings)
    if len(raw) == len(joined):  # ASCII: a character is a byte
        length = np.fromiter(map(len, strings), dtype=np.int64, count=n)
    else:
        length = np.fromiter((len(s.encode("utf-8", "surrogatepass")) for s in strings),
                             dtype=np.int64, count=n)
    start = np.cumsum(length) - length
    return np.frombuffer(raw, dtype=np.uint8), start, length


def arrow_utf8_columns(col: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """utf8_columns of a pyarrow string array without nulls, from its buffers (no Python
    string); the bytes are copied, so the batch they came from can be freed."""
    import pyarrow as pa  # imported where used (start-up time); only called with pyarrow present

    n = len(col)
    width = np.int64 if pa.types.is_large_string(col.type) else np.int32
    _, offs_buf, data_buf = col.buffers()
    offs = np.frombuffer(offs_buf, dtype=width)[col.offset:col.offset + n + 1].astype(np.int64)
    if n == 0 or data_buf is None:
        return np.zeros(0, dtype=np.uint8), np.zeros(n, dtype=np.int64), np.zeros(n, np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8)[offs[0]:offs[-1]].copy()
    return data, offs[:-1] - offs[0], np.diff(offs)


_KEY_BLOCK = 1 << 16  # keys hashed or compared per pass: bounds the per-byte index arrays


def key_hashes(conv: np.ndarray, data: np.ndarray, start: np.ndarray,
               length: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each (conversation code, bytes) key: the conversation and the length
    mixed first, then the bytes as little-endian 8-byte words, zero-padded (keys of equal word
    count are hashed together, so a long key never widens the others' matrix)."""
    if length.size > _KEY_BLOCK:
        return np.concatenate([key_hashes(conv[i:i + _KEY_BLOCK], data,
                                          start[i:i + _KEY_BLOCK], length[i:i + _KEY_BLOCK])
                               for i in range(0, length.size, _KEY_BLOCK)])
    h = conv.astype(np.uint64) * _K1
    h += length.astype(np.uint64)
    _mix(h)
    words = (length + 7) // 8
    for nw in np.unique(words).tolist():
        if nw == 0:
            continue
        rows = np.flatnonzero(words == nw)
        lens = length[rows]
        width = 8 * nw
        mat = np.zeros(rows.size * width, dtype=np.uint8)
        r = ranks(lens)
        mat[np.repeat(np.arange(rows.size, dtype=np.int64) * width, lens) + r] = \
            data[np.repeat(start[rows], lens) + r]
        w = mat.view("<u8").reshape(rows.size, nw)
        hh = h[rows]
        for j in range(nw):
            hh ^= w[:, j]
            hh *= _K1
            _mix(hh)
        h[rows] = hh
    return h


def _same_bytes(data_a: np.ndarray, start_a: np.ndarray, data_b: np.ndarray,
                start_b: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Per pair, whether data_a[start_a : start_a + length] equals data_b's slice."""
    if length.size > _KEY_BLOCK:
        return np.concatenate([
            _same_bytes(data_a, start_a[i:i + _KEY_BLOCK], data_b, start_b[i:i + _KEY_BLOCK],
                        length[i:i + _KEY_BLOCK]) for i in range(0, length.size, _KEY_BLOCK)])
    r = ranks(length)
    differ = data_a[np.repeat(start_a, length) + r] != data_b[np.repeat(start_b, length) + r]
    same = np.ones(length.size, dtype=bool)
    same[np.repeat(np.arange(length.size), length)[differ]] = False
    return same


_MALLOC_TRIM: Any = None


def release_heap() -> None:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim; a no-op where
    there is no glibc). Coding a lineage frees its per-batch arrays, most below malloc's mmap
    threshold, and glibc keeps those pages: for 7.5 M memories 770 MB stayed resident after
    coding, 520 MB with the trim (measured), and later stages did not reuse them."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        try:
            # ctypes only for glibc's malloc_trim, once: imported where it is used
            import ctypes

            _MALLOC_TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _MALLOC_TRIM = False
    if _MALLOC_TRIM:
        _MALLOC_TRIM(0)


def _then_release_heap(fn: Callable[P, R]) -> Callable[P, R]:
    """release_heap() once `fn` has returned (its coder and batches freed)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        finally:
            release_heap()

    return wrapper


@dataclass
class IdTable:
    """Entries 0 .. N-1, each a (conversation code, id) key: its bytes at
    data[start[e] : start[e] + length[e]], found by `lookup` through the sorted hashes."""

    data: np.ndarray  # uint8, the ids' UTF-8 bytes (any order)
    start: np.ndarray  # (N,) int64
    length: np.ndarray  # (N,) int32
    conv_start: np.ndarray  # entries conv_start[c] .. conv_start[c + 1] - 1 have conversation c
    hashes: np.ndarray  # (N,) uint64 key hashes, sorted
    entry: np.ndarray  # (N,) the entry of each sorted hash

    @classmethod
    def build(cls, data: np.ndarray, start: np.ndarray, length: np.ndarray,
              conv_start: np.ndarray, hashes: np.ndarray) -> tuple[IdTable, np.ndarray]:
        """The table of entries with these keys and hashes, and an entry whose key an
        earlier entry already has (a repeated id; empty when none)."""
        entry = np.argsort(hashes, kind="stable")
        hashes = hashes[entry]
        idx = entry.astype(np.int32 if entry.size < 2**31 else np.int64)
        table = cls(data, start, length.astype(np.int32), conv_start, hashes, idx)
        tie = np.flatnonzero(hashes[1:] == hashes[:-1])  # rare: the same key, or a collision
        for i in tie.tolist():
            # every entry before i + 1 with the same hash (a run longer than 2 is checked
            # against each earlier member)
            j = i
            e = int(idx[i + 1])
            while j >= 0 and hashes[j] == hashes[i + 1]:
                if table.same_key(int(idx[j]), e):
                    return table, np.array([e], dtype=np.int64)  # the first is enough
                j -= 1
        return table, np.zeros(0, dtype=np.int64)

    def conv_of(self, entries: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.conv_start, entries, side="right") - 1

    def same_key(self, a: int, b: int) -> bool:
        la, lb = int(self.length[a]), int(self.length[b])
        conv = self.conv_of(np.array([a, b]))
        if conv[0] != conv[1] or la != lb:
            return False
        sa, sb = int(self.start[a]), int(self.start[b])
        return bool(np.array_equal(self.data[sa:sa + la], self.data[sb:sb + lb]))

    def lookup(self, conv: np.ndarray, data: np.ndarray, start: np.ndarray,
               length: np.ndarray) -> np.ndarray:
        """The entry of each (conversation code, bytes) key, -1 where the table has none."""
        n = length.size
        out = np.full(n, -1, dtype=np.int64)
        if n == 0 or self.hashes.size == 0:
            return out
        h = key_hashes(conv, data, start, length)
        order = np.argsort(h)  # sorted needles: the binary searches walk forward
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.searchsorted(self.hashes, h[order])
        pending = np.arange(n, dtype=np.int64)
        while pending.size:
            p = pos[pending]
            live = p < self.hashes.size
            pending, p = pending[live], p[live]
            live = self.hashes[p] == h[pending]
            pending, p = pending[live], p[live]
            if not pending.size:
                break
            e = self.entry[p].astype(np.int64)
            ok = (self.conv_of(e) == conv[pending]) & (self.length[e] == length[pending])
            ok[ok] = _same_bytes(self.data, self.start[e[ok]], data, start[pending[ok]],
                                 length[pending[ok]])
            out[pending[ok]] = e[ok]
            pending = pending[~ok]  # a collision: the next entry of the same hash
            pos[pending] += 1
        return out

    def strings(self, entries: np.ndarray | None = None) -> list[str]:
        """The ids of `entries` (all, in entry order, by default) as strings."""
        raw = self.data.tobytes()
        start, length = (self.start, self.length) if entries is None else \
            (self.start[entries], self.length[entries])
        return [raw[s:s + n].decode("utf-8", "surrogatepass")
                for s, n in zip(start.tolist(), length.tolist())]

    def string(self, e: int) -> str:
        s, n = int(self.start[e]), int(self.length[e])
        return self.data[s:s + n].tobytes().decode("utf-8", "surrogatepass")


@dataclass
class CodedLineage:
    """A store's lineage as integer arrays. Memory codes number (conversation, memory id)
    instances, contiguously per conversation; the same id in two conversations is two codes.

    Conversation c's memories are codes conv_start[c] .. conv_start[c + 1] - 1, in the order
    the lineage lists them. `ids` finds the code of a (conversation code, memory id) key; it
    holds the ids as UTF-8 bytes in one array (no Python object per memory). An anchor is
    coded by a vocabulary of anchor strings shared by all conversations (turn ids such as
    "D1:3" repeat across conversations); the key of an anchor of conversation c is
    c * n_vocab + vocab code. Conversation code len(convs) stands for a conversation the store
    does not have (no memory).
    """

    convs: dict[str, int]  # conversation -> code, in order of first appearance
    conv_start: np.ndarray  # (C + 2,) first memory code of each conversation code
    ids: IdTable  # entry = memory code
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
        """Code -> memory id (built on demand: only the TREC export and the contested cases
        need it)."""
        return self.ids.strings()

    def codes(self, conv: np.ndarray, ids: Sequence[str]) -> np.ndarray:
        """The memory code of each (conversation code, memory id), -1 where the store has
        none."""
        data, start, length = utf8_columns(ids)
        return self.ids.lookup(np.asarray(conv, dtype=np.int64), data, start, length)


class LineageCoder:
    """Builds a CodedLineage from column batches of lineage rows, in any row order."""

    def __init__(self) -> None:
        self.convs: dict[str, int] = {}
        self.conv_count = np.zeros(0, dtype=np.int64)  # memories so far per conversation code
        self.vocab: dict[str, int] = {}
        self.n_rows = 0
        # per batch: row conversation, row local position, raw, canonical; edge anchor
        # vocabulary code, edge row; the memory ids' bytes, their lengths and key hashes
        self.parts: list[tuple[np.ndarray, ...]] = []

    def _conv_codes(self, names: Sequence[str]) -> np.ndarray:
        for c in names:
            if c not in self.convs:
                self.convs[c] = len(self.convs)
        return np.fromiter(map(self.convs.__getitem__, names), dtype=np.int32, count=len(names))

    def add(self, convs: Sequence[str], mids: Sequence[str], sources: Sequence[Sequence[str]],
            raw: Sequence[bool], can: Sequence[bool]) -> None:
        """One batch (a memory id repeated within a conversation is found by done())."""
        n = len(mids)
        names = list(dict.fromkeys(convs))
        codes = dict(zip(names, self._conv_codes(names).tolist()))
        cc = np.fromiter(map(codes.__getitem__, convs), dtype=np.int32, count=n)
        flat = list(chain.from_iterable(sources))
        vocab = self.vocab
        for a in dict.fromkeys(flat):
            if a not in vocab:
                vocab[a] = len(vocab)
        lens = np.fromiter(map(len, sources), dtype=np.int64, count=n)
        e_vocab = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int32, count=len(flat))
        self._add(cc, utf8_columns(mids), np.array(raw, dtype=bool), np.array(can, dtype=bool),
                  e_vocab, lens)

    def add_arrow(self, batch: Any) -> None:
        """One pyarrow batch of iter_lineage_arrow: the anchors and conversations coded by
        pyarrow's dictionary encoding, the memory ids taken as bytes from their buffers (no
        Python string per row)."""
        # pyarrow: imported where it is used (start-up time)
        import pyarrow.compute as pc

        n = batch.num_rows
        conv = batch.column("conversation")
        if conv.null_count:  # absent in the whole batch: the default conversation ""
            conv_names, conv_idx = [""], np.zeros(n, dtype=np.int64)
        else:
            enc = pc.dictionary_encode(conv)
            conv_names = enc.dictionary.to_pylist()
            conv_idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        cc = self._conv_codes(conv_names)[conv_idx] if n else np.zeros(0, np.int32)
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
        self._add(cc, arrow_utf8_columns(batch.column("memory_id")),
                  batch.column("raw").to_numpy(zero_copy_only=False).astype(bool),
                  batch.column("canonical").to_numpy(zero_copy_only=False).astype(bool),
                  e_vocab, lens)

    def _add(self, cc: np.ndarray, mids: tuple[np.ndarray, np.ndarray, np.ndarray],
             raw: np.ndarray, can: np.ndarray, e_vocab: np.ndarray, lens: np.ndarray) -> None:
        n = cc.size
        data, start, length = mids
        self.parts.append((
            cc, self._locals(cc), raw, can, e_vocab,
            np.repeat(np.arange(self.n_rows, self.n_rows + n, dtype=np.int32), lens),
            data, length.astype(np.int32), key_hashes(cc, data, np.cumsum(length) - length,
                                                      length)))
        self.n_rows += n

    def _locals(self, cc: np.ndarray) -> np.ndarray:
        """Local positions of a batch's memories within their conversations (row order)."""
        n_conv = len(self.convs)
        if self.conv_count.size < n_conv:
            self.conv_count = np.concatenate(
                (self.conv_count, np.zeros(n_conv - self.conv_count.size, dtype=np.int64)))
        if not cc.size:
            return np.zeros(0, dtype=np.int32)
        counts = np.bincount(cc, minlength=n_conv)
        order = np.argsort(cc, kind="stable")
        local = np.empty(cc.size, dtype=np.int64)
        local[order] = np.arange(cc.size, dtype=np.int64) - (np.cumsum(counts) - counts)[cc[order]]
        local += self.conv_count[cc]
        self.conv_count += counts
        return local.astype(np.int32)

    def done(self) -> CodedLineage:
        """The coded lineage; ValueError on a memory id repeated within a conversation."""
        sizes = self.conv_count
        conv_start = np.zeros(len(sizes) + 2, dtype=np.int64)
        np.cumsum(sizes, out=conv_start[1:-1])
        conv_start[-1] = conv_start[-2]  # the store-less conversation: no memory
        parts = [list(p) for p in self.parts]  # each column freed as soon as it is joined
        self.parts = []
        empty = (np.int32, np.int32, bool, bool, np.int32, np.int32, np.uint8, np.int32,
                 np.uint64)
        cols = []
        for i in range(9):
            cols.append(np.concatenate([p[i] for p in parts]) if parts else
                        np.zeros(0, dtype=empty[i]))
            for p in parts:
                p[i] = None
        del parts
        rc, local, raw_rows, can_rows, e_vocab, e_row, data, length, hashes = cols
        del cols
        code = (conv_start[rc] + local).astype(np.int32 if conv_start[-1] < 2**31 else np.int64)
        del local
        m = int(conv_start[-1])
        raw = np.zeros(m, dtype=bool)
        can = np.zeros(m, dtype=bool)
        raw[code] = raw_rows
        can[code] = can_rows
        del raw_rows, can_rows
        # the ids by code: their bytes stay in row order, their starts and hashes move
        by_code = np.empty(m, dtype=np.int64)
        by_code[code] = np.cumsum(length, dtype=np.int64) - length
        id_len = np.empty(m, dtype=np.int32)
        id_len[code] = length
        del length
        id_hash = np.empty(m, dtype=np.uint64)
        id_hash[code] = hashes
        del hashes
        ids, repeated = IdTable.build(data, by_code, id_len, conv_start, id_hash)
        del by_code, id_len, id_hash
        if repeated.size:
            c = int(ids.conv_of(repeated[:1])[0])
            conv = next(k for k, v in self.convs.items() if v == c)
            raise ValueError(f"memory id repeated in conversation {conv!r}")
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
        return CodedLineage(self.convs, conv_start, ids, self.vocab, raw, can, key, mem,
                            self.n_rows)


def _np(buf: array, dtype: type) -> np.ndarray:
    return np.frombuffer(buf, dtype=dtype) if len(buf) else np.zeros(0, dtype=dtype)


@_then_release_heap
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


def _code_file(path: Path, columnar: bool, new_coder: Callable[[], Any],
               arrow_batches: Callable[[Path], Any], column_batches: Callable[[Path], Any],
               add_columns: Callable[[Any, Any], None], careful_read: Callable[[Path], Any]
               ) -> Any:
    """Code a lineage or gold file with its coder: from pyarrow's record batches when pyarrow is
    installed and `columnar`, else (or when pyarrow's reading finds anything Unusual) from the
    orjson column batches. A repeated id (the coder's ValueError) is re-read by the careful
    reader, which raises the InputError that names its line."""
    coder = None
    if columnar and arrow_available():
        try:
            coder = new_coder()
            for batch in arrow_batches(path):
                coder.add_arrow(batch)
            release_arrow_memory()
        except Unusual:
            coder = None
    if coder is None:
        coder = new_coder()
        for cols in column_batches(path):
            add_columns(coder, cols)
    try:
        return coder.done()
    except ValueError:
        careful_read(path)
        raise


@_then_release_heap
@_no_gc
def read_coded_lineage(path: str | Path, columnar: bool = True) -> CodedLineage:
    """Read and code a lineage file batch by batch, never holding its rows as objects (with
    pyarrow, when installed and `columnar`, else orjson; anything pyarrow leaves aside is read
    by the orjson reading). InputError (through read_lineage, which names the line) on any
    defect."""
    return _code_file(Path(path), columnar, LineageCoder, iter_lineage_arrow, iter_lineage_columns,
                      lambda coder, cols: coder.add(cols.conversations, cols.memory_ids,
                                                    cols.sources, cols.raw, cols.canonical),
                      read_lineage)  # read_lineage names the repeated id's line


@dataclass
class CodedGold:
    """Gold queries coded against one store: the query ids as bytes (an IdTable whose entries
    are the gold indices, all of conversation 0; no Python object per query), conversation
    codes, category codes and anchor keys (CSR)."""

    ids: IdTable  # entry = gold index (gold order)
    conv: np.ndarray  # (G,) conversation code (CodedLineage.conv_code)
    category_code: np.ndarray  # (G,) index into category_names
    category_names: list[str]
    anchor_off: np.ndarray  # (G + 1,) query g's anchor keys are anchor_key[off[g]:off[g + 1]]
    anchor_key: np.ndarray  # anchors that some memory derives from, one per (query, anchor)

    @property
    def n(self) -> int:
        return int(self.ids.length.size)

    def rows(self, qids: Sequence[str]) -> np.ndarray:
        """The gold index of each query id, -1 where gold has no such query."""
        data, start, length = utf8_columns(qids)
        return self.ids.lookup(np.zeros(length.size, dtype=np.int64), data, start, length)

    def query_ids(self, rows: np.ndarray) -> list[str]:
        return self.ids.strings(rows)

    def categories_of(self, rows: np.ndarray) -> list[str]:
        names = self.category_names
        return [names[c] for c in self.category_code[rows].tolist()]

    @functools.cached_property
    def qids(self) -> list[str]:
        """The query ids in gold order (built on demand)."""
        return self.ids.strings()

    @functools.cached_property
    def index(self) -> dict[str, int]:
        """Query id -> gold index (built on demand; the scoring uses `rows`)."""
        return dict(zip(self.qids, range(self.n)))

    @functools.cached_property
    def categories(self) -> list[str]:
        return self.categories_of(np.arange(self.n))


class GoldCoder:
    def __init__(self, lineage: CodedLineage) -> None:
        self.lineage = lineage
        self.n = 0
        self.conv = array("i")
        self.cats = array("i")
        self.cat_code: dict[str, int] = {}
        self.q_of_anchor = array("q")
        self.anchor_key = array("q")
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # query ids' bytes

    def _query_ids(self, ids: tuple[np.ndarray, np.ndarray, np.ndarray]) -> int:
        """Keep a batch's query ids (bytes, lengths, hashes); returns the batch's first index."""
        data, start, length = ids
        self.parts.append((data, length.astype(np.int32),
                           key_hashes(np.zeros(length.size, dtype=np.int64), data, start,
                                      length)))
        q0 = self.n
        self.n += int(length.size)
        return q0

    def _categories(self, names: Sequence[str], idx: np.ndarray) -> None:
        codes = self.cat_code
        for c in names:
            codes.setdefault(c, len(codes))
        to_code = np.fromiter(map(codes.__getitem__, names), dtype=np.int32, count=len(names))
        self.cats.extend(to_code[idx].tolist() if idx.size else [])

    def add(self, qids: Sequence[str], convs: Sequence[str], anchors: Sequence[Sequence[str]],
            categories: Sequence[str]) -> None:
        cl = self.lineage
        q0 = self._query_ids(utf8_columns(qids))
        # a method call per distinct conversation, then one C-level dict lookup per query
        conv_codes = {c: cl.conv_code(c) for c in dict.fromkeys(convs)}
        cc = np.fromiter(map(conv_codes.__getitem__, convs), dtype=np.int64, count=len(convs))
        self.conv.extend(cc.astype(np.int32).tolist())
        names = list(dict.fromkeys(categories))
        where = {c: i for i, c in enumerate(names)}
        self._categories(names, np.fromiter(map(where.__getitem__, categories),
                                            dtype=np.int64, count=len(categories)))
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
        through pyarrow's dictionary encoding, the query ids taken as bytes)."""
        # pyarrow: imported where it is used (start-up time)
        import pyarrow.compute as pc

        def encoded(col: Any) -> tuple[list[str], np.ndarray]:
            enc = pc.dictionary_encode(col)
            return enc.dictionary.to_pylist(), enc.indices.to_numpy(
                zero_copy_only=False).astype(np.int64)

        cl = self.lineage
        n = batch.num_rows
        if n == 0:
            return
        q0 = self._query_ids(arrow_utf8_columns(batch.column("query_id")))
        names, idx = encoded(batch.column("conversation"))
        cc = np.fromiter(map(cl.conv_code, names), dtype=np.int64, count=len(names))[idx]
        self.conv.extend(cc.astype(np.int32).tolist())
        self._categories(*encoded(batch.column("category")))
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
        """The coded gold; ValueError on a query id read twice."""
        g = self.n
        parts, self.parts = self.parts, []
        data = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.uint8)
        length = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int32)
        hashes = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, np.uint64)
        del parts
        ids, repeated = IdTable.build(data, np.cumsum(length, dtype=np.int64) - length, length,
                                      np.array([0, g, g], dtype=np.int64), hashes)
        if repeated.size:
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
        return CodedGold(ids, _np(self.conv, np.int32).astype(np.int64),
                         _np(self.cats, np.int32).copy(), list(self.cat_code), off, key)


@_then_release_heap
@_no_gc
def code_gold(gold: Gold, lineage: CodedLineage) -> CodedGold:
    """Code gold queries held in memory (the same coder as read_coded_gold)."""
    gs = list(gold.queries.values())
    coder = GoldCoder(lineage)
    coder.add([g.query_id for g in gs], [g.conversation for g in gs], [g.anchors for g in gs],
              [g.category for g in gs])
    return coder.done()


@_then_release_heap
@_no_gc
def read_coded_gold(path: str | Path, lineage: CodedLineage, columnar: bool = True) -> CodedGold:
    """Read and code a gold file batch by batch (pyarrow when installed and `columnar`, else
    or for anything unusual orjson); InputError (through read_gold) on a defect."""
    return _code_file(Path(path), columnar, lambda: GoldCoder(lineage), iter_gold_arrow,
                      iter_gold_columns,
                      lambda coder, cols: coder.add(cols.query_ids, cols.conversations,
                                                    cols.anchors, cols.categories),
                      read_gold)  # read_gold names the repeated query's line


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
    mat = np.full(mat_idx.shape, -1, dtype=np.int64)
    mat[mask] = _pair_codes(np.repeat(conv, mask.sum(axis=1)), mat_idx[mask], vocab, lineage)
    return _finish_rows(qids, gidx, conv, mat, lengths, gold, dropped)


def _pair_codes(conv: np.ndarray, word: np.ndarray, vocab: Sequence[str],
                lineage: CodedLineage) -> np.ndarray:
    """The memory code of each (conversation code, vocab[word]) pair, -1 where the store has
    none; each distinct pair is looked up once."""
    n_vocab = max(len(vocab), 1)
    upair, inverse = np.unique(conv * n_vocab + word, return_inverse=True)
    data, start, length = utf8_columns(vocab)
    w = upair % n_vocab
    return lineage.ids.lookup(upair // n_vocab, data, start[w], length[w])[inverse.reshape(-1)]


class _LocalNumbers(dict):
    """One conversation's ids -> their number within the conversation, given on first sight:
    a known id is one C-level dict lookup, only a new one calls __missing__ (and the ids in
    number order are the dict's keys)."""

    def __missing__(self, key: str) -> int:
        n = self[key] = len(self)
        return n


def _code_matrix(id_lists: Sequence[Sequence[str]], conv: np.ndarray,
                 lineage: CodedLineage) -> tuple[np.ndarray, np.ndarray]:
    """(Q, longest) memory codes (-1: padding or not stored in the query's conversation), and
    the lengths."""
    q = len(id_lists)
    lengths = np.fromiter(map(len, id_lists), dtype=np.int64, count=q)
    width = int(lengths.max()) if q else 0
    # Each distinct (conversation, id) pair numbered in one pass, through a small dict per
    # conversation (one dict of every distinct id was 3-4x slower: its lookups miss the
    # cache), then all pairs looked up at once in the lineage's table.
    numbers = {c: _LocalNumbers() for c in np.unique(conv).tolist()}
    local = array("q")
    for d, ids in zip(map(numbers.__getitem__, conv.tolist()), id_lists):
        local.extend(map(d.__getitem__, ids))
    sizes = np.fromiter(map(len, numbers.values()), dtype=np.int64, count=len(numbers))
    base = np.zeros(int(conv.max()) + 1 if q else 0, dtype=np.int64)  # conversation -> its
    base[list(numbers)] = np.cumsum(sizes) - sizes  # first pair number
    pair_conv = np.repeat(np.fromiter(numbers, dtype=np.int64, count=len(numbers)), sizes)
    pair_id = list(chain.from_iterable(numbers.values()))
    del numbers
    if pair_id:
        word = _np(local, np.int64) + np.repeat(base[conv], lengths)
        data, start, length = utf8_columns(pair_id)
        codes = lineage.ids.lookup(pair_conv, data, start, length)[word]
    else:
        codes = np.zeros(0, dtype=np.int64)
    if q and codes.size == q * width:  # every trace is full: no padding mask needed
        return codes.reshape(q, width), lengths
    mat = np.full((q, width), -1, dtype=np.int64)
    mat[np.arange(width)[None, :] < lengths[:, None]] = codes
    return mat, lengths


def code_queries(run: TraceRun, gold: Gold | CodedGold, lineage: CodedLineage,
                 qids: Sequence[str], k: int) -> CodedQueries:
    """Integer-code the traces and gold anchors of `qids` (each must have a trace in `run`)."""
    cg = gold if isinstance(gold, CodedGold) else code_gold(gold, lineage)
    gidx = cg.rows(qids)
    if (gidx < 0).any():
        raise KeyError(qids[int(np.flatnonzero(gidx < 0)[0])])
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


def eligible_pairs(ts: TargetSets, lineage: CodedLineage,
                   target: str) -> tuple[np.ndarray, np.ndarray]:
    """The (query index, memory code) pairs eligible under `target`, by query then code."""
    sel = {"src": np.ones(ts.keys.size, dtype=bool), "raw": ts.raw, "can": ts.can}[target]
    return np.divmod(ts.keys[sel], lineage.n_mem)


def eligible_ids(cq: CodedQueries, ts: TargetSets, lineage: CodedLineage,
                 target: str) -> dict[str, list[str]]:
    """Query id -> eligible memory ids under `target` (write_trec_qrels' input)."""
    q_idx, m_idx = eligible_pairs(ts, lineage, target)
    if not q_idx.size:
        return {}
    ids = lineage.ids.strings(m_idx)
    # keys are sorted, so each query's ids are one slice (query order, then memory code)
    cuts = (np.flatnonzero(q_idx[1:] != q_idx[:-1]) + 1).tolist()
    starts, ends = [0, *cuts], [*cuts, len(ids)]
    return {cq.qids[q]: ids[a:b] for q, a, b in zip(q_idx[starts].tolist(), starts, ends)}
