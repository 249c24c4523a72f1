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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

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


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; InputError on bad JSON or non-objects.

    Lines are parsed by orjson (0.50 of the stdlib's parsing time on 100,000 queries x 60:
    benchmarks/bench_trace_io.py, which measured pyarrow at 0.81 and polars at 1.20 once their
    columns become the lists the rescoring reads). A line orjson refuses is parsed again by the
    stdlib, so what is accepted (NaN, lone surrogates) and every error message are the stdlib
    reader's; one difference: orjson reads an integer beyond 64 bits as a float, so such a `k`
    is refused as not an integer."""
    for lineno, raw in _raw_lines(path):
        obj = _parse(path, lineno, raw)
        if obj is not None:
            yield lineno, obj


def _raw_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with _open(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            if raw and not raw.isspace():
                yield lineno, raw


def _parse(path: Path, lineno: int, raw: bytes) -> dict[str, Any] | None:
    """One line's object (orjson, else the stdlib); None for a line of Unicode whitespace."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        if not decode_utf8(raw, str(path), f"line {lineno}").strip():
            return None  # Unicode whitespace only: blank, as the text reader saw it
        obj = load_json(raw, str(path), f"line {lineno}", expected="one JSON object per line")
    return _object(path, lineno, obj)


_M = TypeVar("_M", LineageRow, GoldQuery)


def _records(path: Path, model: type[_M]) -> Iterator[tuple[int, _M]]:
    """(line number, record) per non-blank line. pydantic parses and validates each line in
    one step (model_validate_json: a tenth of orjson + model_validate's time for gold rows); a
    line it refuses goes through the reader above and model_validate, so a line that only the
    Python reading accepts (a lone surrogate in a string) reads as before, and every error is
    the one it always was."""
    for lineno, raw in _raw_lines(path):
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


def _object(path: Path, lineno: int, obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise InputError(str(path), "not a JSON object", where=f"line {lineno}",
                         expected="one JSON object per line")
    return obj


def _run_name(path: Path) -> str:
    # A run folder written by `twist trace` holds traces.jsonl: name the run after the folder.
    if path.stem in ("traces", "run") and path.parent.name:
        return path.parent.name
    return path.stem


def read_traces(path: str | Path, name: str | None = None, fmt: str | None = None) -> TraceRun:
    """Read a trace file (JSONL or TREC run format, chosen by `fmt` or by the content).

    A trace line with "error" is recorded in `errors` (excluded from every metric). Repeated
    memory ids within one query keep their first rank and are counted in `duplicates_dropped`.
    """
    path = Path(path)
    if fmt is None:
        fmt = _sniff(path)
    if fmt not in ("jsonl", "trec"):
        raise InputError(str(path), f"unknown trace format {fmt!r}", expected="'jsonl' or 'trec'")
    with bulk_build():
        run = _read_traces_jsonl(path) if fmt == "jsonl" else _read_traces_trec(path)
    if name:
        run.name = name
    return run


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
    if len(set(ids)) == len(ids):  # the usual case: nothing repeated
        return ids, scores, 0
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


def _read_traces_jsonl(path: Path) -> TraceRun:
    traces: dict[str, Trace] = {}
    errors: dict[str, str] = {}
    dropped = 0
    kmax = 0
    for lineno, obj in _jsonl(path):
        where = f"line {lineno}"
        qid = obj.get("query_id")
        if not isinstance(qid, str) or not qid:
            raise InputError(str(path), "missing or empty query id", where=where,
                             field="query_id", expected="a non-empty string")
        if qid in traces or qid in errors:
            raise InputError(str(path), f"query {qid!r} appears twice", where=where,
                             field="query_id", expected="one line per query")
        unknown = set(obj) - {"query_id", "k", "results", "error", "conversation", "meta"}
        if unknown:
            raise InputError(str(path), f"unknown field(s) {sorted(unknown)}", where=where,
                             expected="query_id, k, results, error, conversation, meta")
        if obj.get("error"):
            errors[qid] = str(obj["error"])
            continue
        results = obj.get("results")
        if not isinstance(results, list):
            raise InputError(str(path), "results is not a list", where=where, field="results",
                             expected='a list of {"id": str, "score": number}')
        ids, scores = _results(path, where, results)
        k = obj.get("k", len(ids))
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            raise InputError(str(path), f"bad k {k!r}", where=where, field="k",
                             expected="a non-negative integer")
        ids, scores, d = _dedupe(ids[:k], scores[:k])
        dropped += d
        kmax = max(kmax, k)
        traces[qid] = Trace(qid, ids, scores, k)
    return TraceRun(_run_name(path), str(path), kmax, traces, errors, dropped)


_INF = float("inf")


def _results(path: Path, where: str, results: list[Any]) -> tuple[list[str], list[float]]:
    """The ids and scores of a results list; InputError naming the first bad position."""
    try:  # fast path: whole columns at once; anything unusual takes the checked loop below
        ids = [r["id"] for r in results]
        raw = [r["score"] for r in results]
        if (all(type(i) is str and i for i in ids)
                and all((type(v) is float or type(v) is int) and -_INF < v < _INF for v in raw)):
            return ids, [float(v) for v in raw]
    except (TypeError, KeyError, OverflowError):
        pass
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
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


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
        ids, scores, d = _dedupe([t[1] for t in lst], [t[0] for t in lst])
        dropped += d
        kmax = max(kmax, len(lst))
        traces[qid] = Trace(qid, ids, scores, len(lst))
    return TraceRun(_run_name(path), str(path), kmax, traces, {}, dropped)


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
    if score_mode not in ("rank", "original"):
        raise ValueError(f"score_mode {score_mode!r} (expected 'rank' or 'original')")
    tag = tag or trec_id(run.name)
    qids = list(query_ids) if query_ids is not None else list(run.traces)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokens = _TrecTokens()  # each memory id encoded once, not once per line
    rank_tails: dict[int, list[str]] = {}  # list length -> " rank score tag" per rank (rank mode)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for q in qids:
            t = run.traces.get(q)
            if t is None:
                continue
            size = min(len(t.ids), len(t.scores))
            if not size:
                continue
            if score_mode == "rank":
                if len(t.ids) not in rank_tails:
                    rank_tails[len(t.ids)] = [f" {r} {float(len(t.ids) - r + 1)!r} {tag}"
                                              for r in range(1, len(t.ids) + 1)]
                tails = rank_tails[len(t.ids)][:size]
            else:
                tails = [f" {r} {s!r} {tag}" for r, s in enumerate(t.scores[:size], start=1)]
            head = f"{trec_id(q)} Q0 "
            # line = head + token + tail; joined in C (map/join), no Python step per line
            body = ("\n" + head).join(map(operator.add, map(tokens.__getitem__, t.ids[:size]),
                                           tails))
            fh.write(head + body + "\n")
            n += size
    return n


class _TrecTokens(dict):
    """id -> trec_id(id), computed on first use."""

    def __missing__(self, key: str) -> str:
        value = self[key] = trec_id(key)
        return value


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
