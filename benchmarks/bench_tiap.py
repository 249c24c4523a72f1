"""TIAP rescoring and bootstrap wall times (prints medians; never asserted in tests).

Synthetic but realistic shape: 1,000 conversations, each a store of 300 raw turns plus 0-3
parser facts per turn (~750 memories), 100 queries per conversation (100,000 queries) with
1-3 gold anchors and a top-60 trace drawn from the conversation's store.

Everything runs in this one process, on one thread of ours: no multiprocessing, and pyarrow
(when installed, it reads the JSONL and Parquet columns) is asked for one thread
(ReadOptions(use_threads=False); a Parquet file is read by record batch).

Printed, each the median of --repeats runs in this one process:
  ours   rescore(): Raw + Source + Canonical, Recall@60 / MRR / nDCG@60, from the in-memory
         trace/lineage/gold objects (integer coding included);
  ours   vectorised part only (targets + hits + metrics on already-coded arrays);
  pytrec_eval, ONE target (Source): RelevanceEvaluator(qrels, {ndcg_cut_60, recall_60,
         recip_rank}) construction + evaluate(run), and separately the time to build its qrels
         and run dicts from the same in-memory objects (so both sides can be compared end to
         end, or with their inputs prepared);
  the paired bootstrap, 3,000 resamples over the 100,000 queries (one metric, and three
         metrics sharing one draw).
  from files (issue 18's goal): the same inputs written as traces.jsonl (or traces.parquet
         with --format parquet), lineage.jsonl and gold.jsonl; ours = score_files (reading,
         coding and scoring 3 targets x 3 metrics, the traces streamed by chunks of 10,000
         queries); pytrec_eval = reading the same files (orjson per line, as its users would;
         pyarrow record batches for Parquet) into its run dict and its qrels of ONE target
         (Source) + RelevanceEvaluator + evaluate.
Goal: ours for three targets < pytrec_eval for one. The last line is `ratio from files: R`,
R = ours (3 targets, from files) / pytrec_eval (1 target, from files, dict building included).

Large logs (--queries above 200,000): the in-memory sections are skipped and the files are
generated conversation by conversation straight to disk, so that nothing holds all queries;
ours is then measured once with the peak resident memory of this process (ru_maxrss, printed
before the reference runs), and pytrec_eval, which has no streaming of its own and whose
dicts for 1,000,000 queries x 60 would not fit, is given the same files 100 conversations at a
time (the generator writes every file in conversation order; its per-chunk dict building and
evaluation are summed).

The from-files runs alternate ours and pytrec_eval (so both meet the same load on a shared
machine) and print CPU time (process_time) beside wall time; R is the ratio of wall medians.
--files-only runs that comparison alone, on files written by conversation as for large logs.

Run: .venv/bin/python benchmarks/bench_tiap.py [--queries 100000] [--repeats 3] [--files-only]
     .venv/bin/python benchmarks/bench_tiap.py --queries 1000000 --format parquet
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson
from working_tree import child_env

from twistbench.audit.metrics import metrics_from_hits, rescore, score_files
from twistbench.audit.targets import (
    TARGETS,
    build_targets,
    code_lineage,
    code_queries,
    hit_matrices,
)
from twistbench.audit.traces import (
    Gold,
    GoldQuery,
    Lineage,
    LineageRow,
    Trace,
    TraceChunk,
    TraceRun,
    write_gold_jsonl,
    write_lineage_jsonl,
    write_traces_jsonl,
    write_traces_parquet,
)
from twistbench.stats import paired_bootstrap, paired_bootstrap_many


def make(n_queries: int, k: int, seed: int = 1337) -> tuple[TraceRun, Lineage, Gold]:
    rng = np.random.default_rng(seed)
    per_conv = 100
    n_conv = max(1, n_queries // per_conv)
    n_turns = 300
    rows: list[LineageRow] = []
    traces: dict[str, Trace] = {}
    queries: dict[str, GoldQuery] = {}
    turn_ids = [f"D{t}" for t in range(n_turns)]
    for c in range(n_conv):
        conv = f"conv-{c}"
        mem: list[str] = []
        nf = rng.integers(0, 4, size=n_turns)
        for t in range(n_turns):
            mid = f"{conv}:{turn_ids[t]}"
            rows.append(LineageRow.model_construct(conversation=conv, memory_id=mid,
                                                   sources=[turn_ids[t]], raw=True,
                                                   canonical=False, text=""))
            mem.append(mid)
            for f in range(int(nf[t])):
                fid = f"{mid}#f{f}"
                rows.append(LineageRow.model_construct(conversation=conv, memory_id=fid,
                                                       sources=[turn_ids[t]], raw=False,
                                                       canonical=True, text=""))
                mem.append(fid)
        picks = np.argsort(rng.random((per_conv, len(mem))), axis=1)[:, :k]
        scores = [float(x) for x in np.linspace(1.0, 0.01, k)]
        n_anchor = rng.integers(1, 4, size=per_conv)
        for qi in range(per_conv):
            qid = f"{conv}:q{qi}"
            anchors = [turn_ids[a] for a in rng.choice(n_turns, int(n_anchor[qi]), replace=False)]
            queries[qid] = GoldQuery.model_construct(
                query_id=qid, conversation=conv, anchors=anchors, category=str(qi % 4 + 1),
                question="", answer="", anchor_texts={})
            # fresh string objects, as a trace read from a file has (no shared cached hashes)
            traces[qid] = Trace(qid, ["".join(mem[j]) for j in picks[qi]], scores, k)
    return TraceRun("bench", "bench", k, traces), Lineage("bench", rows), Gold("bench", queries)


def timed(fn, repeats: int) -> tuple[float, object]:  # noqa: ANN001
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--k", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl",
                    help="the trace file format of the from-files comparison")
    ap.add_argument("--files-only", action="store_true",
                    help="only the from-files comparison (the files written by conversation)")
    ap.add_argument("--generate", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    k = args.k
    if args.generate:
        generate(Path(args.generate), args.queries, k, args.format)
        return
    if args.queries > 200_000:
        large(args.queries, k, args.format)
        return
    if args.files_only:
        import pytrec_eval  # the test extra: the reference

        from_files(None, None, None, k, args.repeats, pytrec_eval, args.format, args.queries)
        return

    t0 = time.perf_counter()
    run, lin, gold = make(args.queries, k)
    print(f"synthetic inputs: {len(gold.queries):,} queries x {k} ids, "
          f"{len(lin.rows):,} stored memories ({time.perf_counter() - t0:.1f} s to build)")

    t_ours, rs = timed(lambda: rescore(run, lin, gold, k=k), args.repeats)
    print(f"ours, rescore() 3 targets x 3 metrics, end to end from the in-memory objects: "
          f"{t_ours:.2f} s")
    t_lin, cl = timed(lambda: code_lineage(lin), args.repeats)
    qids = list(gold.queries)
    t_q, cq = timed(lambda: code_queries(run, gold, cl, qids, k), args.repeats)

    def vectorised() -> None:
        ts = build_targets(cq, cl)
        hits = hit_matrices(cq, ts, cl)
        for t in TARGETS:
            metrics_from_hits(hits[t], ts.n_rel[t], k)

    t_vec, _ = timed(vectorised, args.repeats)
    print(f"  of which: lineage coding {t_lin:.2f} s (once per store), trace + gold coding "
          f"{t_q:.2f} s, targets + hits + metrics (3 targets) {t_vec:.2f} s")
    t_resc = t_q + t_vec
    print(f"ours, rescoring with the store already coded (3 targets): {t_resc:.2f} s")

    try:
        import pytrec_eval
    except ImportError:
        print("pytrec_eval not installed (pip install pytrec-eval-terrier): comparison skipped")
        pytrec_eval = None
    if pytrec_eval is not None:
        by_anchor: dict[tuple[str, str], list[str]] = {}

        def build_qrels() -> dict[str, dict[str, int]]:
            by_anchor.clear()
            for r in lin.rows:
                for s in r.sources:
                    by_anchor.setdefault((r.conversation, s), []).append(r.memory_id)
            out: dict[str, dict[str, int]] = {}
            for qid, g in gold.queries.items():
                rel = {m: 1 for a in g.anchors for m in by_anchor.get((g.conversation, a), ())}
                if rel:
                    out[qid] = rel
            return out

        t_qrels, qrels = timed(build_qrels, 1)
        t_rundict, trec_run = timed(
            lambda: {q: dict(zip(t.ids, t.scores)) for q, t in run.traces.items()}, 1)
        measures = {f"ndcg_cut_{k}", f"recall_{k}", "recip_rank"}

        def theirs() -> dict:
            return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(trec_run)

        t_theirs, ev = timed(theirs, args.repeats)
        print(f"pytrec_eval, ONE target (Source), same 3 metrics, RelevanceEvaluator + evaluate "
              f"(qrels and run dicts prebuilt, untimed): {t_theirs:.2f} s")
        print(f"  (building its inputs from the same in-memory objects: qrels of that one "
              f"target from the lineage {t_qrels:.2f} s, run dict {t_rundict:.2f} s)")
        t_theirs_e2e = t_theirs + t_qrels + t_rundict
        ours_src = rs.scores["src"]["ndcg"]
        diff = max(abs(ours_src[i] - ev[q][f"ndcg_cut_{k}"]) for i, q in enumerate(rs.qids)
                   if q in ev)
        print(f"  max |ours - pytrec_eval| nDCG@{k} (Source): {diff:.2e}")
        print(f"  ratios, ours (3 targets) / pytrec_eval (1 target): end to end from the same "
              f"objects {t_ours / t_theirs_e2e:.2f}; store coded vs evaluator + evaluate "
              f"{t_resc / t_theirs:.2f}; end to end vs evaluator + evaluate only "
              f"{t_ours / t_theirs:.2f}")

    a, b = rs.scores["src"]["ndcg"], rs.scores["raw"]["ndcg"]
    m = ~np.isnan(a) & ~np.isnan(b)
    t_boot, iv = timed(lambda: paired_bootstrap(a[m], b[m]), args.repeats)
    print(f"paired bootstrap, 3,000 resamples, n={int(m.sum()):,} queries, one metric: "
          f"{t_boot:.2f} s  (Δ nDCG Source-Raw {iv.estimate:+.4f} "
          f"[{iv.low:+.4f}, {iv.high:+.4f}])")
    d3 = np.column_stack([rs.scores["src"][x][m] - rs.scores["raw"][x][m]
                          for x in ("recall", "mrr", "ndcg")])
    t_boot3, _ = timed(lambda: paired_bootstrap_many(d3), args.repeats)
    print(f"paired bootstrap, 3,000 resamples, three metrics on one shared draw: {t_boot3:.2f} s")
    if pytrec_eval is not None:
        from_files(run, lin, gold, k, args.repeats, pytrec_eval, args.format)


def peak_mb() -> float:
    """Peak resident memory of this process so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read_traces_dict(tp: Path) -> dict[str, dict[str, float]]:
    """pytrec_eval's run dict from a trace file, as its users would build it."""
    trec_run: dict[str, dict[str, float]] = {}
    if tp.suffix == ".parquet":
        import pyarrow.parquet as pq  # the parquet extra, only for --format parquet

        for batch in pq.ParquetFile(tp).iter_batches(batch_size=10_000):
            for t in batch.to_pylist():
                trec_run[t["query_id"]] = {r["id"]: r["score"] for r in t["results"]}
        return trec_run
    with open(tp, "rb") as fh:
        for line in fh:
            t = orjson.loads(line)
            trec_run[t["query_id"]] = {r["id"]: r["score"] for r in t["results"]}
    return trec_run


