"""TIAP plain-file inputs: ranked traces, lineage, gold; and TREC export for re-checking.

Formats (all UTF-8; JSONL = one JSON object per line, blank lines ignored):

traces (JSONL), one line per query:
    {"query_id": "q1", "k": 60, "results": [{"id": "m7", "score": 3.2}, ...]}
  or, for a query whose system call failed (an error: counted, never scored):
    {"query_id": "q1", "error": "timeout: ..."}
  Results are in rank order (best first): the list order IS the ranking, scores are kept but
  never re-sorted, so equal scores keep the order the system gave. A repeated memory id keeps its
  first (best) rank; the repeats are counted and reported. `k` is optional (default: the number
  of results).
traces (TREC run format), one line per retrieved id: `qid Q0 docid rank score tag`. As trec_eval
  (and pytrec_eval) does, the rank column is ignored: ids are ordered per query by score
  (descending), ties (equal score) by docid descending (byte order, trec_eval's strcmp), whatever
  the order of the lines.
traces (Parquet, a file ending in .parquet; needs pyarrow, the `parquet` extra), one row per
  query: query_id (string), results (list<struct<id: string, score: double>>, null only on a
  failed query), k (integer, optional: null = the number of results), error (string,
  optional), conversation and meta (optional, ignored). Read by record batch.
lineage (JSONL), one line per stored memory (the LineageRecord of model.py plus a scope):
    {"conversation": "conv-26", "memory_id": "m7", "sources": ["D1:3"], "raw": false,
     "canonical": true, "text": "..."}
  Memory ids and anchors are scoped by `conversation` (default ""): a store is per conversation,
  and LoCoMo turn ids repeat across conversations.
gold (JSONL), one line per query:
    {"query_id": "q1", "conversation": "conv-26", "anchors": ["D1:3", "D2:8"],
     "category": "4", "question": "...", "answer": "...", "anchor_texts": {"D1:3": "..."}}
  `anchors` is s(q), the source evidence; `question`, `answer` and `anchor_texts` are used only
  by the contested-credit extraction.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import numpy as np
import orjson
from pydantic import ValidationError

from twistbench.errors import InputError, decode_utf8, load_json, pydantic_to_input_error
from twistbench.model import GoldQuery, LineageRow

# ---------------------------------------------------------------------------------------------
# Records


@dataclass
class Trace:
    """One query's ranked output: memory ids best first, their scores, and the cutoff k."""

    query_id: str
    ids: list[str]
    scores: list[float]
    k: int


@dataclass
class TraceRun:
    """All traces of one run (one system / store configuration)."""

    name: str
    path: str
    k: int
    traces: dict[str, Trace]
    errors: dict[str, str] = field(default_factory=dict)  # query id -> error message
    duplicates_dropped: int = 0


@dataclass
class Lineage:
    """The lineage contract of one store: rows keyed by (conversation, memory id)."""

    path: str
    rows: list[LineageRow]

    def by_key(self) -> dict[tuple[str, str], LineageRow]:
        return {(r.conversation, r.memory_id): r for r in self.rows}


@dataclass
class Gold:
    path: str
    queries: dict[str, GoldQuery]  # in file order


# ---------------------------------------------------------------------------------------------
# Reading


