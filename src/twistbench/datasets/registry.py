"""Named datasets: what `twist run --dataset NAME` and `twist trace --dataset NAME` resolve to.

One table. An entry yields a `Dataset` (items for the TWIST tracks and LoCoMo QA) or, for the
long-conversation benchmarks read from the user's files (LongMemEval-S, BEAM: `--data`), an
`AuditCorpus`: `twist trace` traces its queries, `twist run` scores its questions as LoCoMo
QA (plain token F1 and evidence recall; `audit_corpus.qa_dataset_from_corpus`). A dataset
whose inputs are missing (LoCoMo lives on the user's disk) fails only when asked for, with a
clear message.

Versioned corrections (datasets/versions.py) are part of the name: `NAME+errata` applies every
accepted erratum of the key version, `NAME+errata-N` the first N (the dataset's version says
which, and `meta["dataset_name"]` pins N so that a saved run re-loads the same key);
`NAME+audit-1` applies the released LoCoMo audit to a LoCoMo-based dataset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from twistbench.datasets.audit_corpus import (
    corpus_from_dataset,
    files_sha256,
    qa_dataset_from_corpus,
)
from twistbench.datasets.beam import QUESTIONS, find_conversations, load_beam
from twistbench.datasets.demo import demo_dataset
from twistbench.datasets.errata import AUDIT_VERSIONS, pinned_audit
from twistbench.datasets.keyfile import read_key
from twistbench.datasets.locomo import locomo_dataset
from twistbench.datasets.longmemeval import load_longmemeval
from twistbench.datasets.paths import (
    TWIST_B_KEY,
    cs2_key_path,
    cs_key_path,
    data_dir,
    resolve_shared_or_path,
)
from twistbench.datasets.twist_b import load_twist_b
from twistbench.datasets.twist_cs import load_cs_dataset
from twistbench.datasets.twist_locomo import KEY2_VERSION as LOCOMO2_VERSION
from twistbench.datasets.twist_locomo import KEY_NAME as LOCOMO_KEY_NAME
from twistbench.datasets.twist_locomo import load_locomo_dataset
from twistbench.datasets.versions import (
    apply_errata_log,
    errata_path,
    read_errata_log,
    split_errata_name,
)
from twistbench.errors import InputError, pydantic_to_input_error
from twistbench.model import AuditCorpus, Dataset


@dataclass(frozen=True)
class DatasetOptions:
    locomo: Path | None = None  # path of locomo10.json
    errata: str | None = None  # "locomo-audit" or a path to errors.json
    include_crisis: bool = False
    data: Path | None = None  # the benchmark file or folder of an audit corpus
    granularity: str = "turn"  # LongMemEval gold: turn or session
    tier: str | None = None  # BEAM tier, e.g. "1M"


# How an entry's QA answers are scored, in the words `twist list` and the report use.
LOCOMO_SCORER = "official LoCoMo token F1"
PLAIN_SCORER = "plain token F1"  # LoCoMo's single-hop rule for every question (audit_corpus.py)


@dataclass(frozen=True)
class DatasetEntry:
    name: str
    description: str
    needs_locomo: bool
    load: Callable[[DatasetOptions], Dataset | AuditCorpus]
    audit_only: bool = False  # yields an AuditCorpus (queries for `twist trace`), not a Dataset
    needs_data: bool = False  # reads the benchmark from --data
    input_sha256: Callable[[DatasetOptions], str] | None = None  # of --data, for a QA Dataset
    qa_scorer: str = LOCOMO_SCORER  # how its QA answers are scored (the description says so too)
    # The committed key file the entry loads, by include_crisis (TWIST-CS: `load` reads exactly
    # this file); the CLI offers the shipped vectors found beside it. None for the others.
    key_file: Callable[[bool], Path] | None = None


def _cs_entry(name: str, description: str, key_file: Callable[[bool], Path]) -> DatasetEntry:
    """A TWIST-CS key: loads the file `key_file` names, so the two cannot disagree."""
    return DatasetEntry(name, description, False,
                        lambda o: load_cs_dataset(key_file(o.include_crisis),
                                                  include_crisis=o.include_crisis),
                        key_file=key_file)


def _need_locomo(name: str, opts: DatasetOptions) -> Path:
    if opts.locomo is None:
        raise InputError("--locomo", f"dataset {name} is built on LoCoMo: give the path of "
                         "locomo10.json with --locomo PATH", expected="a path to locomo10.json")
    if not Path(opts.locomo).exists():
        raise InputError(str(opts.locomo), "file not found", expected="locomo10.json")
    return Path(opts.locomo)


def _need_data(name: str, opts: DatasetOptions) -> Path:
    if opts.data is None:
        raise InputError("--data", f"--dataset {name} needs --data PATH",
                         expected="the benchmark's file or folder")
    return Path(opts.data)


def _beam_sha256(opts: DatasetOptions) -> str:
    root = _need_data("beam", opts)
    folders = find_conversations(root, opts.tier)
    return files_sha256([p for f in folders for p in (f / "chat.json", f / QUESTIONS)],
                        root=root if root.is_dir() else None)


REGISTRY: dict[str, DatasetEntry] = {
    e.name: e
    for e in [
        _cs_entry("twist-cs-2.0", "TWIST-CS 2.0: six customer-success workspaces written from "
                  "hand-written banks, all four tracks, contrast sets and distractors (crisis "
                  "plants with --include-crisis)", cs2_key_path),
        _cs_entry("twist-cs-1.0", "TWIST-CS 1.0: the first, templated key, kept loadable for "
                  "comparison; six synthetic customer-success workspaces, all "
                  "four tracks (crisis plants with --include-crisis)", cs_key_path),
        DatasetEntry("twist-locomo-1.0", "TWIST items injected into LoCoMo, plus LoCoMo QA "
                     "(needs --locomo)", True,
                     lambda o: load_locomo_dataset(_need_locomo("twist-locomo-1.0", o),
                                                   errata=o.errata,
                                                   include_crisis=o.include_crisis)),
        DatasetEntry("twist-locomo-2.0", "TWIST items written into LoCoMo by hand, with "
                     "contrast sets and distractors, plus LoCoMo QA (needs --locomo)", True,
                     lambda o: load_locomo_dataset(_need_locomo("twist-locomo-2.0", o),
                                                   errata=o.errata,
                                                   include_crisis=o.include_crisis,
                                                   version=LOCOMO2_VERSION)),
        DatasetEntry("twist-b-v1.0", "the public TWIST-v1.0 Track B key (161 drafts) on the "
                     "original LoCoMo conversations (needs --locomo)", True,
                     lambda o: load_twist_b(resolve_shared_or_path(TWIST_B_KEY),
                                            _need_locomo("twist-b-v1.0", o))),
        DatasetEntry("locomo", "LoCoMo QA only (needs --locomo; --errata locomo-audit)", True,
                     lambda o: locomo_dataset(_need_locomo("locomo", o), errata=o.errata)),
        DatasetEntry("locomo+audit-1", "LoCoMo QA with the LoCoMo audit's corrections "
                     "(locomo-audit@9493fb4; the same key as --errata locomo-audit)", True,
                     lambda o: _with_audit("locomo", "audit-1", o)),
        DatasetEntry("demo", "two tiny built-in conversations, one item of each kind", False,
                     lambda o: demo_dataset()),
        DatasetEntry("longmemeval", "LongMemEval-S: one haystack per question; QA "
                     f"({PLAIN_SCORER}, evidence recall) and retrieval traces (needs --data "
                     "longmemeval_s.json; --granularity turn|session)", False,
                     lambda o: load_longmemeval(_need_data("longmemeval", o),
                                                granularity=o.granularity), audit_only=True,
                     needs_data=True,
                     input_sha256=lambda o: files_sha256([_need_data("longmemeval", o)]),
                     qa_scorer=PLAIN_SCORER),
        DatasetEntry("beam", f"BEAM probing questions; QA ({PLAIN_SCORER}, evidence recall) "
                     "and retrieval traces (needs --data a BEAM folder; --tier, e.g. 1M)", False,
                     lambda o: load_beam(_need_data("beam", o), tier=o.tier), audit_only=True,
                     needs_data=True, input_sha256=_beam_sha256, qa_scorer=PLAIN_SCORER),
    ]
}

# What `twist run` and `twist list` offer: every entry (an AuditCorpus runs as its QA).
DATASETS: dict[str, DatasetEntry] = dict(REGISTRY)

DEFAULT_DATASET = "twist-cs-2.0"


def qa_scorer(dataset_name: str) -> str:
    """How a dataset's QA answers are scored, as its registry entry says (a key file or a
    variant such as locomo+audit-1 is LoCoMo-based or LoCoMo-shaped: the official F1)."""
    entry = REGISTRY.get(dataset_name)
    return entry.qa_scorer if entry is not None else LOCOMO_SCORER


def builtin_key_path(name: str, include_crisis: bool = False) -> Path | None:
    """The committed key file a registered dataset name loads (None for any other name, and for
    an entry that names no committed key: see DatasetEntry.key_file)."""
    entry = REGISTRY.get(name)
    return entry.key_file(include_crisis) if entry is not None and entry.key_file else None


def load_dataset(name_or_path: str, opts: DatasetOptions | None = None) -> Dataset:
    """A registered dataset by name, or a key file (twist-key JSON whose payload is a Dataset,
    or a TWIST-LoCoMo key, which needs opts.locomo), optionally with `+errata[-N]` or
    `+audit-1` (module docstring)."""
    opts = opts or DatasetOptions()
    if name_or_path in DATASETS:
        entry = DATASETS[name_or_path]
        ds = entry.load(opts)
        if isinstance(ds, AuditCorpus):
            assert entry.input_sha256 is not None
            return qa_dataset_from_corpus(ds, entry.input_sha256(opts))
        return ds
    errata = split_errata_name(name_or_path)
    if errata is not None:
        return _with_errata_log(errata[0], errata[1], opts)
    base, plus, audit = name_or_path.rpartition("+")
    if plus and audit in AUDIT_VERSIONS:
        return _with_audit(base, audit, opts)
    path = Path(name_or_path)
    if path.suffix == ".json" and path.exists():
        return load_dataset_key(path, opts)
    raise InputError(name_or_path, "unknown dataset",
                     expected=f"one of {', '.join(DATASETS)} or a key file (.json), optionally "
                     "+errata or +errata-N")


def _with_errata_log(base: str, upto: int | None, opts: DatasetOptions) -> Dataset:
    ds = load_dataset(base, opts)
    key_dir = Path(base) if Path(base).suffix == ".json" else data_dir() / "key.json"
    path = errata_path(key_dir, ds.version)
    out = apply_errata_log(ds, read_errata_log(path, ds.name, ds.version), upto, str(path))
    out.meta["dataset_name"] = f"{base}+errata-{out.meta['errata_log']['applied']}"
    return out


def _with_audit(base: str, short: str, opts: DatasetOptions) -> Dataset:
    entry = DATASETS.get(base)
    if entry is None or not entry.needs_locomo or base == "twist-b-v1.0":
        raise InputError(f"{base}+{short}", "the LoCoMo audit corrects LoCoMo QA",
                         expected="a LoCoMo-based dataset: locomo or twist-locomo-1.0/2.0")
    path = pinned_audit(short, _need_locomo(base, opts))
    return entry.load(replace(opts, errata=str(path)))


def load_dataset_key(path: str | Path, opts: DatasetOptions | None = None) -> Dataset:
    doc, digest = read_key(path)
    if doc.get("name") == LOCOMO_KEY_NAME:
        opts = opts or DatasetOptions()
        return load_locomo_dataset(_need_locomo(str(path), opts), key_path=path,
                                   errata=opts.errata, include_crisis=opts.include_crisis)
    payload = dict(doc["payload"])
    payload["key_sha256"] = digest
    try:
        return Dataset.model_validate(payload)
    except ValidationError as exc:
        raise pydantic_to_input_error(str(path), "payload", exc) from exc


AUDIT_CORPORA = ("locomo", "longmemeval", "beam")


def load_audit_corpus(name: str, path: str | Path, *, granularity: str = "turn",
                      tier: str | None = None, errata: str | None = None) -> AuditCorpus:
    """The queries to trace for a benchmark read from the user's file or folder.

    name: "locomo" (path = locomo10.json; `errata` as datasets.locomo.locomo_dataset takes it),
    "longmemeval" (path = longmemeval_s.json; `granularity` "turn" or "session") or "beam"
    (path = a BEAM folder; `tier`, e.g. "1M"). Raises InputError for an unknown name.
    """
    if name not in AUDIT_CORPORA:
        raise InputError("--dataset", f"unknown audit corpus {name!r}", field="dataset",
                         expected=" | ".join(AUDIT_CORPORA))
    opts = DatasetOptions(locomo=Path(path), data=Path(path), errata=errata,
                          granularity=granularity, tier=tier)
    loaded = REGISTRY[name].load(opts)
    return loaded if isinstance(loaded, AuditCorpus) else corpus_from_dataset(loaded)