def from_files(run: TraceRun | None, lin: Lineage | None, gold: Gold | None, k: int,
               repeats: int, pytrec_eval, fmt: str,  # noqa: ANN001 - the module
               n_queries: int = 0) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tp, lp, gp = Path(tmp) / f"traces.{fmt}", Path(tmp) / "lineage.jsonl", \
            Path(tmp) / "gold.jsonl"
        if run is None:  # --files-only: the same shape, written by conversation
            generate(Path(tmp), n_queries, k, fmt)
        else:
            if fmt == "parquet":
                write_traces_parquet(tp, [run])
            else:
                write_traces_jsonl(tp, run)
            write_lineage_jsonl(lp, lin.rows)
            write_gold_jsonl(gp, gold.queries.values())
        mb = sum(p.stat().st_size for p in (tp, lp, gp)) / 1e6

        def ours():  # noqa: ANN202
            return score_files(tp, lp, gp, k=k, fmt=fmt)

        def theirs():  # noqa: ANN202
            by_anchor: dict[tuple[str, str], list[str]] = {}
            with open(lp, "rb") as fh:
                for line in fh:
                    r = orjson.loads(line)
                    for a in r["sources"]:
                        by_anchor.setdefault((r["conversation"], a), []).append(r["memory_id"])
            qrels: dict[str, dict[str, int]] = {}
            with open(gp, "rb") as fh:
                for line in fh:
                    g = orjson.loads(line)
                    rel = {m: 1 for a in g["anchors"]
                           for m in by_anchor.get((g["conversation"], a), ())}
                    if rel:
                        qrels[g["query_id"]] = rel
            trec_run = read_traces_dict(tp)
            measures = {f"ndcg_cut_{k}", f"recall_{k}", "recip_rank"}
            return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(trec_run)

        # Alternated (ours, theirs, ours, ...) so that both meet the same load on a shared
        # machine; wall and CPU time (process_time) are both kept.
        wall: dict[str, list[float]] = {"ours": [], "theirs": []}
        cpu: dict[str, list[float]] = {"ours": [], "theirs": []}
        rs = ev = None
        for _ in range(repeats):
            for name, fn in (("ours", ours), ("theirs", theirs)):
                w0, c0 = time.perf_counter(), time.process_time()
                out = fn()
                wall[name].append(time.perf_counter() - w0)
                cpu[name].append(time.process_time() - c0)
                if name == "ours":
                    rs = out
                else:
                    ev = out
                out = None
        t_ours, t_theirs = statistics.median(wall["ours"]), statistics.median(wall["theirs"])
        c_ours, c_theirs = statistics.median(cpu["ours"]), statistics.median(cpu["theirs"])
        diff = max(abs(rs.scores["src"]["ndcg"][i] - ev[q][f"ndcg_cut_{k}"])
                   for i, q in enumerate(rs.qids) if q in ev)
        print(f"from files ({fmt} traces, {mb:.0f} MB): ours, 3 targets x 3 metrics "
              f"{t_ours:.2f} s (CPU {c_ours:.2f} s); pytrec_eval, 1 target, its dicts built "
              f"from the files {t_theirs:.2f} s (CPU {c_theirs:.2f} s); max |Δ nDCG@{k}| "
              f"(Source) {diff:.1e}")
        print(f"  every run, wall s: ours {[round(x, 2) for x in wall['ours']]}, pytrec_eval "
              f"{[round(x, 2) for x in wall['theirs']]}; CPU ratio {c_ours / c_theirs:.2f}")
        print(f"peak resident memory of this process: {peak_mb():,.0f} MB")
        print(f"ratio from files: {t_ours / t_theirs:.2f}")


