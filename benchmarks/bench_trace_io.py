"""Reading a JSONL trace file: the stdlib reader of `audit/traces.py` against orjson, pyarrow
and polars (prints medians; never asserted in tests). Chooses the columnar reader by measurement
(issue 18).

The file: --queries lines of {"query_id", "k", "results": [{"id", "score"}] x k}, ids drawn
from per-conversation stores like `bench_tiap.py`'s. Every reader must produce the same thing:
the query ids, and per query its ids and scores in file order (checked against the reference
before any time is printed). Timed, each the median of --repeats runs in this one process,
every one with the cyclic GC paused (`bulk_build`, as read_traces does), so that only the
parsers differ:
  stdlib     json.loads per line, a per-result loop (the reference: read_traces before orjson);
  orjson     orjson.loads per line, the same loop;
  pyarrow    pyarrow.json.read_json, then the flattened id / score columns as Python lists;
  polars     polars.read_ndjson, explode, then the id / score columns as Python lists;
  ours       read_traces(): orjson, every check, Trace objects;
  ours, columnar   iter_encoded_chunks(): pyarrow's JSON reader on one thread, every check,
             the ids dictionary-encoded (integer indices into one vocabulary per chunk, no
             Python object per id; what score_files reads when pyarrow is installed). Its
             columns are decoded to lists only for the equality check, outside the timing.
The ratio of each to the reference is printed. Libraries that are not installed are skipped
(pip install orjson pyarrow polars).

Run: .venv/bin/python benchmarks/bench_trace_io.py [--queries 100000] [--k 60] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from twistbench.audit.traces import bulk_build, iter_encoded_chunks, read_traces

Columns = tuple[list[str], list[list[str]], list[list[float]]]


def write_file(path: Path, n_queries: int, k: int, seed: int = 1337) -> None:
    rng = np.random.default_rng(seed)
    per_conv, n_mem = 100, 750
    with open(path, "w", encoding="utf-8") as fh:
        for q in range(n_queries):
            conv = q // per_conv
            picks = rng.choice(n_mem, size=k, replace=False)
            scores = np.sort(rng.random(k))[::-1]
            results = [{"id": f"conv-{conv}:m{int(p)}", "score": float(s)}
                       for p, s in zip(picks, scores)]
            fh.write(json.dumps({"query_id": f"conv-{conv}:q{q}", "k": k,
                                 "results": results}) + "\n")


def ours(path: Path) -> Columns:
    run = read_traces(path, fmt="jsonl")
    ts = list(run.traces.values())
    return [t.query_id for t in ts], [t.ids for t in ts], [t.scores for t in ts]


def _loop(path: Path, loads: Callable[[bytes], dict]) -> Columns:
    qids, ids, scores = [], [], []
    with open(path, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            obj = loads(line)
            res = obj["results"]
            qids.append(obj["query_id"])
            ids.append([r["id"] for r in res])
            scores.append([float(r["score"]) for r in res])
    return qids, ids, scores


def with_stdlib(path: Path) -> Columns:
    return _loop(path, json.loads)


def with_orjson(path: Path) -> Columns:
    import orjson

    return _loop(path, orjson.loads)


def _split(flat: list, lengths: list[int]) -> list[list]:
    out, pos = [], 0
    for n in lengths:
        out.append(flat[pos:pos + n])
        pos += n
    return out


def with_pyarrow(path: Path) -> Columns:
    import pyarrow.compute as pc
    import pyarrow.json as pj

    table = pj.read_json(path, read_options=pj.ReadOptions(block_size=1 << 26))
    results = table.column("results").combine_chunks()
    lengths = pc.list_value_length(results).to_pylist()
    flat = pc.list_flatten(results)
    ids = flat.field("id").to_pylist()
    scores = flat.field("score").to_pylist()
    return table.column("query_id").to_pylist(), _split(ids, lengths), _split(scores, lengths)


def with_polars(path: Path) -> Columns:
    import polars as pl

    df = pl.read_ndjson(path)
    lengths = df.get_column("results").list.len().to_list()
    flat = df.select(pl.col("results").explode()).unnest("results")
    return (df.get_column("query_id").to_list(), _split(flat.get_column("id").to_list(), lengths),
            _split(flat.get_column("score").to_list(), lengths))


def columnar(path: Path) -> list:
    return list(iter_encoded_chunks(path, "jsonl"))


def decode(chunks: list) -> Columns:
    qids, ids, scores = [], [], []
    for ch in chunks:
        pos = 0
        for q, n in zip(ch.qids, ch.lengths.tolist()):
            qids.append(q)
            ids.append([ch.vocab[i] for i in ch.ids[pos:pos + n].tolist()])
            pos += n
    return qids, ids, scores


def timed(fn: Callable[[], Columns], repeats: int) -> tuple[float, Columns]:
    times, out = [], None
    for _ in range(repeats):
        out = None  # the previous result is freed before the next read
        with bulk_build():
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
    assert out is not None
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--k", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "traces.jsonl"
        write_file(path, args.queries, args.k)
        size = path.stat().st_size
        print(f"trace file: {args.queries:,} queries x {args.k} ids, {size / 1e6:.0f} MB")
        t_ref, ref = timed(lambda: with_stdlib(path), args.repeats)
        print(f"reference, stdlib json per line: {t_ref:.2f} s")
        for name, fn in (("orjson", with_orjson), ("pyarrow", with_pyarrow),
                         ("polars", with_polars), ("ours (read_traces)", ours)):
            try:
                t, got = timed(lambda fn=fn: fn(path), args.repeats)
            except ImportError as exc:
                print(f"{name}: not installed ({exc.name})")
                continue
            if got != ref:
                raise SystemExit(f"{name}: read something else than the reference")
            print(f"{name}: {t:.2f} s, ratio to the reference {t / t_ref:.2f}")
        try:
            t, chunks = timed(lambda: columnar(path), args.repeats)
        except ImportError as exc:
            print(f"ours, columnar: not installed ({exc.name})")
            return
        qids, ids, _ = decode(chunks)
        if (qids, ids) != ref[:2]:  # the scores are checked by the scoring tests
            raise SystemExit("ours, columnar: read something else than the reference")
        print(f"ours, columnar (iter_encoded_chunks): {t:.2f} s, ratio to the reference "
              f"{t / t_ref:.2f}")


if __name__ == "__main__":
    main()
