"""(Re)write the shipped vectors of a built-in key: data/embeddings/<key>.<model>.npz.

What ships is exactly what the default run embeds: this script runs `twist run` on the key (the
default systems flat-rag, fact-rag, heuristic and oracle, every track) and again with
`--include-crisis`, in this process, with the built-in embedder, no embedding cache on disk and
no shipped vectors; it records every text the model is run on with the float32 vector it
returned and writes them with both keys' sha256 and the embedder's model id
(retrieval/shipped.py: rows sorted by text key, fixed zip dates, so the same keys on the same
machine give the same bytes). The crisis run adds 96 texts to the 8,625 of TWIST-CS 2.0's
default run (147 KB), so one file serves both. Rewrite the file whenever a key is rebuilt or the
model changes; a file that does not name the loaded key's sha256 is never used.

    PYTHONPATH=src .venv/bin/python scripts/ship_key_vectors.py [--dataset twist-cs-2.0] [--check]

--check writes nothing: it says whether the committed file has the bytes these runs give (exit
1 when not, or when the file is missing). About two minutes on two cores (the model runs once on
every distinct text of each run).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from twistbench.cli import run_cli
from twistbench.datasets.keyfile import read_key
from twistbench.datasets.paths import shipped_vectors_path
from twistbench.datasets.registry import REGISTRY, builtin_key_path
from twistbench.retrieval import dense, embcache, shipped


def embed_default_run(dataset: str, include_crisis: bool) -> dict[str, np.ndarray]:
    """Every text `twist run -d DATASET` runs through the built-in model, with its vector, in
    the order first computed (nothing cached, so each distinct text runs once)."""
    os.environ[embcache.ENV_CACHE] = "off"
    os.environ[shipped.ENV_SWITCH] = "0"
    computed: dict[str, np.ndarray] = {}
    model_run = dense._run

    def recording(texts: list[str]) -> np.ndarray:
        vectors = model_run(texts)
        for text, vector in zip(texts, vectors, strict=True):
            computed.setdefault(text, vector.copy())
        return vectors

    dense._run = recording
    try:
        with tempfile.TemporaryDirectory(prefix="ship-key-vectors-") as out:
            argv = ["run", "-d", dataset, "--out", out, "--no-progress", "--embedder", "builtin"]
            code = run_cli(argv + (["--include-crisis"] if include_crisis else []))
    finally:
        dense._run = model_run
    if code != 0:
        raise SystemExit(f"twist run -d {dataset} failed with exit code {code}")
    return computed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="twist-cs-2.0",
                    choices=sorted(name for name, entry in REGISTRY.items() if entry.key_file))
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed file instead of writing it")
    args = ap.parse_args()
    keys = [builtin_key_path(args.dataset, crisis) for crisis in (False, True)]
    key_sha256s = [read_key(k)[1] for k in keys if k is not None]  # checks each .sha256
    computed: dict[str, np.ndarray] = {}
    for crisis in (False, True):
        for text, vector in embed_default_run(args.dataset, crisis).items():
            computed.setdefault(text, vector)
    model_id = dense.BUILTIN.model_id()
    target = shipped_vectors_path(keys[0], model_id)  # type: ignore[arg-type]
    texts = list(computed)
    vectors = np.stack([computed[t] for t in texts]) if texts else np.zeros((0, dense.DIM))
    with tempfile.TemporaryDirectory(prefix="ship-key-vectors-") as scratch:
        written = shipped.write(Path(scratch) / target.name if args.check else target,
                                model_id=model_id, key_files=[k.name for k in keys if k],
                                key_sha256s=key_sha256s, texts=texts, vectors=vectors)
        size = written.stat().st_size
        same = target.exists() and written.read_bytes() == target.read_bytes()
    print(f"{target.name}: {len(texts)} texts x {vectors.shape[1]} float32, {size:,} bytes; "
          f"keys {', '.join(f'{k.name} ({d[:12]})' for k, d in zip(keys, key_sha256s) if k)}; "
          f"model {model_id}", flush=True)
    if args.check:
        print(f"{target}: {'the same bytes' if same else 'DIFFERS (or is missing)'}")
        sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