@contextlib.contextmanager
def bulk_build() -> Iterator[None]:
    """Python's cyclic garbage collector paused while many acyclic records are built.

    Reading and rescoring create millions of small objects and no cycles; each allocation
    burst triggered full collections over everything already alive, 60% of the time of
    reading 20,000 queries x 60 from files and rescoring them (4.5-5.2 s with it, 1.7-1.9 s
    without, measured in one process). The collector is paused, not skipped: it runs again
    as soon as the block ends (it is process-wide, so other threads pause with it)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _open(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from exc


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) for every non-blank line; InputError when the file can't be read."""
    with _open(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = decode_utf8(raw, str(path), f"line {lineno}")
            if line.strip():
                yield lineno, line


def _raw_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with _open(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            if raw and not raw.isspace():
                yield lineno, raw


def _parse(path: Path, lineno: int, raw: bytes) -> dict[str, Any] | None:
    """One line's object (orjson, else the stdlib); None for a line of Unicode whitespace.

    Lines are parsed by orjson (0.50 of the stdlib's parsing time on 100,000 queries x 60:
    benchmarks/bench_trace_io.py, which measured pyarrow at 0.81 and polars at 1.20 once their
    columns become the lists the rescoring reads). A line orjson refuses is parsed again by the
    stdlib, so what is accepted (NaN, lone surrogates) and every error message are the stdlib
    reader's; one difference: orjson reads an integer beyond 64 bits as a float, so such a `k`
    is refused as not an integer."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        if not decode_utf8(raw, str(path), f"line {lineno}").strip():
            return None  # Unicode whitespace only: blank, as the text reader saw it
        obj = load_json(raw, str(path), f"line {lineno}", expected="one JSON object per line")
    return _object(path, lineno, obj)


_M = TypeVar("_M", LineageRow, GoldQuery)
_C = TypeVar("_C")  # a batch's columns (LineageColumns, GoldColumns)


def _records(path: Path, model: type[_M],
             lines: Iterable[tuple[int, bytes]] | None = None) -> Iterator[tuple[int, _M]]:
    """(line number, record) per non-blank line (of the file, or of `lines`). pydantic parses
    and validates each line in one step (model_validate_json: a tenth of orjson +
    model_validate's time for gold rows); a line it refuses goes through the reader above and
    model_validate, so a line that only the Python reading accepts (a lone surrogate in a
    string) reads as before, and every error is the one it always was."""
    for lineno, raw in _raw_lines(path) if lines is None else lines:
        if not raw or raw.isspace():
            continue
        try:
            yield lineno, model.model_validate_json(raw)
            continue
        except ValidationError:
            pass
        obj = _parse(path, lineno, raw)
        if obj is None:
            continue
        try:
            yield lineno, model.model_validate(obj)
        except ValidationError as exc:
            raise pydantic_to_input_error(str(path), f"line {lineno}", exc) from exc


_BATCH_BYTES = 1 << 22  # lines read per batch by the column readers: about 4 MB


def _line_batches(path: Path) -> Iterator[tuple[int, list[bytes]]]:
    """(number of the batch's first line, its lines) of about _BATCH_BYTES each."""
    lineno = 1
    with _open(path) as fh:
        while True:
            batch = fh.readlines(_BATCH_BYTES)
            if not batch:
                return
            yield lineno, batch
            lineno += len(batch)


def _types(values: Iterable[Any]) -> set[type]:
    return set(map(type, values))


# Bytes of JSONL per block of pyarrow's JSON readers. Its reader holds about 37 times its block
# while parsing (a 16 MiB block: 590 MB of its pool for a 450 MB lineage file), and the streaming
# reader reads blocks ahead while the caller works (16 MB blocks held ~250 MB of a 335 MB trace
# file, 2 MB blocks ~70 MB); 2 MiB blocks read as fast (4.1 s vs 4.3 s; measured, pyarrow 26).
JSON_BLOCK = 1 << 21
_LINEAGE_FIELDS = frozenset({"conversation", "memory_id", "sources", "raw", "canonical", "text"})
_BOOL = {bool}


def _checked_column_batches(path: Path, model: type[_M],
                            fast: Callable[[list[dict[str, Any]]], _C | None],
                            careful: Callable[[list[_M]], _C]) -> Iterator[_C]:
    """Column batches of a JSONL file: each batch parsed by orjson and handed to `fast`, which
    takes its columns by C-level maps and checks their types column-wise (None: something
    unusual); a batch `fast` refuses, or orjson cannot parse, is read again line by line by
    pydantic (`_records`), which names the line and field of a defect, and `careful` takes
    the columns of its records."""
    loads = orjson.loads
    for first, batch in _line_batches(path):
        cols = None
        try:
            objs = list(map(loads, batch))
            if _types(objs) <= {dict}:
                cols = fast(objs)
        except (orjson.JSONDecodeError, KeyError, TypeError):
            pass
        if cols is None:
            cols = careful([r for _, r in _records(path, model, enumerate(batch, start=first))])
        yield cols


@dataclass
class LineageColumns:
    """Consecutive lineage rows as columns (what the scoring needs; the texts are not kept)."""

    conversations: list[str]
    memory_ids: list[str]
    sources: list[list[str]]
    raw: list[bool]
    canonical: list[bool]


def iter_lineage_columns(path: str | Path) -> Iterator[LineageColumns]:
    """A lineage file as column batches, every row checked as read_lineage checks it.

    Each batch is parsed by orjson line by line and its columns taken by C-level maps, then its
    types checked column-wise; a batch with anything unusual (a blank line, a line orjson
    refuses, a missing or extra field, a value of another type) is read again line by line
    as read_lineage reads it, which names the line and field of a defect and applies the same
    conversions. A memory id repeated within a conversation is found by the coding
    (targets.read_coded_lineage), which then names its line through read_lineage."""
    get_mid, get_src = operator.itemgetter("memory_id"), operator.itemgetter("sources")
    get_raw, get_can = operator.itemgetter("raw"), operator.itemgetter("canonical")
    get_conv = operator.methodcaller("get", "conversation", "")
    get_text = operator.methodcaller("get", "text", "")

    def fast(objs: list[dict[str, Any]]) -> LineageColumns | None:
        if not set().union(*objs) <= _LINEAGE_FIELDS:
            return None
        mids = list(map(get_mid, objs))
        srcs = list(map(get_src, objs))
        raw = list(map(get_raw, objs))
        can = list(map(get_can, objs))
        convs = list(map(get_conv, objs))
        if (_types(mids) <= _STR and _types(convs) <= _STR and _types(srcs) <= {list}
                and 0 not in map(len, srcs)
                and _types(chain.from_iterable(srcs)) <= _STR
                and _types(raw) <= _BOOL and _types(can) <= _BOOL
                and _types(map(get_text, objs)) <= _STR):
            return LineageColumns(convs, mids, srcs, raw, can)
        return None

    def careful(rows: list[LineageRow]) -> LineageColumns:
        return LineageColumns([r.conversation for r in rows], [r.memory_id for r in rows],
                              [r.sources for r in rows], [r.raw for r in rows],
                              [r.canonical for r in rows])

    return _checked_column_batches(Path(path), LineageRow, fast, careful)


def iter_lineage_arrow(path: str | Path) -> Iterator[Any]:
    """A lineage JSONL file as pyarrow record batches (one thread), every column checked;
    Unusual on anything the careful reading must see (a row pyarrow refuses, a null, an
    empty sources list, a field outside the lineage format)."""
    # pyarrow: imported where it is used (start-up time)
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    schema = pa.schema([("conversation", pa.string()), ("memory_id", pa.string()),
                        ("sources", pa.list_(pa.string())), ("raw", pa.bool_()),
                        ("canonical", pa.bool_()), ("text", pa.string())])
    try:
        reader = pj.open_json(Path(path), read_options=pj.ReadOptions(
            use_threads=False, block_size=JSON_BLOCK), parse_options=pj.ParseOptions(
            explicit_schema=schema, unexpected_field_behavior="error"))
    except (pa.ArrowInvalid, OSError) as exc:
        raise Unusual(str(exc)) from exc
    for batch in _arrow_batches(reader, pa):
        cols = {name: batch.column(name) for name in batch.schema.names}
        src = cols["sources"]
        # "text" and "conversation" may be absent (then null: their default), never null
        # beside a value in the same file, as a JSON null is not a text
        for name in ("conversation", "text"):
            c = cols[name]
            if c.null_count and c.null_count != len(c):
                raise Unusual(name)
        if (cols["memory_id"].null_count or src.null_count or cols["raw"].null_count
                or cols["canonical"].null_count or src.values.null_count
                or (len(src) and pc.min(pc.list_value_length(src)).as_py() == 0)):
            raise Unusual("null or empty")
        yield batch


_GOLD_FIELDS = frozenset({"query_id", "conversation", "anchors", "category", "question", "answer",
                          "anchor_texts"})
_AS_TEXT = {str, int, float, type(None)}  # GoldQuery turns int / float / None into text


def iter_gold_arrow(path: str | Path) -> Iterator[Any]:
    """A gold JSONL file as pyarrow record batches (one thread); Unusual on anything the
    careful reading must see: a row pyarrow refuses, any null (an absent field and a JSON null
    differ there), an empty query id, an integer category (LoCoMo's; GoldQuery turns it into
    text), anchor_texts other than an object of texts, a field outside the gold format."""
    # pyarrow: imported where it is used (start-up time)
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    schema = pa.schema([("query_id", pa.string()), ("conversation", pa.string()),
                        ("anchors", pa.list_(pa.string())), ("category", pa.string()),
                        ("question", pa.string()), ("answer", pa.string())])
    try:
        reader = pj.open_json(Path(path), read_options=pj.ReadOptions(
            use_threads=False, block_size=JSON_BLOCK), parse_options=pj.ParseOptions(
            explicit_schema=schema, unexpected_field_behavior="infer"))
    except (pa.ArrowInvalid, OSError) as exc:
        raise Unusual(str(exc)) from exc
    for batch in _arrow_batches(reader, pa):
        if not set(batch.schema.names) <= _GOLD_FIELDS:
            raise Unusual("fields")
        if "anchor_texts" in batch.schema.names:
            t = batch.schema.field("anchor_texts").type
            if not (pa.types.is_null(t) or pa.types.is_struct(t) and all(
                    pa.types.is_string(t.field(i).type) for i in range(t.num_fields))):
                raise Unusual("anchor_texts")
        if any(batch.column(i).null_count for i in range(batch.num_columns)
               if batch.schema.names[i] != "anchor_texts"):
            raise Unusual("null")
        if (batch.column("anchors").values.null_count
                or pc.any(pc.equal(batch.column("query_id"), "")).as_py()):
            raise Unusual("null anchor or empty query id")
        yield batch


@dataclass
class GoldColumns:
    """Consecutive gold rows as columns (what the scoring needs)."""

    query_ids: list[str]
    conversations: list[str]
    anchors: list[list[str]]
    categories: list[str]


def _as_text(v: Any) -> str:
    return v if type(v) is str else "" if v is None else str(v)


def iter_gold_columns(path: str | Path) -> Iterator[GoldColumns]:
    """A gold file as column batches, every row checked as read_gold checks it (the same
    batch-wise reading as iter_lineage_columns; a repeated query id is found by the coding)."""
    get_qid = operator.itemgetter("query_id")
    get_conv = operator.methodcaller("get", "conversation", "")
    get_anchors = operator.methodcaller("get", "anchors", [])
    get_cat = operator.methodcaller("get", "category", "")
    get_question = operator.methodcaller("get", "question", "")
    get_answer = operator.methodcaller("get", "answer", "")
    get_texts = operator.methodcaller("get", "anchor_texts", {})

    def fast(objs: list[dict[str, Any]]) -> GoldColumns | None:
        if not set().union(*objs) <= _GOLD_FIELDS:
            return None
        qids = list(map(get_qid, objs))
        convs = list(map(get_conv, objs))
        anchors = list(map(get_anchors, objs))
        cats = list(map(get_cat, objs))
        texts = list(map(get_texts, objs))
        if (_types(qids) <= _STR and "" not in qids and _types(convs) <= _STR
                and _types(anchors) <= {list}
                and _types(chain.from_iterable(anchors)) <= _STR
                and _types(cats) <= _AS_TEXT and bool not in _types(cats)
                and _types(map(get_question, objs)) <= _STR
                and _types(map(get_answer, objs)) <= _AS_TEXT
                and bool not in _types(map(get_answer, objs))
                and _types(texts) <= {dict}
                and _types(chain.from_iterable(texts)) <= _STR
                and _types(chain.from_iterable(map(dict.values, texts))) <= _STR):
            if not _types(cats) <= _STR:
                cats = list(map(_as_text, cats))
            return GoldColumns(qids, convs, anchors, cats)
        return None

    def careful(rows: list[GoldQuery]) -> GoldColumns:
        return GoldColumns([g.query_id for g in rows], [g.conversation for g in rows],
                           [g.anchors for g in rows], [g.category for g in rows])

    return _checked_column_batches(Path(path), GoldQuery, fast, careful)


def _object(path: Path, lineno: int, obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise InputError(str(path), "not a JSON object", where=f"line {lineno}",
                         expected="one JSON object per line")
    return obj


def run_name(path: Path) -> str:
    # A run folder written by `twist trace` holds traces.jsonl: name the run after the folder.
    if path.stem in ("traces", "run") and path.parent.name:
        return path.parent.name
    return path.stem


def read_traces(path: str | Path, name: str | None = None, fmt: str | None = None) -> TraceRun:
    """Read a trace file (JSONL, TREC run format or Parquet; chosen by `fmt`, else by the
    suffix .parquet or the content).

    A trace line with "error" is recorded in `errors` (excluded from every metric). Repeated
    memory ids within one query keep their first rank and are counted in `duplicates_dropped`.
    """
    path = Path(path)
    traces: dict[str, Trace] = {}
    errors: dict[str, str] = {}
    dropped = 0
    kmax = 0
    with bulk_build():
        for ch in iter_trace_chunks(path, fmt):
            for qid, ids, scores, k in zip(ch.qids, ch.ids, ch.scores, ch.ks):
                traces[qid] = Trace(qid, ids, scores, k)
            errors.update(ch.errors)
            dropped += ch.duplicates_dropped
            kmax = max(kmax, ch.kmax)
    return TraceRun(name or run_name(path), str(path), kmax, traces, errors, dropped)


@dataclass
class TraceChunk:
    """Consecutive queries of a trace file, checked: per ok query its ids (cut at its k, a
    repeated id dropped unless `deduped` is False), scores and k; failed queries in `errors`."""

    qids: list[str]
    ids: list[list[str]]
    scores: list[list[float]]
    ks: list[int]
    errors: dict[str, str]
    duplicates_dropped: int
    kmax: int
    deduped: bool = True


TRACE_FORMATS = ("jsonl", "trec", "parquet")
CHUNK_QUERIES = 10_000


def trace_format(path: Path, fmt: str | None = None) -> str:
    """The format of a trace file: `fmt` when given, .parquet by suffix, else by content."""
    if fmt is None:
        fmt = "parquet" if path.suffix.lower() == ".parquet" else _sniff(path)
    if fmt not in TRACE_FORMATS:
        raise InputError(str(path), f"unknown trace format {fmt!r}",
                         expected="'jsonl', 'trec' or 'parquet'")
    return fmt


def iter_trace_chunks(path: str | Path, fmt: str | None = None,
                      chunk_queries: int = CHUNK_QUERIES,
                      dedupe: bool = True) -> Iterator[TraceChunk]:
    """A trace file as chunks of at most `chunk_queries` queries, read as it streams (JSONL
    line by line, Parquet by record batch; a TREC run is read whole, since one query's lines
    may be anywhere in it). InputError, naming the line or row and the field, on a bad record:
    the first one in file order, whatever the chunk size. With dedupe=False a repeated id is
    left in place for the caller to drop (the scoring finds repeats on integer codes)."""
    path = Path(path)
    fmt = trace_format(path, fmt)
    if chunk_queries < 1:
        raise ValueError(f"chunk_queries {chunk_queries} (expected >= 1)")
    if fmt == "jsonl":
        yield from _jsonl_chunks(path, chunk_queries, dedupe)
    elif fmt == "parquet":
        yield from _parquet_chunks(path, chunk_queries, dedupe)
    else:
        run = _read_traces_trec(path)
        ts = list(run.traces.values())
        for lo in range(0, max(len(ts), 1), chunk_queries):
            part = ts[lo:lo + chunk_queries]
            yield TraceChunk([t.query_id for t in part], [t.ids for t in part],
                             [t.scores for t in part], [t.k for t in part], {},
                             run.duplicates_dropped if lo == 0 else 0,
                             max((t.k for t in part), default=0))


_STR = {str}
_TRACE_FIELDS = frozenset({"query_id", "k", "results", "error", "conversation", "meta"})
_ID = operator.itemgetter("id")
_SCORE = operator.itemgetter("score")
_NUMBER_TYPES = frozenset({float, int})


class _Chunk:
    """A TraceChunk being filled, with the records it came from (to name a bad one)."""

    def __init__(self, dedupe: bool) -> None:
        self.dedupe = dedupe
        self.records: list[tuple[int, Any]] = []  # (line or row number, the record's object)
        self.qids: list[str] = []
        self.ids: list[list[str]] = []
        self.scores: list[list[float]] = []
        self.ks: list[int] = []
        self.errors: dict[str, str] = {}
        self.dropped = 0

    def __len__(self) -> int:
        return len(self.qids) + len(self.errors)

    def add(self, qid: str, ids: list[str], scores: list[float], k: int) -> None:
        if k < len(ids):
            ids, scores = ids[:k], scores[:k]
        if self.dedupe and len(set(ids)) != len(ids):
            ids, scores, d = _dedupe(ids, scores)
            self.dropped += d
        self.qids.append(qid)
        self.ids.append(ids)
        self.scores.append(scores)
        self.ks.append(k)

    def close(self, path: Path, check: Any) -> TraceChunk:
        """The chunk after the column-wide checks of every id and score; when one fails,
        `check(path, number, obj)` of each record in order raises the first record's error."""
        ok = (set(map(type, chain.from_iterable(self.ids))) <= _STR
              and "" not in chain.from_iterable(self.ids))
        score_types = set(map(type, chain.from_iterable(self.scores))) if ok else set()
        if ok and not score_types <= _NUMBER_TYPES:
            ok = False
        if ok and score_types:
            try:  # a sum of finite floats is finite unless it overflows: then each is checked
                ok = math.isfinite(sum(map(sum, self.scores))) or bool(np.isfinite(
                    np.fromiter(chain.from_iterable(self.scores), dtype=np.float64)).all())
            except OverflowError:  # an integer beyond a float's range
                ok = False
        if not ok:
            for number, obj in self.records:
                check(path, number, obj)
            raise AssertionError("a chunk failed a check that none of its records fails")
        if score_types - {float}:
            self.scores = [[float(v) for v in sc] for sc in self.scores]
        return TraceChunk(self.qids, self.ids, self.scores, self.ks, self.errors, self.dropped,
                          max(self.ks, default=0), self.dedupe)


def _jsonl_chunks(path: Path, size: int, dedupe: bool) -> Iterator[TraceChunk]:
    """JSONL trace lines in chunks. Each line is parsed by orjson and its columns taken by C-level
    maps; the checks of ids and scores run once per chunk over all of its values. Anything
    unusual on a line (a type, a field, a line orjson refuses) goes through `_trace_record`, the
    careful reading of one line, which names the line and field of a defect."""
    seen: set[str] = set()
    ch = _Chunk(dedupe)
    loads = orjson.loads
    fields = _TRACE_FIELDS
    with _open(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                obj = loads(raw)
            except orjson.JSONDecodeError:
                if raw.isspace():
                    continue
                obj = _parse(path, lineno, raw)
                if obj is None:
                    continue
            rec = None
            if type(obj) is dict and obj.keys() <= fields:
                qid = obj.get("query_id")
                results = obj.get("results")
                if (type(qid) is str and qid and not obj.get("error")
                        and type(results) is list):
                    try:
                        ids = list(map(_ID, results))
                        scores = list(map(_SCORE, results))
                    except (KeyError, TypeError):
                        pass
                    else:
                        k = obj.get("k", len(ids))
                        if type(k) is int and k >= 0:
                            rec = (qid, ids, scores, k, None)
            if rec is None:
                rec = _trace_record(path, lineno, obj)
            qid = rec[0]
            if qid in seen:
                raise InputError(str(path), f"query {qid!r} appears twice",
                                 where=f"line {lineno}", field="query_id",
                                 expected="one line per query")
            seen.add(qid)
            ch.records.append((lineno, obj))
            if rec[4] is not None:
                ch.errors[qid] = rec[4]
            else:
                try:
                    ch.add(qid, rec[1], rec[2], rec[3])
                except TypeError:  # an unhashable id: the careful reading names it
                    _trace_record(path, lineno, obj)
                    raise
            if len(ch) >= size:
                yield ch.close(path, _trace_record)
                ch = _Chunk(dedupe)
    if len(ch) or not seen:
        yield ch.close(path, _trace_record)


def _trace_record(path: Path, lineno: int,
                  obj: Any) -> tuple[str, list[str], list[float], int, str | None]:
    """One trace line read carefully: (query id, ids, scores, k, None), or (query id, [], [],
    0, error message) for a failed query; InputError naming the line and field of a defect."""
    where = f"line {lineno}"
    if not isinstance(obj, dict):
        raise InputError(str(path), "not a JSON object", where=where,
                         expected="one JSON object per line")
    qid = obj.get("query_id")
    if not isinstance(qid, str) or not qid:
        raise InputError(str(path), "missing or empty query id", where=where,
                         field="query_id", expected="a non-empty string")
    unknown = set(obj) - _TRACE_FIELDS
    if unknown:
        raise InputError(str(path), f"unknown field(s) {sorted(unknown)}", where=where,
                         expected="query_id, k, results, error, conversation, meta")
    if obj.get("error"):
        return qid, [], [], 0, str(obj["error"])
    results = obj.get("results")
    if not isinstance(results, list):
        raise InputError(str(path), "results is not a list", where=where, field="results",
                         expected='a list of {"id": str, "score": number}')
    ids, scores = _results(path, where, results)
    k = obj.get("k", len(ids))
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise InputError(str(path), f"bad k {k!r}", where=where, field="k",
                         expected="a non-negative integer")
    return qid, ids, scores, k, None


@dataclass
class EncodedChunk:
    """Consecutive ok queries as dictionary-encoded columns (no Python object per id): query
    r's ids are vocab[ids[o_r : o_r + lengths[r]]], o = the running sum of lengths, each cut
    at the query's own k; repeats not yet dropped. Failed queries in `errors`."""

    qids: list[str]
    lengths: np.ndarray
    ids: np.ndarray  # int64 indices into vocab
    vocab: list[str]
    errors: dict[str, str]
    kmax: int
    scores: np.ndarray | None = None  # float64, aligned with ids (None: not read)
    ks: np.ndarray | None = None  # (Q,) each query's declared k (None: not read)
    vocab_arrow: Any = None  # vocab as pyarrow's string array, where it was read by pyarrow


class Unusual(Exception):
    """The columnar reading met something it leaves to the careful reading (which either
    names the defect or reads the record as it always did)."""


def _arrow_schema() -> Any:
    # pyarrow: imported where it is used (start-up time)
    import pyarrow as pa

    result_t = pa.list_(pa.struct([("id", pa.string()), ("score", pa.float64())]))
    return pa.schema([("query_id", pa.string()), ("k", pa.int64()), ("results", result_t),
                      ("error", pa.string())])


def arrow_available() -> bool:
    try:
        # pyarrow: imported where it is used (start-up time)
        import pyarrow.json  # noqa: F401
    except ImportError:
        return False
    return True


def release_arrow_memory() -> None:
    """Hand the memory pyarrow's allocator keeps for reuse back to the system (after a file is
    read: its batches are gone, and a large lineage must not leave its buffers in the peak)."""
    # pyarrow: imported where it is used (start-up time)
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def iter_encoded_chunks(path: str | Path, fmt: str | None = None,
                        chunk_queries: int = CHUNK_QUERIES) -> Iterator[EncodedChunk]:
    """A JSONL or Parquet trace file as EncodedChunks, read by pyarrow (JSONL by pyarrow's
    streaming JSON reader on one thread, Parquet by record batch). Raises Unusual, before or
    after some chunks, on anything the careful readers must see (a record pyarrow refuses, a
    field outside the trace format, a null or empty id or query id, a non-finite score): the
    caller then reads the file with iter_trace_chunks. A query id read twice is for the caller
    to find (score_chunks keeps a flag per gold query rather than every id read)."""
    # pyarrow: imported where it is used (start-up time)
    import pyarrow as pa
    import pyarrow.compute as pc

    path = Path(path)
    fmt = trace_format(path, fmt)
    if fmt == "jsonl":
        # pyarrow: imported where it is used (start-up time)
        import pyarrow.json as pj

        try:
            reader = pj.open_json(path, read_options=pj.ReadOptions(
                use_threads=False, block_size=JSON_BLOCK), parse_options=pj.ParseOptions(
                explicit_schema=_arrow_schema(), unexpected_field_behavior="infer"))
        except (pa.ArrowInvalid, OSError) as exc:
            raise Unusual(str(exc)) from exc
        batches = _arrow_batches(reader, pa)
    elif fmt == "parquet":
        # pyarrow: imported where it is used (start-up time)
        import pyarrow.parquet as pq

        try:
            # pre_buffer (on by default) kept the read ranges of every row group read so
            # far: 300 MB of a 1,000,000-query file held to the end of the reading
            pf = pq.ParquetFile(path, pre_buffer=False)
        except (pa.ArrowInvalid, OSError) as exc:
            raise Unusual(str(exc)) from exc
        batches = _arrow_batches(pf.iter_batches(batch_size=chunk_queries), pa)
    else:
        raise Unusual("a TREC run is read by the careful reader")
    for batch in batches:
        names = set(batch.schema.names)
        if not names <= _TRACE_FIELDS or "query_id" not in names:
            raise Unusual("columns")
        for lo in range(0, batch.num_rows, chunk_queries):
            yield _encode_batch(batch.slice(lo, chunk_queries), pa, pc, null_k=fmt == "parquet")


def _arrow_batches(reader: Iterable[Any], pa: Any) -> Iterator[Any]:
    it = iter(reader)
    while True:
        try:
            batch = next(it)
        except StopIteration:
            return
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
            raise Unusual(str(exc)) from exc
        yield batch


def _encode_batch(batch: Any, pa: Any, pc: Any, null_k: bool) -> EncodedChunk:
    """One batch encoded; null_k: a null k means the number of results (Parquet; in JSONL an
    absent k and "k": null differ, so there the careful reading takes any null k)."""
    names = batch.schema.names
    n = batch.num_rows
    qcol = batch.column("query_id")
    types = pa.types
    if not types.is_string(qcol.type) or qcol.null_count or pc.any(pc.equal(qcol, "")).as_py():
        raise Unusual("query_id")
    qids = qcol.to_pylist()
    errors: dict[str, str] = {}
    failed = np.zeros(n, dtype=bool)
    if "error" in names:
        ecol = batch.column("error")
        if not types.is_string(ecol.type):
            raise Unusual("error")
        failed = pc.fill_null(pc.not_equal(ecol, ""), False).to_numpy(zero_copy_only=False)
        if failed.any():
            msgs = ecol.to_pylist()
            errors = {qids[i]: msgs[i] for i in np.flatnonzero(failed).tolist()}
    if "results" not in names:
        if not failed.all():
            raise Unusual("no results")
        return EncodedChunk([], np.zeros(0, np.int64), np.zeros(0, np.int64), [], errors, 0)
    res = batch.column("results")
    if not (types.is_list(res.type) and res.type.value_type.equals(
            _arrow_schema().field("results").type.value_type)):
        raise Unusual("results type")
    valid = res.is_valid().to_numpy(zero_copy_only=False)
    if (valid & failed).any() or not (valid | failed).all():
        raise Unusual("results beside an error, or no results")
    ok = ~failed
    if failed.any():
        res = res.filter(pa.array(ok))
        qids = [q for q, f in zip(qids, failed.tolist()) if not f]
    lengths = pc.list_value_length(res).to_numpy(zero_copy_only=False).astype(np.int64)
    if "k" in names:
        kcol = batch.column("k")
        if not types.is_integer(kcol.type):
            raise Unusual("k type")
        if failed.any():
            kcol = kcol.filter(pa.array(ok))
        if kcol.null_count and not null_k:
            raise Unusual("k null or absent")
        ks = pc.fill_null(kcol, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        if (ks < -1).any() or kcol.null_count != int((ks == -1).sum()):
            raise Unusual("k")
        ks = np.where(ks == -1, lengths, ks)
    else:
        ks = lengths
    id_col, score_col = res.flatten().flatten()
    if id_col.null_count or score_col.null_count or pc.any(pc.equal(id_col, "")).as_py():
        raise Unusual("id or score")
    scores = score_col.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    if not np.isfinite(scores).all():
        raise Unusual("score")
    enc = pc.dictionary_encode(id_col)
    idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    cut = np.minimum(lengths, ks)
    if (cut < lengths).any():  # keep each trace's first k ids
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        keep = np.repeat(starts, cut) + _ranks(cut)
        idx, scores = idx[keep], scores[keep]
    return EncodedChunk(qids, cut, idx, enc.dictionary.to_pylist(), errors,
                        int(ks.max()) if ks.size else 0, scores, ks, enc.dictionary)


def encoded_traces(ch: EncodedChunk, wanted: set[str] | None = None) -> Iterator[Trace]:
    """The traces of an EncodedChunk as read_traces reads them: ids as strings, each cut at
    its k, a repeated id dropped (the first rank and its score kept). wanted: only these
    queries' traces (the others' ids are never made strings)."""
    ends = np.cumsum(ch.lengths)
    ks = ch.ks.tolist() if ch.ks is not None else ch.lengths.tolist()
    scores = ch.scores if ch.scores is not None else np.full(ch.ids.size, math.nan)
    if wanted is not None:
        for i in [i for i, q in enumerate(ch.qids) if q in wanted]:
            lo, hi = int(ends[i] - ch.lengths[i]), int(ends[i])
            row = [ch.vocab[j] for j in ch.ids[lo:hi].tolist()]
            yield _trace(ch.qids[i], row, scores[lo:hi].tolist(), ks[i])
        return
    ids = np.asarray(ch.vocab, dtype=object)[ch.ids].tolist() if ch.ids.size else []
    score_list = scores.tolist()
    lo = 0
    for q, hi, k in zip(ch.qids, ends.tolist(), ks):
        yield _trace(q, ids[lo:hi], score_list[lo:hi], k)
        lo = hi


def _trace(qid: str, ids: list[str], scores: list[float], k: int) -> Trace:
    if len(set(ids)) != len(ids):
        ids, scores, _ = _dedupe(ids, scores)
    return Trace(qid, ids, scores, k)


def _ranks(lengths: np.ndarray) -> np.ndarray:
    """0 .. len - 1 for each length, concatenated."""
    total = int(lengths.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def _parquet_chunks(path: Path, size: int, dedupe: bool) -> Iterator[TraceChunk]:
    """Parquet trace rows by record batch (see the README's trace formats for the schema)."""
    try:
        # pyarrow: imported where it is used (start-up time)
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise InputError(str(path), "reading Parquet traces needs pyarrow",
                         expected="pyarrow (a twistbench dependency): pip install pyarrow"
                         ) from exc
    try:
        pf = pq.ParquetFile(path, pre_buffer=False)  # one row group's bytes at a time
    except OSError as exc:
        raise InputError(str(path), f"cannot read as Parquet: {exc}",
                         expected="a Parquet file of trace rows") from exc
    schema = pf.schema_arrow
    _check_parquet_schema(path, schema, pa)
    cols = [c for c in ("query_id", "k", "results", "error") if c in schema.names]
    seen: set[str] = set()
    row0 = 0
    ch = _Chunk(dedupe)
    for batch in pf.iter_batches(batch_size=size, columns=cols):
        n = batch.num_rows
        qids = batch.column("query_id").to_pylist()
        ks = batch.column("k").to_pylist() if "k" in cols else [None] * n
        errs = batch.column("error").to_pylist() if "error" in cols else [None] * n
        res = batch.column("results") if "results" in cols else None
        if res is not None:
            offsets = res.offsets.to_numpy().astype(np.int64)  # into res.values
            values = res.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
            offsets -= offsets[0]
            id_col, score_col = values.flatten()
            valid = res.is_valid().to_numpy(zero_copy_only=False)
            sc = score_col.to_numpy(zero_copy_only=False).astype(np.float64)
            if (id_col.null_count > 0 or bool(pc.any(pc.equal(id_col, "")).as_py())
                    or score_col.null_count > 0 or not bool(np.isfinite(sc).all())):
                _parquet_bad_result(path, row0, valid, offsets, id_col.to_pylist(),
                                    score_col.to_pylist())
            flat_ids = id_col.to_pylist()
            flat_scores = sc.tolist()
        for i in range(n):
            where = f"row {row0 + i + 1}"
            qid = qids[i]
            if not qid:
                raise InputError(str(path), "missing or empty query id", where=where,
                                 field="query_id", expected="a non-empty string")
            if qid in seen:
                raise InputError(str(path), f"query {qid!r} appears twice", where=where,
                                 field="query_id", expected="one row per query")
            seen.add(qid)
            if errs[i]:
                ch.errors[qid] = errs[i]
            elif res is None or not valid[i]:
                raise InputError(str(path), "results is null", where=where, field="results",
                                 expected="a list of {id, score}, or an error")
            else:
                lo, hi = int(offsets[i]), int(offsets[i + 1])
                k = ks[i]
                if k is None:
                    k = hi - lo
                elif k < 0:
                    raise InputError(str(path), f"bad k {k!r}", where=where, field="k",
                                     expected="a non-negative integer")
                ch.add(qid, flat_ids[lo:hi], flat_scores[lo:hi], k)
            if len(ch) >= size:
                yield ch.close(path, _no_check)
                ch = _Chunk(dedupe)
        row0 += n
    if len(ch) or not seen:
        yield ch.close(path, _no_check)


def _no_check(path: Path, number: int, obj: Any) -> None:
    """Parquet values were checked column-wise before the chunk was filled."""


def _check_parquet_schema(path: Path, schema: Any, pa: Any) -> None:
    expected = ("query_id: string; results: list<struct<id: string, score: double>> "
                "(float or integer scores allowed); k: integer (optional); error: string "
                "(optional)")
    types = pa.types

    def bad(field: str, what: str) -> InputError:
        return InputError(str(path), what, where="schema", field=field, expected=expected)

    names = set(schema.names)
    unknown = names - _TRACE_FIELDS
    if unknown:
        raise bad(sorted(unknown)[0], f"unknown column(s) {sorted(unknown)}")
    if "query_id" not in names or not (types.is_string(schema.field("query_id").type)
                                       or types.is_large_string(schema.field("query_id").type)):
        raise bad("query_id", "no string column query_id")
    if "k" in names and not types.is_integer(schema.field("k").type):
        raise bad("k", f"k is {schema.field('k').type}")
    if "error" in names and not types.is_string(schema.field("error").type):
        raise bad("error", f"error is {schema.field('error').type}")
    if "results" in names:
        t = schema.field("results").type
        ok = types.is_list(t) and types.is_struct(t.value_type)
        if ok:
            st = t.value_type
            fields = {st.field(j).name: st.field(j).type for j in range(st.num_fields)}
            ok = (set(fields) == {"id", "score"} and types.is_string(fields["id"])
                  and (types.is_floating(fields["score"]) or types.is_integer(fields["score"])))
        if not ok:
            raise bad("results", f"results is {t}")


def _parquet_bad_result(path: Path, row0: int, valid: np.ndarray, offsets: np.ndarray,
                        ids: list[Any], scores: list[Any]) -> None:
    """InputError naming the row and position of the first null or empty id or non-finite
    score of a batch (a null row's leftover values are never read)."""
    for i in range(len(valid)):
        if not valid[i]:
            continue
        for pos in range(int(offsets[i + 1] - offsets[i])):
            j = int(offsets[i]) + pos
            if not ids[j] or not _is_number(scores[j]):
                raise InputError(str(path), f"bad result at position {pos}",
                                 where=f"row {row0 + i + 1}", field=f"results[{pos}]",
                                 expected="{id: non-empty string, score: finite number}")


def write_traces_parquet(path: str | Path, chunks: Iterable[TraceRun | TraceChunk],
                         row_group_queries: int = CHUNK_QUERIES) -> int:
    """Write traces as Parquet (one row per query, a row group per `row_group_queries`), from
    runs or chunks given one after the other, so a large log never has to be in memory whole.
    Returns the number of rows."""
    # pyarrow: imported where it is used (start-up time)
    import pyarrow as pa
    import pyarrow.parquet as pq

    result_t = pa.list_(pa.struct([("id", pa.string()), ("score", pa.float64())]))
    schema = pa.schema([("query_id", pa.string()), ("k", pa.int64()), ("results", result_t),
                        ("error", pa.string())])
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with pq.ParquetWriter(path, schema) as writer:
        for part in chunks:
            if isinstance(part, TraceRun):
                ts = list(part.traces.values())
                qids = [t.query_id for t in ts] + list(part.errors)
                ks: list[int | None] = [t.k for t in ts] + [None] * len(part.errors)
                ids = [t.ids for t in ts]
                scores = [t.scores for t in ts]
                errs = [None] * len(ts) + list(part.errors.values())
            else:
                qids = part.qids + list(part.errors)
                ks = list(part.ks) + [None] * len(part.errors)
                ids, scores = part.ids, part.scores
                errs = [None] * len(part.qids) + list(part.errors.values())
            lens = np.fromiter(map(len, ids), dtype=np.int32, count=len(ids))
            offsets = np.concatenate(([0], np.cumsum(lens, dtype=np.int64))).astype(np.int32)
            n_err = len(qids) - len(ids)
            offsets = np.concatenate((offsets, np.full(n_err, offsets[-1], dtype=np.int32)))
            mask = np.concatenate((np.zeros(len(ids), bool), np.ones(n_err, bool)))
            values = pa.StructArray.from_arrays(
                [pa.array(list(chain.from_iterable(ids)), pa.string()),
                 pa.array(list(chain.from_iterable(scores)), pa.float64())], ["id", "score"])
            results = pa.ListArray.from_arrays(pa.array(offsets), values,
                                               mask=pa.array(mask))
            table = pa.table([pa.array(qids, pa.string()), pa.array(ks, pa.int64()), results,
                              pa.array(errs, pa.string())], schema=schema)
            writer.write_table(table, row_group_size=row_group_queries)
            n += len(qids)
    return n


def _sniff(path: Path) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    return "jsonl" if line.lstrip().startswith("{") else "trec"
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError:
        pass  # the reader names the line
    return "jsonl"


def _dedupe(ids: list[str], scores: list[float]) -> tuple[list[str], list[float], int]:
    seen: set[str] = set()
    out_i: list[str] = []
    out_s: list[float] = []
    for i, s in zip(ids, scores):
        if i in seen:
            continue
        seen.add(i)
        out_i.append(i)
        out_s.append(s)
    return out_i, out_s, len(ids) - len(out_i)


_INF = float("inf")


def _results(path: Path, where: str, results: list[Any]) -> tuple[list[str], list[float]]:
    """The ids and scores of a results list; InputError naming the first bad position."""
    ids, scores = [], []
    for pos, r in enumerate(results):
        if (not isinstance(r, dict) or not isinstance(r.get("id"), str) or not r["id"]
                or not _is_number(r.get("score"))):
            raise InputError(str(path), f"bad result at position {pos}", where=where,
                             field=f"results[{pos}]",
                             expected='{"id": non-empty string, "score": finite number}')
        ids.append(r["id"])
        scores.append(float(r["score"]))
    return ids, scores


def _is_number(v: Any) -> bool:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:  # an integer beyond a float's range
        return False


_WS = re.compile(r"\s+")


def _read_traces_trec(path: Path) -> TraceRun:
    rows: dict[str, list[tuple[float, str]]] = {}
    for lineno, line in _lines(path):
        parts = _WS.split(line.strip())
        if len(parts) != 6:
            raise InputError(str(path), f"{len(parts)} columns", where=f"line {lineno}",
                             expected="6 columns: qid Q0 docid rank score tag")
        qid, _q0, doc, _rank, score_s, _tag = parts  # the rank column is ignored, as in trec_eval
        try:
            score = float(score_s)
        except ValueError as exc:
            raise InputError(str(path), f"score {score_s!r}", where=f"line {lineno}",
                             field="score", expected="a number") from exc
        if not math.isfinite(score):
            raise InputError(str(path), f"score {score_s!r}", where=f"line {lineno}",
                             field="score", expected="a finite number")
        rows.setdefault(qid, []).append((score, doc))
    traces: dict[str, Trace] = {}
    dropped = 0
    kmax = 0
    for qid, lst in rows.items():
        # trec_eval's order (form_res_rels.c, comp_sim_docno): score descending, then docno
        # descending by strcmp; Python compares str by code point, which is UTF-8 byte order.
        lst.sort(reverse=True)
        ids, scores = [t[1] for t in lst], [t[0] for t in lst]
        d = 0
        if len(set(ids)) != len(ids):
            ids, scores, d = _dedupe(ids, scores)
        dropped += d
        kmax = max(kmax, len(lst))
        traces[qid] = Trace(qid, ids, scores, len(lst))
    return TraceRun(run_name(path), str(path), kmax, traces, {}, dropped)


def read_lineage(path: str | Path) -> Lineage:
    """Read a lineage JSONL file; InputError on a bad row or a repeated (conversation, id)."""
    with bulk_build():
        return _read_lineage(Path(path))


def _read_lineage(path: Path) -> Lineage:
    rows: list[LineageRow] = []
    seen: set[tuple[str, str]] = set()
    for lineno, row in _records(path, LineageRow):
        key = (row.conversation, row.memory_id)
        if key in seen:
            raise InputError(str(path), f"memory id {row.memory_id!r} repeated in conversation "
                             f"{row.conversation!r}", where=f"line {lineno}", field="memory_id",
                             expected="one line per stored memory")
        seen.add(key)
        rows.append(row)
    return Lineage(str(path), rows)


def read_gold(path: str | Path) -> Gold:
    """Read a gold JSONL file; InputError on a bad row or a repeated query id."""
    with bulk_build():
        return _read_gold(Path(path))


def _read_gold(path: Path) -> Gold:
    out: dict[str, GoldQuery] = {}
    for lineno, g in _records(path, GoldQuery):
        if g.query_id in out:
            raise InputError(str(path), f"query {g.query_id!r} appears twice",
                             where=f"line {lineno}", field="query_id",
                             expected="one line per query")
        out[g.query_id] = g
    return Gold(str(path), out)


# ---------------------------------------------------------------------------------------------
# Writing


def _write_jsonl(path: Path, objs: Iterable[dict[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for o in objs:
            fh.write(json.dumps(o, ensure_ascii=False, sort_keys=True) + "\n")
            n += 1
    return n


def write_traces_jsonl(path: str | Path, run: TraceRun) -> int:
    """Write a TraceRun as trace JSONL (errors included as error lines)."""
    def gen() -> Iterator[dict[str, Any]]:
        for t in run.traces.values():
            yield {"query_id": t.query_id, "k": t.k,
                   "results": [{"id": i, "score": s} for i, s in zip(t.ids, t.scores)]}
        for qid, err in run.errors.items():
            yield {"query_id": qid, "error": err}
    return _write_jsonl(Path(path), gen())


def write_lineage_jsonl(path: str | Path, rows: Iterable[LineageRow]) -> int:
    return _write_jsonl(Path(path), (r.model_dump() for r in rows))


def write_gold_jsonl(path: str | Path, queries: Iterable[GoldQuery]) -> int:
    return _write_jsonl(Path(path), (q.model_dump() for q in queries))


def trec_id(s: str) -> str:
    """A TREC-safe token: whitespace would split columns, so it is percent-encoded (and '%')."""
    if not _WS.search(s) and "%" not in s:
        return s
    return "".join(f"%{ord(c):02X}" if (c.isspace() or c == "%") else c for c in s)


def write_trec_run(path: str | Path, run: TraceRun, query_ids: Sequence[str] | None = None,
                   score_mode: str = "rank", tag: str | None = None) -> int:
    """Write a run in TREC format. score_mode "rank" writes k - rank + 1 (strictly decreasing,
    so trec_eval, pytrec_eval and ranx keep exactly our order even where the system tied);
    "original" writes the system's scores."""
    qids = list(query_ids) if query_ids is not None else list(run.traces)
    traces = (t for t in map(run.traces.get, qids) if t is not None)
    return write_trec_traces(path, traces, tag or trec_id(run.name), score_mode)


def write_trec_traces(path: str | Path, traces: Iterable[Trace], tag: str,
                      score_mode: str = "rank") -> int:
    """Write traces, in the order given, as a TREC run (see write_trec_run); `traces` may be a
    stream, so a run need not be held to be exported."""
    text = _TrecText(tag, score_mode)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for t in traces:
            fh.write(text.lines(t.query_id, t.ids, t.scores))
            n += min(len(t.ids), len(t.scores))
    return n


class _TrecText:
    """The TREC run lines of one trace at a time (write_trec_traces), joined in C."""

    def __init__(self, tag: str, score_mode: str = "rank") -> None:
        if score_mode not in ("rank", "original"):
            raise ValueError(f"score_mode {score_mode!r} (expected 'rank' or 'original')")
        self.tag, self.score_mode = tag, score_mode
        self.tokens = _TrecTokens()  # each memory id encoded once, not once per line
        self.rank_tails: dict[int, list[str]] = {}  # length -> " rank score tag" per rank

    def lines(self, qid: str, ids: Sequence[str], scores: Sequence[float]) -> str:
        size = min(len(ids), len(scores))
        if not size:
            return ""
        tag = self.tag
        if self.score_mode == "rank":
            if len(ids) not in self.rank_tails:
                self.rank_tails[len(ids)] = [f" {r} {float(len(ids) - r + 1)!r} {tag}"
                                             for r in range(1, len(ids) + 1)]
            tails = self.rank_tails[len(ids)][:size]
        else:
            tails = [f" {r} {s!r} {tag}" for r, s in enumerate(scores[:size], start=1)]
        head = f"{trec_id(qid)} Q0 "
        # line = head + token + tail; joined in C (map/join), no Python step per line
        body = ("\n" + head).join(map(operator.add, map(self.tokens.__getitem__, ids[:size]),
                                      tails))
        return head + body + "\n"


class _TrecTokens(dict):
    """id -> trec_id(id), computed on first use."""

    def __missing__(self, key: str) -> str:
        value = self[key] = trec_id(key)
        return value


# a character trec_id may change (whitespace, '%', anything outside printable ASCII): ids
# without one are written as they are, the others go through trec_id
_TREC_ODD = r"[^\x21-\x24\x26-\x7e]"


def _arrow_trec_tokens(values: Any, pa: Any, pc: Any) -> Any:
    """trec_id of every string of a pyarrow string array (only the odd ones in Python)."""
    odd = pc.match_substring_regex(values, _TREC_ODD)
    if not pc.any(odd).as_py():
        return values
    tokens = values.to_pylist()
    for i in np.flatnonzero(odd.to_numpy(zero_copy_only=False)).tolist():
        tokens[i] = trec_id(tokens[i])
    return pa.array(tokens, pa.string())


class _TrecLines:
    """Builds the TREC run lines (score_mode "rank") of EncodedChunks with pyarrow: query token
    + memory token + " rank score tag" taken from tables of the distinct values and joined
    element-wise, no Python object per line; the bytes are those of write_trec_traces."""

    def __init__(self, tag: str) -> None:
        # pyarrow: imported where it is used (start-up time)
        import pyarrow as pa
        import pyarrow.compute as pc

        self.pa, self.pc, self.tag = pa, pc, tag
        self.tails: list[str] = []  # " rank score tag\n" of each (length, rank) met so far
        self.tail_start = np.full(1, -1, dtype=np.int64)  # length -> its first entry in tails
        self.tail_arr = pa.array([], pa.string())

    def build(self, ch: EncodedChunk, keep: np.ndarray, k: int | None,
              dedupe: bool) -> tuple[memoryview, np.ndarray, int]:
        """The lines of the queries `keep` of `ch` (each trace as read_traces reads it: cut
        at its own k, a repeated id dropped; then cut at `k`) as one buffer, the byte offsets
        where each kept query's lines start (and the last ones end), and the line count."""
        pa, pc = self.pa, self.pc
        lengths, ids = ch.lengths, ch.ids
        rows = np.flatnonzero(keep).tolist()
        if len(rows) < lengths.size:
            ids = ids[np.repeat(keep, lengths)]
            lengths = lengths[keep]
        row_of = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
        if dedupe and ids.size:  # the first rank of a repeated id is kept
            first = np.unique(row_of * max(len(ch.vocab), 1) + ids, return_index=True)[1]
            if first.size < ids.size:
                first.sort()
                ids, row_of = ids[first], row_of[first]
                lengths = np.bincount(row_of, minlength=len(rows))
        if k is not None and lengths.size and int(lengths.max()) > k:
            cut = np.minimum(lengths, k)
            keep_ids = np.repeat(np.cumsum(lengths) - lengths, cut) + _ranks(cut)
            ids, row_of, lengths = ids[keep_ids], row_of[keep_ids], cut
        longest = int(lengths.max()) if lengths.size else 0
        if longest >= self.tail_start.size:
            self.tail_start = np.concatenate(
                (self.tail_start, np.full(longest + 1 - self.tail_start.size, -1, np.int64)))
        new = [x for x in np.unique(lengths).tolist() if x and self.tail_start[x] < 0]
        for size in new:
            self.tail_start[size] = len(self.tails)
            self.tails.extend(f" {r} {float(size - r + 1)!r} {self.tag}\n"
                              for r in range(1, size + 1))
        if new:
            self.tail_arr = pa.array(self.tails, pa.string())
        ends = np.concatenate(([0], np.cumsum(lengths)))
        if not ids.size:  # every kept trace is empty: no line
            return memoryview(b""), np.zeros(len(rows) + 1, dtype=np.int64), 0
        vocab = ch.vocab_arrow if ch.vocab_arrow is not None else pa.array(ch.vocab, pa.string())
        heads = pa.array([trec_id(ch.qids[i]) + " Q0 " for i in rows], pa.string())
        lines = pc.binary_join_element_wise(
            pc.take(heads, row_of), pc.take(_arrow_trec_tokens(vocab, pa, pc), ids),
            pc.take(self.tail_arr, np.repeat(self.tail_start[lengths], lengths) + _ranks(lengths)),
            "")
        offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32,
                                count=len(lines) + 1 + lines.offset)[lines.offset:]
        return memoryview(lines.buffers()[2]), offsets[ends].astype(np.int64), len(lines)


class TrecTee:
    """The TREC run (score_mode "rank") of a trace file written while its scoring reads it,
    so the export need not read the file again: called with each chunk the scoring reads
    (pyarrow's EncodedChunks, or the careful reading's TraceChunks), and with None when the
    scoring starts the file again (the careful reading after pyarrow's): the writing starts
    over. The gold queries' traces are written in file order, each as read_traces reads it
    (cut at its own k, a repeated id dropped) and cut at `k` (None: at its own k only); that
    is the export's file when the file lists them in gold order (the export's order), which
    `finish` tells. Otherwise the writing stops and the export reads the file again."""

    def __init__(self, path: str | Path, gold_index: Mapping[str, int], k: int | None,
                 tag: str) -> None:
        self.path = Path(path)
        self._index, self._k, self._tag = gold_index, k, tag
        self._fh: BinaryIO | None = None
        self._start()

    def _start(self) -> None:
        if self._fh is not None:
            self._fh.close()
        self._fh = open(self.path, "wb")
        self._columns: _TrecLines | None = None
        self._text: _TrecText | None = None
        self._last = -1  # the gold position of the last query written
        self._queries = 0

    def __call__(self, ch: EncodedChunk | TraceChunk | None) -> None:
        if ch is None:
            self._start()
            return
        if self._fh is None:
            return
        pos = np.fromiter(map(self._index.get, ch.qids, repeat(-1)), dtype=np.int64,
                          count=len(ch.qids))
        keep = pos >= 0  # queries outside gold are not exported
        pos = pos[keep]
        if not pos.size:
            return
        if pos[0] <= self._last or (pos.size > 1 and bool((np.diff(pos) <= 0).any())):
            self._stop()  # not in gold order
            return
        self._last = int(pos[-1])
        self._queries += int(pos.size)
        if isinstance(ch, EncodedChunk):
            self._columns = self._columns or _TrecLines(self._tag)
            data, bounds, _ = self._columns.build(ch, keep, self._k, dedupe=True)
            self._fh.write(data[bounds[0]:bounds[-1]])
            return
        self._text = self._text or _TrecText(self._tag)
        k, write, lines = self._k, self._fh.write, self._text.lines
        for i in np.flatnonzero(keep).tolist():  # a write per query: no chunk-sized string
            ids, scores = ch.ids[i], ch.scores[i]
            if not ch.deduped and len(set(ids)) != len(ids):
                ids, scores, _ = _dedupe(ids, scores)
            if k is not None and len(ids) > k:
                ids, scores = ids[:k], scores[:k]
            write(lines(ch.qids[i], ids, scores).encode("utf-8"))
        self._text.tokens.clear()  # the chunk's ids: not held while the scoring goes on

    def _stop(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self._queries = -1
        self._columns = self._text = None

    def finish(self, qids: Sequence[str]) -> bool:
        """True when the file written is the export of `qids` (the run's scored queries, in
        gold order: every one written, in that order)."""
        ok = self._fh is not None and self._queries == len(qids)
        self._stop()
        return ok


def write_trec_encoded(path: str | Path, chunks: Iterable[EncodedChunk], qids: Sequence[str],
                       k: int, tag: str, source: str, dedupe: bool = True) -> int:
    """The TREC run (score_mode "rank") of the traces in `chunks`, for the queries `qids` in
    that order: byte for byte what write_trec_traces writes for the same traces (each cut at
    its own k, a repeated id dropped, then cut at `k`), one write per chunk (_TrecLines);
    queries read ahead of their turn are held as their bytes until it comes. dedupe=False:
    the caller knows no trace repeats an id (the scoring dropped none). `source` names the
    trace file in errors."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    position = {q: i for i, q in enumerate(qids)}
    builder = _TrecLines(tag)
    ahead: dict[int, bytes] = {}
    done = 0  # qids[:done] are written
    n = 0
    with open(path, "wb") as fh:
        for ch in chunks:
            pos = np.fromiter(map(position.get, ch.qids, repeat(-1)), dtype=np.int64,
                              count=len(ch.qids))
            keep = pos >= done  # not: an unwanted query, or one written already (a repeat)
            if not keep.any():
                continue
            pos = pos[keep]
            data, bounds, lines = builder.build(ch, keep, k, dedupe)
            n += lines
            if pos[0] == done and (pos.size == 1 or bool((np.diff(pos) == 1).all())):
                fh.write(data[bounds[0]:bounds[-1]])  # the usual case: the chunk in order
                done += pos.size
            else:
                for j, p in enumerate(pos.tolist()):
                    ahead[p] = bytes(data[bounds[j]:bounds[j + 1]])
            while done in ahead:
                fh.write(ahead.pop(done))
                done += 1
    if done < len(qids):  # the file changed since it was scored
        raise InputError(source, f"no trace for query {qids[done]!r} on a second reading",
                         expected="a trace file that does not change during the audit")
    return n


_QRELS_BLOCK = 1 << 14  # qrels lines assembled per write: bounds the per-byte index arrays


def _gather_bytes(data: np.ndarray, start: np.ndarray,
                  length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The byte strings data[start[i] : start[i] + length[i]] packed one after the other, and
    where each starts there (in blocks of entries, so no int64 array per byte of the whole)."""
    length = length.astype(np.int64)
    parts = []
    for lo in range(0, length.size, _QRELS_BLOCK):
        n = length[lo:lo + _QRELS_BLOCK]
        parts.append(data[np.repeat(start[lo:lo + _QRELS_BLOCK].astype(np.int64), n) +
                          _ranks(n)])
    packed = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)
    return packed, np.cumsum(length) - length


def write_trec_qrels_coded(path: str | Path, qids: Sequence[str], line_query: np.ndarray,
                           line_doc: np.ndarray,
                           doc_bytes: tuple[np.ndarray, np.ndarray, np.ndarray]) -> int:
    """write_trec_qrels's bytes for the lines `qids[line_query[i]] 0 doc[line_doc[i]] 1`, in
    the order given (a query's lines one after the other), the documents given as UTF-8 bytes
    (doc j is data[start[j] : start[j] + length[j]]: a coded lineage's memory ids), without a
    Python string per line or per document: the lines are assembled with numpy, a block at a
    time, from the query heads and the distinct documents' tokens; only a document with a
    byte trec_id may change (whitespace, '%', anything outside printable ASCII) is decoded
    and passed through trec_id."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data, start, length = doc_bytes
    docs, line_tok = np.unique(line_doc, return_inverse=True)
    line_tok = line_tok.reshape(-1)
    tlen = length[docs].astype(np.int64)
    tdata, tstart = _gather_bytes(data, start[docs], tlen)
    if tdata.size:
        bad = (tdata < 0x21) | (tdata == 0x25) | (tdata > 0x7E)
        # per document, any such byte (an empty one has none; reduceat would give it the
        # byte at its start)
        odd = np.flatnonzero(np.logical_or.reduceat(bad, np.minimum(tstart, tdata.size - 1))
                             & (tlen > 0))
        if odd.size:  # their trec_id tokens appended; the entries point there
            raw = tdata.tobytes()
            fixed = [trec_id(raw[a:a + n].decode("utf-8", "surrogatepass")).encode("utf-8")
                     for a, n in zip(tstart[odd].tolist(), tlen[odd].tolist())]
            lens = np.fromiter(map(len, fixed), dtype=np.int64, count=len(fixed))
            tstart[odd] = tdata.size + np.cumsum(lens) - lens
            tlen[odd] = lens
            tdata = np.concatenate((tdata, np.frombuffer(b"".join(fixed), dtype=np.uint8)))
    queries, line_head = np.unique(line_query, return_inverse=True)
    line_head = line_head.reshape(-1)
    heads = [f"{trec_id(qids[q])} 0 ".encode() for q in queries.tolist()]
    hlen = np.fromiter(map(len, heads), dtype=np.int64, count=len(heads))
    hstart = np.cumsum(hlen) - hlen
    hdata = np.frombuffer(b"".join(heads), dtype=np.uint8)
    tail = np.frombuffer(b" 1\n", dtype=np.uint8)
    with open(path, "wb") as fh:
        for lo in range(0, line_tok.size, _QRELS_BLOCK):
            h, t = line_head[lo:lo + _QRELS_BLOCK], line_tok[lo:lo + _QRELS_BLOCK]
            hl, tl = hlen[h], tlen[t]
            size = hl + tl + tail.size
            at = np.cumsum(size) - size  # where each line starts in the block
            out = np.empty(int(size.sum()), dtype=np.uint8)
            r = _ranks(hl)
            out[np.repeat(at, hl) + r] = hdata[np.repeat(hstart[h], hl) + r]
            r = _ranks(tl)
            out[np.repeat(at + hl, tl) + r] = tdata[np.repeat(tstart[t], tl) + r]
            end = at + hl + tl
            for j, byte in enumerate(tail.tolist()):
                out[end + j] = byte
            fh.write(out.data)
    return int(line_tok.size)


def write_trec_qrels(path: str | Path, qrels: dict[str, list[str]]) -> int:
    """Write binary qrels (`qid 0 docid 1`), one line per eligible memory id."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokens = _TrecTokens()
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for q, docs in qrels.items():
            if not docs:
                continue
            head = f"{trec_id(q)} 0 "
            fh.write(head + (" 1\n" + head).join(map(tokens.__getitem__, docs)) + " 1\n")
            n += len(docs)
    return n
