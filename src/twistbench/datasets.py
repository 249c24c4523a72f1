"""Named datasets: what `twist run --dataset NAME` resolves to.

Loaders are imported lazily so that listing datasets costs nothing and a dataset whose inputs are
missing (LoCoMo lives on the user's disk) fails only when asked for, with a clear message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from twistbench.errors import InputError, pydantic_to_input_error
from twistbench.model import Dataset


@dataclass(frozen=True)
class DatasetOptions:
    locomo: Path | None = None  # path of locomo10.json
    errata: str | None = None  # "locomo-audit" or a path to errors.json
    include_crisis: bool = False


@dataclass(frozen=True)
class DatasetEntry:
    name: str
    description: str
    needs_locomo: bool
    load: Callable[[DatasetOptions], Dataset]


def data_dir() -> Path:
    """Where committed keys live: the repo's data/ in a checkout, twistbench/_data in a wheel."""
    repo = Path(__file__).resolve().parents[2] / "data"
    if repo.is_dir():
        return repo
    return Path(str(resources.files("twistbench") / "_data"))


def _need_locomo(name: str, opts: DatasetOptions) -> Path:
    if opts.locomo is None:
        raise InputError("--locomo", f"dataset {name} is built on LoCoMo: give the path of "
                         "locomo10.json with --locomo PATH", expected="a path to locomo10.json")
    if not Path(opts.locomo).exists():
        raise InputError(str(opts.locomo), "file not found", expected="locomo10.json")
    return Path(opts.locomo)


def _demo(opts: DatasetOptions) -> Dataset:
    from twistbench.builtin import demo_dataset

    return demo_dataset()


def _cs(opts: DatasetOptions) -> Dataset:
    from twistbench.build.cs_workspace import load_cs_dataset

    return load_cs_dataset(include_crisis=opts.include_crisis)


def _locomo_plain(opts: DatasetOptions) -> Dataset:
    from twistbench.corpus.locomo import locomo_dataset

    return locomo_dataset(_need_locomo("locomo", opts), errata=opts.errata)


def _twist_locomo(opts: DatasetOptions) -> Dataset:
    from twistbench.build.locomo_inject import load_locomo_dataset

    return load_locomo_dataset(_need_locomo("twist-locomo-1.0", opts), errata=opts.errata,
                               include_crisis=opts.include_crisis)


def _twist_locomo2(opts: DatasetOptions) -> Dataset:
    from twistbench.itemgen.locomo2 import load_locomo2_dataset

    return load_locomo2_dataset(_need_locomo("twist-locomo-2.0", opts), errata=opts.errata,
                                include_crisis=opts.include_crisis)


def _twist_b(opts: DatasetOptions) -> Dataset:
    from twistbench.corpus.twist_b import load_twist_b

    key = resolve_shared_or_path("twist-b/track_b_v1.0_test.jsonl")
    return load_twist_b(key, _need_locomo("twist-b-v1.0", opts))


def resolve_shared_or_path(rel: str) -> Path:
    """A public key that is not ours to redistribute: looked up beside the checkout in
    ../shared/data (TWIST_SHARED_DATA overrides)."""
    import os

    base = Path(os.environ.get("TWIST_SHARED_DATA",
                               Path(__file__).resolve().parents[3] / "shared" / "data"))
    path = base / rel
    if not path.exists():
        raise InputError(str(path), "public key file not found",
                         expected="set TWIST_SHARED_DATA to the folder holding " + rel)
    return path


DATASETS: dict[str, DatasetEntry] = {
    e.name: e
    for e in [
        DatasetEntry("twist-cs-1.0", "TWIST-CS: six synthetic customer-success workspaces, all "
                     "four tracks (crisis plants with --include-crisis)", False, _cs),
        DatasetEntry("twist-locomo-1.0", "TWIST items injected into LoCoMo, plus LoCoMo QA "
                     "(needs --locomo)", True, _twist_locomo),
        DatasetEntry("twist-locomo-2.0", "TWIST items written into LoCoMo by hand, with "
                     "contrast sets and distractors, plus LoCoMo QA (needs --locomo; refused "
                     "until all ten conversations are written)", True, _twist_locomo2),
        DatasetEntry("twist-b-v1.0", "the public TWIST-v1.0 Track B key (161 drafts) on the "
                     "original LoCoMo conversations (needs --locomo)", True, _twist_b),
        DatasetEntry("locomo", "LoCoMo QA only (needs --locomo; --errata locomo-audit)", True,
                     _locomo_plain),
        DatasetEntry("demo", "two tiny built-in conversations, one item of each kind", False,
                     _demo),
    ]
}

DEFAULT_DATASET = "twist-cs-1.0"


def load_dataset(name_or_path: str, opts: DatasetOptions | None = None) -> Dataset:
    """A registered dataset by name, or a key file (twist-key JSON whose payload is a Dataset)."""
    opts = opts or DatasetOptions()
    if name_or_path in DATASETS:
        return DATASETS[name_or_path].load(opts)
    path = Path(name_or_path)
    if path.suffix == ".json" and path.exists():
        return load_dataset_key(path)
    raise InputError(name_or_path, "unknown dataset",
                     expected=f"one of {', '.join(DATASETS)} or a key file (.json)")


def load_dataset_key(path: str | Path) -> Dataset:
    from twistbench.build.key import read_key

    doc, digest = read_key(path)
    payload = dict(doc["payload"])
    payload["key_sha256"] = digest
    try:
        return Dataset.model_validate(payload)
    except ValidationError as exc:
        raise pydantic_to_input_error(str(path), "payload", exc) from exc