PER_CONV, N_TURNS = 100, 300


def generate(tmp: Path, n_queries: int, k: int, fmt: str, seed: int = 1337,
             convs_per_chunk: int = 100) -> tuple[Path, Path, Path]:
    """make()'s shape written conversation by conversation (a chunk of conversations at a time),
    every file in conversation order; nothing holds more than one chunk."""
    rng = np.random.default_rng(seed)
    n_conv = max(1, n_queries // PER_CONV)
    tp, lp, gp = tmp / f"traces.{fmt}", tmp / "lineage.jsonl", tmp / "gold.jsonl"
    turn_ids = [f"D{t}" for t in range(N_TURNS)]
    scores = [float(x) for x in np.linspace(1.0, 0.01, k)]

    def chunks() -> Iterator[TraceChunk]:
        with open(lp, "wb") as lf, open(gp, "wb") as gf:
            for c0 in range(0, n_conv, convs_per_chunk):
                qids: list[str] = []
                ids: list[list[str]] = []
                for c in range(c0, min(n_conv, c0 + convs_per_chunk)):
                    conv = f"conv-{c}"
                    mem: list[str] = []
                    nf = rng.integers(0, 4, size=N_TURNS)
                    lines = []
                    for t in range(N_TURNS):
                        mid = f"{conv}:{turn_ids[t]}"
                        lines.append({"canonical": False, "conversation": conv, "memory_id": mid,
                                      "raw": True, "sources": [turn_ids[t]], "text": ""})
                        mem.append(mid)
                        for f in range(int(nf[t])):
                            fid = f"{mid}#f{f}"
                            lines.append({"canonical": True, "conversation": conv,
                                          "memory_id": fid, "raw": False,
                                          "sources": [turn_ids[t]], "text": ""})
                            mem.append(fid)
                    lf.write(b"\n".join(map(orjson.dumps, lines)) + b"\n")
                    picks = np.argsort(rng.random((PER_CONV, len(mem))), axis=1)[:, :k]
                    n_anchor = rng.integers(1, 4, size=PER_CONV)
                    golds = []
                    for qi in range(PER_CONV):
                        qid = f"{conv}:q{qi}"
                        anchors = [turn_ids[a] for a in
                                   rng.choice(N_TURNS, int(n_anchor[qi]), replace=False)]
                        golds.append({"anchor_texts": {}, "anchors": anchors, "answer": "",
                                      "category": str(qi % 4 + 1), "conversation": conv,
                                      "query_id": qid, "question": ""})
                        qids.append(qid)
                        ids.append([mem[j] for j in picks[qi]])
                    gf.write(b"\n".join(map(orjson.dumps, golds)) + b"\n")
                yield TraceChunk(qids, ids, [scores] * len(qids), [k] * len(qids), {}, 0, k)

    if fmt == "parquet":
        write_traces_parquet(tp, chunks())
    else:
        with open(tp, "wb") as tf:
            for ch in chunks():
                tf.write(b"\n".join(orjson.dumps(
                    {"k": k, "query_id": q, "results": [{"id": i, "score": s}
                                                        for i, s in zip(ids, scores)]})
                    for q, ids in zip(ch.qids, ch.ids)) + b"\n")
    return tp, lp, gp


def pytrec_by_conversations(tp: Path, lp: Path, gp: Path, k: int, pytrec_eval,  # noqa: ANN001
                            convs_per_chunk: int = 100) -> dict[str, float]:
    """pytrec_eval on files too large for its dicts: 100 conversations at a time, lineage, gold
    and traces read in step (all three are in conversation order). Per query nDCG@k (Source)."""
    measures = {f"ndcg_cut_{k}", f"recall_{k}", "recip_rank"}
    n_q = convs_per_chunk * PER_CONV
    out: dict[str, float] = {}
    if tp.suffix == ".parquet":
        import pyarrow.parquet as pq  # the parquet extra, only for --format parquet

        batches = (b.to_pylist() for b in pq.ParquetFile(tp).iter_batches(batch_size=n_q))
    else:
        def jsonl_batches() -> Iterator[list[dict]]:
            with open(tp, "rb") as fh:
                batch = []
                for line in fh:
                    batch.append(orjson.loads(line))
                    if len(batch) == n_q:
                        yield batch
                        batch = []
                if batch:
                    yield batch
        batches = jsonl_batches()
    with open(lp, "rb") as lf, open(gp, "rb") as gf:
        pending = None
        for rows in batches:
            golds = [orjson.loads(gf.readline()) for _ in rows]
            convs = {g["conversation"] for g in golds}
            by_anchor: dict[tuple[str, str], list[str]] = {}
            while True:
                r = pending or (orjson.loads(line) if (line := lf.readline()) else None)
                pending = None
                if r is None:
                    break
                if r["conversation"] not in convs:
                    pending = r  # the next chunk's first row
                    break
                for a in r["sources"]:
                    by_anchor.setdefault((r["conversation"], a), []).append(r["memory_id"])
            qrels: dict[str, dict[str, int]] = {}
            for g in golds:
                conv = g["conversation"]
                rel = {m: 1 for a in g["anchors"] for m in by_anchor.get((conv, a), ())}
                if rel:
                    qrels[g["query_id"]] = rel
            run = {t["query_id"]: {r["id"]: r["score"] for r in t["results"]} for t in rows}
            ev = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
            out.update((q, v[f"ndcg_cut_{k}"]) for q, v in ev.items())
    return out


def large(n_queries: int, k: int, fmt: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        # written by a child process, so that the generator's memory is not this process's peak
        subprocess.run([sys.executable, __file__, "--generate", tmp, "--queries", str(n_queries),
                        "--k", str(k), "--format", fmt], check=True, env=child_env())
        tp, lp, gp = Path(tmp) / f"traces.{fmt}", Path(tmp) / "lineage.jsonl", \
            Path(tmp) / "gold.jsonl"
        mb = sum(p.stat().st_size for p in (tp, lp, gp)) / 1e6
        print(f"synthetic files: {n_queries:,} queries x {k} ids, {fmt} traces, {mb:,.0f} MB "
              f"({time.perf_counter() - t0:.0f} s to write; peak so far {peak_mb():,.0f} MB)")
        t0 = time.perf_counter()
        rs = score_files(tp, lp, gp, k=k, fmt=fmt)
        t_ours = time.perf_counter() - t0
        print(f"ours, score_files 3 targets x 3 metrics, streamed by chunks of 10,000 queries: "
              f"{t_ours:.1f} s; peak resident memory of this process: {peak_mb():,.0f} MB")
        try:
            import pytrec_eval  # the test extra: the reference
        except ImportError:
            print("pytrec_eval not installed (pip install pytrec-eval-terrier): no ratio")
            return
        t0 = time.perf_counter()
        ev = pytrec_by_conversations(tp, lp, gp, k, pytrec_eval)
        t_theirs = time.perf_counter() - t0
        ours_src = rs.scores["src"]["ndcg"]
        diff = max(abs(ours_src[i] - ev[q]) for i, q in enumerate(rs.qids) if q in ev)
        print(f"pytrec_eval, 1 target, 100 conversations at a time, its dicts built from the "
              f"files: {t_theirs:.1f} s; max |Δ nDCG@{k}| (Source) {diff:.1e}")
        print(f"ratio from files: {t_ours / t_theirs:.2f}")


if __name__ == "__main__":
    main()
