"""Does embedding use both cores? Wall time, CPU time and cores used (CPU / wall) of the built-in
MiniLM on TWIST-CS 2.0 turns, the way `dense.embed` runs it and three ways it could.

Configurations, interleaved in each repetition (medians printed, with the ratio of wall and CPU
to the current one and whether the vectors are bit-identical to its):
- current: one session, 2 intra-op threads, no spinning, batches of 16 (retrieval/dense.py);
- spinning: the same with intra-op threads busy-waiting between operators;
- batch 64: the current session with batches four times larger;
- two batches at once: a session with 1 intra-op thread, two Python threads each running
  batches of 16 (onnxruntime releases the GIL), parallel across batches instead of inside one.

On a machine other processes load, no configuration can use cores they hold: compare the CPU
time, and the cores used against the load average printed.

Run: PYTHONPATH=src .venv/bin/python benchmarks/bench_embed_cores.py [--n 1200] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from twistbench.datasets.paths import cs2_key_path
from twistbench.datasets.twist_cs import load_cs_dataset
from twistbench.retrieval import dense, turn_text


def embedder(intra_op_threads: int, spinning: bool) -> dense.OnnxEmbedder:
    """The built-in model's runner; its session rebuilt when the settings differ from dense's."""
    model = dense.OnnxEmbedder(dense.BUILTIN.label, dense.model_path, dense.tokenizer_path,
                               dim=dense.DIM)
    model._load()
    if (intra_op_threads, spinning) != (dense.INTRA_OP_THREADS, False):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = intra_op_threads
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", str(int(spinning)))
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        model._session = ort.InferenceSession(str(dense.model_path()), sess_options=opts,
                                              providers=["CPUExecutionProvider"])
    return model


def batches(texts: list[str], size: int) -> list[list[str]]:
    ordered = sorted(texts, key=len)  # as dense.embed orders them
    return [ordered[i:i + size] for i in range(0, len(ordered), size)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1200, help="distinct turns to embed")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    ds = load_cs_dataset(cs2_key_path())
    turns = sorted({turn_text(ev) for conv in ds.conversations for ev in conv.events})
    texts = random.Random(18).sample(turns, min(args.n, len(turns)))
    current, spinning, single = embedder(2, False), embedder(2, True), embedder(1, False)

    def serial(model: dense.OnnxEmbedder, size: int) -> Callable[[], np.ndarray]:
        return lambda: np.concatenate([model.run(b) for b in batches(texts, size)])

    def two_at_once() -> np.ndarray:
        with ThreadPoolExecutor(2) as pool:
            return np.concatenate(list(pool.map(single.run, batches(texts, 16))))

    configs: dict[str, Callable[[], np.ndarray]] = {
        "current (2 intra-op threads, no spinning, batch 16)": serial(current, 16),
        "spinning": serial(spinning, 16),
        "batch 64": serial(current, 64),
        "two batches at once (1 intra-op thread each)": two_at_once,
    }
    reference = configs[next(iter(configs))]()  # also warms every session up
    for run in list(configs.values())[1:]:
        run()
    walls: dict[str, list[float]] = {k: [] for k in configs}
    cpus: dict[str, list[float]] = {k: [] for k in configs}
    same: dict[str, bool] = {}
    loads: list[float] = []
    for _ in range(args.repeats):
        for name, run in configs.items():
            loads.append(os.getloadavg()[0])
            c0, t0 = time.process_time(), time.perf_counter()
            vectors = run()
            walls[name].append(time.perf_counter() - t0)
            cpus[name].append(time.process_time() - c0)
            same[name] = np.array_equal(vectors, reference)
    base_wall = statistics.median(walls[next(iter(configs))])
    base_cpu = statistics.median(cpus[next(iter(configs))])
    print(f"{len(texts)} turns, {os.cpu_count()} cpus, load average {min(loads):.1f} to "
          f"{max(loads):.1f}, medians of {args.repeats}:")
    for name in configs:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        print(f"  {name}: wall {wall:.2f} s, CPU {cpu:.2f} s, cores used {cpu / wall:.2f}, "
              f"ratio wall {wall / base_wall:.2f}, CPU {cpu / base_cpu:.2f}, vectors "
              f"{'identical' if same[name] else 'DIFFER'}")


if __name__ == "__main__":
    main()
