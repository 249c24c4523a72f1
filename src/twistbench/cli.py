"""The `twist` command. Thin: parse options, call one function per verb, print.

Exit codes: 0 success; 1 the run finished but failed a check (error rate above --max-error-rate,
a conformance failure); 2 bad input (a clear message naming file, record, field).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperGroup

import twistbench
from twistbench.datasets.paths import cs2_key_path, shipped_vectors_files
from twistbench.defaults import (
    DEFAULT_ANSWERER,
    DEFAULT_JUDGE,
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_MIN_KAPPA,
    TIAP_BOOTSTRAP_SEED,
    TIAP_RESAMPLES,
)
from twistbench.errors import InputError
from twistbench.sanitize import Redactor, control_free, plain

if TYPE_CHECKING:
    from twistbench.validation.shortcuts import BuildGate

app = typer.Typer(add_completion=False, no_args_is_help=False, rich_markup_mode=None,
                  help="twistbench: TWIST tracks and TIAP audits for conversational memory.")
build_app = typer.Typer(add_completion=False, help="Build item sets (keys).")
app.add_typer(build_app, name="build")


class _AuditGroup(TyperGroup):
    """`twist audit TRACES...` audits trace files; `twist audit native|labels` are subcommands."""
    def parse_args(self, ctx, args):  # noqa: ANN001, ANN201 - click's signature
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["traces", *args]
        return super().parse_args(ctx, args)


audit_app = typer.Typer(add_completion=False, cls=_AuditGroup,
                        help="TIAP: rescore saved retrieval traces under Raw / Source / Canonical "
                        "targets. `twist audit TRACES...`, `twist audit native`, "
                        "`twist audit labels`. Ranking of a trace: in JSONL the results list is "
                        "the ranking (equal scores keep the list order); in a TREC run the rank "
                        "column is ignored and ids are sorted by score descending, ties by docid "
                        "descending, as trec_eval and pytrec_eval do.")
app.add_typer(audit_app, name="audit")
annotate_app = typer.Typer(add_completion=False, help="Blind double annotation of a key "
                           "(whitepaper §6.1): export packets, measure agreement, adjudicate.")
app.add_typer(annotate_app, name="annotate")
errata_app = typer.Typer(add_completion=False, help="Accepted disputes of a key version, and "
                         "the next version with them folded in.")
app.add_typer(errata_app, name="errata")
judge_app = typer.Typer(add_completion=False, help="Judges of free-text answers: decoy "
                        "calibration (whitepaper §6.2).")
app.add_typer(judge_app, name="judge")
console = Console(soft_wrap=True)  # Markdown tables printed as-is, never re-wrapped
# soft_wrap: an error line names a path; wrapping it would break copy-paste and grep.
err = Console(stderr=True, soft_wrap=True)


SystemOpt = Annotated[list[str] | None, typer.Option(
    "--system", "-s", help="A built-in system name (see `twist list`) or module:Class. "
    "Repeat for several. Default: flat-rag, fact-rag, heuristic, oracle.")]
OptionOpt = Annotated[list[str] | None, typer.Option(
    "-S", help="A system option key=value (repeatable). name.key=value applies to one system "
    "only. Options named like secrets (api_key, token) are never written to disk.")]
DatasetOpt = Annotated[str | None, typer.Option(
    "--dataset", "-d", help="Dataset name (see `twist list`) or a key file. Default: twist-cs-2.0 "
    "(the built-in demo when no committed key is found).")]
LocomoOpt = Annotated[Path | None, typer.Option(
    "--locomo", help="Path of locomo10.json, for the LoCoMo-based datasets.")]
ErrataOpt = Annotated[str | None, typer.Option(
    "--errata", help="Errata overlay for LoCoMo QA: 'locomo-audit' or a path to errors.json.")]
CrisisOpt = Annotated[bool, typer.Option(
    "--include-crisis", help="Include the opt-in crisis plants (content warning: self-harm-"
    "adjacent phrasings).")]
DataOpt = Annotated[Path | None, typer.Option(
    help="For --dataset longmemeval or beam: the benchmark file (longmemeval_s.json) or BEAM "
    "folder.")]
GranularityOpt = Annotated[str, typer.Option(
    help="LongMemEval evidence: turn (has_answer turns) or session (every turn of an answer "
    "session).")]
TierOpt = Annotated[str | None, typer.Option(help="BEAM tier, e.g. 1M (default: every tier "
                                             "found).")]
EmbedderOpt = Annotated[str, typer.Option(
    "--embedder", help="Embeddings of the dense retrievers: builtin (MiniLM-L6 int8 ONNX), "
    "onnx:DIR (a local ONNX sentence-embedding model: model.onnx + tokenizer.json) or "
    "openai:MODEL (an OpenAI-compatible /v1/embeddings endpoint: TWIST_EMBED_BASE_URL, else "
    "TWIST_LLM_BASE_URL).")]
AllowGatesOpt = Annotated[bool, typer.Option(
    "--allow-failing-gates", help="Write the key even when it fails a shortcut-audit gate; the "
    "results go into its metadata (2.0+ keys) or beside it as <key>.gates.json (1.0 keys, whose "
    "bytes stay those released).")]


def _version(value: bool) -> None:
    if value:
        console.print(f"twistbench {twistbench.__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool | None, typer.Option(
        "--version", callback=_version, is_eager=True,
        help="Print the twistbench version and exit.")] = None,
) -> None:
    """twistbench: TWIST tracks and TIAP audits for conversational memory."""


# Secrets of the options given on this command line (and of the environment): every message
# printed goes through it. Replaced once a command has parsed its -S options.
_redactor = Redactor({})


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point. Bad input (an InputError, a malformed option) is one line on
    stderr and exit code 2; an unexpected failure is one line and exit code 3 (TWIST_DEBUG=1
    shows the traceback). Never a traceback for the user."""
    sys.exit(run_cli(argv))


def run_cli(argv: list[str] | None = None) -> int:
    """Run the `twist` command with `argv` (default sys.argv[1:]); returns the exit code."""
    global _redactor
    _redactor = Redactor({})
    try:
        rv = app(args=argv, prog_name="twist", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except InputError as exc:
        _error_line(str(exc))
        return 2
    except typer.TyperException as exc:  # typer's (vendored) click: unknown option, bad value
        message = getattr(exc, "format_message", None)
        _error_line(message() if callable(message) else str(exc))
        code = getattr(exc, "exit_code", 2)
        return code if isinstance(code, int) else 2
    except (typer.Abort, KeyboardInterrupt):
        _error_line("interrupted")
        return 130
    except Exception as exc:  # noqa: BLE001 - the last guard: a line, not a traceback
        if os.environ.get("TWIST_DEBUG"):
            raise
        _error_line(f"internal error: {type(exc).__name__}: {exc} (please report it; "
                    "TWIST_DEBUG=1 shows the traceback)")
        return 3


def _error_line(text: str, label: str = "error:") -> None:
    """One line on stderr: secrets redacted, markup and control characters made harmless."""
    one = " ".join(_redactor.text(text).split())
    err.print(f"[bold red]{label}[/] {plain(one)}", highlight=False)


def _fail_input(exc: InputError) -> None:
    _error_line(str(exc))
    raise typer.Exit(2)


def _use_options(per: dict[str, dict[str, str]]) -> None:
    """Redact the secrets of these -S options in everything printed from now on."""
    global _redactor
    merged = {f"{s}.{k}": v for s, opts in per.items() for k, v in opts.items()}
    merged.update({k: v for opts in per.values() for k, v in opts.items()})
    _redactor = Redactor(merged)


def _use_embedder(spec: str) -> tuple[str | None, str]:
    """Make `spec` the embedder of this process (and of its spawned children); InputError for a
    bad spec or model directory. Returns (the model id the run fingerprint covers, None for the
    built-in model, whose runs predate the field; the model id the manifest records)."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.retrieval import dense
    model_id = dense.use_embedder(spec.strip()).model_id()
    return (None if spec.strip() == "builtin" else model_id), model_id


def _positive(value: float, flag: str) -> float:
    """A finite number above zero (a timeout): nan, inf, 0 and negatives are refused."""
    if not math.isfinite(value) or value <= 0:
        raise InputError(flag, f"is {value!r}", field=flag.lstrip("-"),
                         expected="a finite number above 0")
    return value


def _fraction(value: float, flag: str) -> float:
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise InputError(flag, f"is {value!r}", field=flag.lstrip("-"),
                         expected="a number from 0 to 1")
    return value


def _at_least(value: int, low: int, flag: str) -> int:
    if value < low:
        raise InputError(flag, f"is {value}", field=flag.lstrip("-"), expected=f"at least {low}")
    return value


# Upper bounds of the audit's counts: far above any real use (TIAP: 3,000 resamples, k = 60),
# low enough that 10**30 is one line and exit 2, not an array numpy cannot allocate or a k that
# comes back from the trace files as a float.
MAX_RESAMPLES = 100_000
MAX_K = 1_000_000


def _at_most(value: int, high: int, flag: str) -> int:
    if value > high:
        raise InputError(flag, f"is {value}", field=flag.lstrip("-"), expected=f"at most {high}")
    return value


def _kappa(value: float, flag: str) -> float:
    if not math.isfinite(value) or not -1 <= value <= 1:
        raise InputError(flag, f"is {value!r}", field=flag.lstrip("-"),
                         expected="a kappa from -1 to 1")
    return value


@dataclass(frozen=True)
class _PathState:
    exists: bool
    is_dir: bool


def _stat_path(path: Path, flag: str) -> _PathState:
    """Whether `path` exists and is a folder; InputError for a path the system refuses to look
    up at all (a name longer than the file system allows, a NUL byte), which pathlib raises
    as OSError or ValueError instead of answering False."""
    try:
        return _PathState(path.exists(), path.is_dir())
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(str(path), f"not a usable path: {reason}", field=flag.lstrip("-"),
                         expected="a path the file system accepts") from None


def _output_dir(path: Path, flag: str) -> Path:
    """A folder we will be able to write into; InputError for a file or an unwritable place.
    Nothing is created here (an error later must not leave an empty folder behind): the
    nearest existing folder on the way is probed with a temporary file."""
    if _stat_path(path, flag).exists and not path.is_dir():
        raise InputError(str(path), "exists and is not a folder", field=flag.lstrip("-"),
                         expected="a folder (or a path where one can be created)")
    base = path
    while not base.exists() and base.parent != base:
        base = base.parent
    if not base.is_dir():
        raise InputError(str(path), f"{base} is not a folder", field=flag.lstrip("-"),
                         expected="a path below folders only")
    try:
        fd, probe = tempfile.mkstemp(dir=base, prefix=".twist-write-test-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(str(path), f"cannot write here: {exc.strerror or exc}",
                         field=flag.lstrip("-"), expected="a writable folder") from None
    return path


@contextmanager
def _no_empty_folders_left(*paths: Path | None) -> Iterator[None]:
    """When the block fails (bad input found late, an interrupt), the folders it created for
    `paths` are removed again if they are empty: a failed command leaves no empty folder behind.
    Folders that existed before, and any folder holding a file, are kept."""
    created = []
    for path in paths:
        top = None
        for p in (path, *path.parents) if path is not None else ():
            if p.exists():
                break
            top = p
        if top is not None:
            created.append(top)
    try:
        yield
    except BaseException:
        for top in created:
            if top.is_dir():
                for folder, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
                    with contextlib.suppress(OSError):  # not empty: kept
                        os.rmdir(folder)
        raise


def _output_file(path: Path, flag: str) -> Path:
    """A file path whose folder is writable and that is not a folder itself."""
    if _stat_path(path, flag).is_dir:
        raise InputError(str(path), "is a folder", field=flag.lstrip("-"), expected="a file path")
    _output_dir(path.parent if str(path.parent) else Path("."), flag)
    return path


def parse_options(pairs: list[str] | None, systems: list[str]) -> dict[str, dict[str, str]]:
    """-S key=value / -S system.key=value into per-system option dicts."""
    per: dict[str, dict[str, str]] = {s: {} for s in systems}
    for n, pair in enumerate(pairs or [], start=1):
        if "=" not in pair:  # the text is not echoed: it may be a mistyped secret
            raise InputError("-S", f"option #{n} has no '='", expected="key=value")
        key, value = pair.split("=", 1)
        target = [s for s in systems if key.startswith(s + ".")]
        if target:
            per[target[0]][key[len(target[0]) + 1:]] = value
        else:
            for s in systems:
                per[s][key] = value
    return per


def _dataset(name: str | None, locomo: Path | None, errata: str | None, crisis: bool,
             data: Path | None = None, granularity: str = "turn", tier: str | None = None):
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.datasets.locomo import dataset_notes
    from twistbench.datasets.registry import DEFAULT_DATASET, DatasetOptions, load_dataset
    opts = DatasetOptions(locomo=locomo, errata=errata, include_crisis=crisis, data=data,
                          granularity=granularity, tier=tier)
    if name is None:
        name = DEFAULT_DATASET
        if not cs2_key_path().exists():
            err.print("note: no committed TWIST-CS key found; running the built-in demo dataset")
            name = "demo"
    source = {"name": name, "locomo": str(locomo) if locomo else None, "errata": errata,
              "include_crisis": crisis}
    if data is not None:
        source.update({"data": str(data), "granularity": granularity, "tier": tier})
    ds = load_dataset(name, opts)
    _offer_shipped_vectors(name, ds.key_sha256)
    source["name"] = ds.meta.get("dataset_name", name)  # +errata pinned to its level
    for line in dataset_notes(ds):  # sha check, defects handled, re-validation, errata
        err.print(f"note: {line}", highlight=False, markup=False)
    return ds, source


def _offer_shipped_vectors(name: str, key_sha256: str) -> None:
    """A built-in key's committed vectors join the embedding lookup (retrieval/shipped.py): used
    only by the embedder that wrote them, and only if they were written from this key (the
    plain key and its crisis variant share one file, named after the plain key)."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.datasets.registry import builtin_key_path
    from twistbench.retrieval import shipped
    key = builtin_key_path(name)
    for path in shipped_vectors_files(key) if key is not None else []:
        shipped.offer(path, key_sha256)


@app.command()
def run(
    dataset: DatasetOpt = None,
    system: SystemOpt = None,
    option: OptionOpt = None,
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Run folder root; each system gets a subfolder. Running again "
        "resumes.")] = Path("runs/default"),
    track: Annotated[list[str] | None, typer.Option(
        "--track", "-t",
        help="Only these tracks (A, B, C, D, locomo). Default: all that apply.")] = None,
    conversation: Annotated[list[str] | None, typer.Option(
        "--conversation", help="Only these conversation ids (repeatable).")] = None,
    locomo: LocomoOpt = None,
    errata: ErrataOpt = None,
    include_crisis: CrisisOpt = False,
    data: DataOpt = None,
    granularity: GranularityOpt = "turn",
    tier: TierOpt = None,
    timeout: Annotated[float, typer.Option(help="Seconds allowed per system call.")] = 30.0,
    ingest_timeout: Annotated[float, typer.Option(
        help="Seconds allowed per ingested session.")] = 300.0,
    max_error_rate: Annotated[float, typer.Option(
        help="Exit non-zero when the share of items that errored exceeds this (0 to 1).")] = 0.0,
    force_new: Annotated[bool, typer.Option(
        "--force-new", help="Discard an existing run in the folder and start over.")] = False,
    seed: Annotated[int, typer.Option(help="Seed recorded in the manifest and given to "
                                      "stochastic parts.")] = 1337,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    judge: Annotated[str, typer.Option(
        "--judge", help="Judge of free-text answers (Track C, LoCoMo J): structural (no model) "
        "or llm (the JUDGE role's endpoint), an installed plugin, or module:Class.")
    ] = DEFAULT_JUDGE,
    answerer: Annotated[str, typer.Option(
        "--answerer", help="What answers a recall that returns memories: extractive (offline, "
        "no model) or llm (the ANSWERER role's endpoint), a plugin, or module:Class.")
    ] = DEFAULT_ANSWERER,
    workers: Annotated[int, typer.Option(
        "--workers", help="Conversations driven at once, each worker with its own instance "
        "of the system (one shared instance if the system is thread_safe).")] = 1,
    retry_errors: Annotated[bool, typer.Option(
        "--retry-errors", help="In an existing run folder, ask only the items that errored "
        "again (their conversations are replayed; finished items are not re-asked).")
    ] = False,
    isolate: Annotated[str, typer.Option(
        help="Where the system runs: 'thread' (this process; a timed-out call is abandoned "
        "and the system rebuilt) or 'process' (a child process, killed on timeout).")] = "thread",
    max_output_bytes: Annotated[int, typer.Option(
        help="Largest output of one call, as JSON; a larger one is an error, not stored.")
    ] = DEFAULT_MAX_OUTPUT_BYTES,
    label: Annotated[list[str] | None, typer.Option(
        "--label", help="Name of this configuration in reports and of its run folder; one per "
        "--system, in order. Default: the system's name.")] = None,
    embedder: EmbedderOpt = "builtin",
) -> None:
    """Run systems through the TWIST tracks and print the profile of every run under -o."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.answerers import make_answerer
    from twistbench.judges import make_judge
    from twistbench.report.runs import find_sources, record_run_order
    from twistbench.retrieval import dense
    from twistbench.runs.runner import RunSettings, check_selection, run_system
    from twistbench.systems import (
        DEFAULT_SYSTEMS,
        build_system,
        check_system,
        declared_name,
        make_system,
    )
    from twistbench.systems import REGISTRY as SYSTEM_REGISTRY
    failed = []
    try:
        _positive(timeout, "--timeout")
        _positive(ingest_timeout, "--ingest-timeout")
        _fraction(max_error_rate, "--max-error-rate")
        _at_least(seed, 0, "--seed")
        _at_least(max_output_bytes, 1, "--max-output-bytes")
        if isolate not in ("thread", "process"):
            raise InputError("--isolate", f"unknown isolation {isolate!r}", field="isolate",
                             expected="thread or process")
        _at_least(workers, 1, "--workers")
        embedder_fp, embedder_id = _use_embedder(embedder)
        systems = system or list(DEFAULT_SYSTEMS)
        labels = _labels(label, systems)
        per = parse_options(option, systems)
        _use_options(per)
        judge_obj = make_judge(judge)
        answerer_obj = make_answerer(answerer)
        ds, source = _dataset(dataset, locomo, errata, include_crisis, data, granularity, tier)
        out = _output_dir(out, "--out")
        settings = RunSettings(tracks=track, timeout_s=timeout, ingest_timeout_s=ingest_timeout,
                               seed=seed, force_new=force_new, conversations=conversation,
                               progress=progress, isolate=isolate,
                               max_output_bytes=max_output_bytes, workers=workers,
                               retry_errors=retry_errors, embedder=embedder_fp,
                               embedder_id=embedder_id)
        # every selection and system is checked before the first run writes anything
        check_selection(ds, settings)
        for spec in systems:
            check_system(spec, per[spec])
        _refuse_shared_folders(out, systems, labels)
        with _no_empty_folders_left(out):
            used: dict[Path, str] = {}
            vectors_before = dense.vector_sources()
            for spec, name in zip(systems, labels):
                # A picklable factory: rebuilds the system after a timeout, or in the child
                # process.
                factory = functools.partial(build_system, spec, per[spec])
                if isolate == "process":
                    # the system is built only in the child: the folder follows the name its
                    # class declares (its spec when it declares none)
                    sys_obj = None
                    entry = SYSTEM_REGISTRY.get(spec)
                    gold = bool(entry and entry.gold_channel)
                    default_name = declared_name(spec) or spec
                else:
                    sys_obj, entry = make_system(spec, per[spec])
                    gold = entry.gold_channel
                    default_name = str(getattr(sys_obj, "name", spec))
                folder = out / run_folder_name(name or default_name)
                if folder in used:
                    raise InputError("--system", f"{spec} and {used[folder]} would share the "
                                     f"run folder {folder}", expected="a --label for each system")
                used[folder] = spec
                outcome = run_system(ds, sys_obj, folder, spec=spec, options=per[spec],
                                     gold_channel=gold, settings=settings, judge=judge_obj,
                                     dataset_source=source, factory=factory, label=name,
                                     answerer=answerer_obj)
                record_run_order(out, folder)
                for line in outcome.notes:
                    err.print(f"note: {plain(line)}", markup=False, highlight=False)
                note = (f"{outcome.items} items ({outcome.new_items} new, {outcome.skipped} "
                        f"resumed), {outcome.errors} errors")
                console.print(f"[bold]{plain(outcome.system)}[/]: {note} -> {plain(folder)}",
                              highlight=False)
                if outcome.error_rate > max_error_rate:
                    failed.append(f"{outcome.system}: error rate {outcome.error_rate:.3f} > "
                                  f"{max_error_rate:g}")
            if isolate == "thread":  # a child process counts its own
                _note_vector_sources(vectors_before)
            # the report covers every run under the root, earlier invocations' too (run order)
            _print_report(find_sources([out]).runs, out)
    except InputError as exc:
        _fail_input(exc)
    if failed:
        for f in failed:
            _error_line(f, label="failed:")
        raise typer.Exit(1)


def _note_vector_sources(before: dict[str, int]) -> None:
    """One note on where the run's vectors came from (counts since `before`), when it embedded
    anything."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.retrieval import dense
    sources = {k: n - before[k] for k, n in dense.vector_sources().items()}
    if any(sources.values()):
        err.print(f"note: vectors of {sum(sources.values()):,} texts: {sources['shipped']:,} "
                  f"shipped with the key, {sources['disk cache']:,} from the embedding cache, "
                  f"{sources['computed']:,} computed by the model", highlight=False)


def _labels(labels: list[str] | None, systems: list[str]) -> list[str | None]:
    """One label per system (None: named after the system); InputError on a count mismatch or
    a system given twice without labels (its runs would share a folder)."""
    if labels:
        if len(labels) != len(systems):
            raise InputError("--label", f"{len(labels)} label(s) for {len(systems)} system(s)",
                             expected="one --label per --system, in order")
        _refuse_repeated_labels(labels)
        by_folder: dict[str, list[str]] = {}
        for x in labels:
            by_folder.setdefault(run_folder_name(x), []).append(x)
        for folder, same in by_folder.items():
            if len(same) > 1:  # refused before any system runs
                raise InputError("--label", f"labels {' and '.join(map(repr, same))} would "
                                 f"share the run folder {folder}",
                                 expected="labels that differ in a letter or digit")
        return list(labels)
    if len(set(systems)) != len(systems):
        raise InputError("--system", "the same system twice",
                         expected="distinct systems, or a --label for each")
    return [None] * len(systems)


def _refuse_repeated_labels(labels: list[str] | None) -> None:
    """InputError naming the first label given twice (its runs' rows could not be told
    apart; `twist run` would also give them one folder)."""
    seen: set[str] = set()
    for x in labels or []:
        if x in seen:
            raise InputError("--label", f"label {x!r} given twice", expected="distinct labels")
        seen.add(x)


def _refuse_shared_folders(out: Path, systems: list[str], labels: list[str | None]) -> None:
    """Two systems whose run folders would be one (their labels, else the names their classes
    declare), refused before the first runs; the run loop checks again by the built systems'
    names."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.systems import declared_name
    seen: dict[Path, str] = {}
    for spec, name in zip(systems, labels):
        folder = out / run_folder_name(name or declared_name(spec) or spec)
        if folder in seen:
            raise InputError("--system", f"{spec} and {seen[folder]} would share the run "
                             f"folder {folder}", expected="a --label for each system")
        seen[folder] = spec


def run_folder_name(name: str) -> str:
    """A run folder named like its row in the report: the label or the system's name, with
    anything but letters, digits, '.', '_' and '-' replaced by '-'."""
    slug = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in name).strip(".-")
    return slug or "run"


def _print_report(folders: list[Path], out: Path | None, fmt: str = "md",
                  locomo: Path | None = None, html: Path | None = None,
                  labels: list[str] | None = None, audits: list[Path] | None = None) -> None:
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.report.runs import report_runs
    _emit_report(report_runs(folders, locomo=locomo, labels=labels, audits=audits or []), out,
                 fmt, html)


def _write(path: Path, text: str) -> Path:
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.datasets.keyfile import atomic_write_bytes
    atomic_write_bytes(path, text.encode("utf-8"))
    return path


def _emit_report(rep, out: Path | None, fmt: str,  # noqa: ANN001 - RunsReport
                 html: Path | None = None) -> None:
    """Print the profile; with `out`, also write report.md (with the profile pictures),
    report.json, report.html and profile PNGs there; with `html`, the HTML report there."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.report.plots import plot_profile
    written: list[Path] = []
    if out is not None:
        out = _output_dir(out, "--out")
        out.mkdir(parents=True, exist_ok=True)
        pngs = [plot_profile(p, out / f"profile{'' if i == 0 else i + 1}.png",
                             latencies=rep.views(p).latencies)
                for i, p in enumerate(rep.profiles)]
        written += [_write(out / "report.md", rep.markdown_with_images([p.name for p in pngs])),
                    _write(out / "report.json",
                           json.dumps(rep.data, indent=2, sort_keys=True) + "\n"),
                    _write(out / "report.html", _html(rep))] + pngs
    if html is not None:
        html = _output_file(html, "--html")
        html.parent.mkdir(parents=True, exist_ok=True)
        written.append(_write(html, _html(rep)))
    if fmt == "json":
        sys.stdout.write(json.dumps(rep.data, indent=2, sort_keys=True) + "\n")
    else:
        rep.print(console, written=[str(w) for w in written])


def _check_report_paths(out: Path, html: Path) -> None:
    """--html must not collide with what -o writes (found only when writing, after -o has been
    written): not the folder itself or a folder above it, not one of its files (report.html
    aside: the same page) and not below one of them."""
    out_abs, html_abs = out.resolve(), html.resolve()
    inside = html_abs.relative_to(out_abs).parts if html_abs.is_relative_to(out_abs) else ()
    first = inside[0] if inside else ""
    written = first in ("report.md", "report.json") or (
        first.startswith("profile") and first.endswith(".png"))  # profile.png, profile2.png...
    if (html_abs == out_abs or out_abs.is_relative_to(html_abs) or written
            or (first == "report.html" and len(inside) > 1)):
        raise InputError(str(html), f"collides with what --out writes in {out}", field="html",
                         expected="a file outside --out, or report.html in it (written there "
                         "anyway)")


def _html(rep) -> str:  # noqa: ANN001 - RunsReport
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.report.html import render_html
    names = ", ".join(dict.fromkeys(p.dataset for p in rep.profiles))
    return render_html(rep, title=f"twistbench report — {names}" if names else
                       "twistbench report")


@app.command()
def report(
    runs: Annotated[list[Path], typer.Argument(
        help="Run folders, run roots (every run folder under them, in run order) or TIAP audit "
        "folders (audit.json: their score shifts join the HTML report).")],
    format: Annotated[str, typer.Option("--format", "-f", help="md or json.")] = "md",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Also write report.md, "
                                             "report.json, report.html and profile PNGs into "
                                             "this folder.")] = None,
    html: Annotated[Path | None, typer.Option(
        "--html", help="Write the self-contained HTML report (profile, plots, item browser) "
        "to this file.")] = None,
    label: Annotated[list[str] | None, typer.Option(
        "--label", help="Names for the runs in the report, one per run folder in order "
        "(default: each run's label or system name).")] = None,
    locomo: LocomoOpt = None,
) -> None:
    """Re-score saved runs (no system is called) and print the profile."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.report.runs import find_sources
    if format not in ("md", "json"):
        _fail_input(InputError("--format", f"unknown format {format!r}", expected="md or json"))
    try:
        _refuse_repeated_labels(label)  # before anything is read or written
        if out is not None:
            _output_dir(out, "--out")
        if html is not None:
            _output_file(html, "--html")
        if out is not None and html is not None:
            _check_report_paths(out, html)
        src = find_sources(runs)
        with _no_empty_folders_left(out, html.parent if html is not None else None):
            _print_report(src.runs, out, format, locomo, html=html, labels=label,
                          audits=src.audits)
    except InputError as exc:
        _fail_input(exc)


@app.command()
def compare(
    run_1: Annotated[Path, typer.Argument(help="First run folder (one system).")],
    run_2: Annotated[Path, typer.Argument(help="Second run folder, same key.")],
    format: Annotated[str, typer.Option("--format", "-f", help="md or json.")] = "md",
    locomo: LocomoOpt = None,
) -> None:
    """Paired McNemar tests per item type between two runs on the same key."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.report.compare import compare_folders, render_comparison
    try:
        cmp = compare_folders(run_1, run_2, locomo=locomo)
    except InputError as exc:
        _fail_input(exc)
    if format == "json":
        sys.stdout.write(cmp.model_dump_json(indent=2) + "\n")
    else:
        console.print(render_comparison(cmp), markup=False, highlight=False)


@app.command("export-predictions")
def export_predictions(
    run_dir: Annotated[Path, typer.Argument(help="A run folder with Track B items.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Predictions file (JSONL).")],
) -> None:
    """Write Track B verdicts in the public TWIST predictions format
    {item_id, aligned, evidence}."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.report.runs import export_predictions as export
    try:
        n = export(run_dir, _output_file(out, "--out"))
    except InputError as exc:
        _fail_input(exc)
    console.print(f"{n} predictions -> {plain(out)}", highlight=False)


@app.command("score-predictions")
def score_predictions(
    predictions: Annotated[Path, typer.Argument(help="JSONL {item_id, aligned, evidence}.")],
    dataset: DatasetOpt = None,
    locomo: LocomoOpt = None,
    name: Annotated[str, typer.Option(help="System name for the table.")] = "external",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the report here.")] = None,
) -> None:
    """Score Track B predictions made by another harness against a key."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.report.runs import report_predictions
    try:
        ds, _ = _dataset(dataset, locomo, None, False)
        _emit_report(report_predictions(ds, predictions, system=name), out, "md")
    except InputError as exc:
        _fail_input(exc)


@app.command("list")
def list_(
    what: Annotated[str | None, typer.Argument(
        help="datasets, systems or tracks (default all)")] = None,
) -> None:
    """List datasets, systems and tracks."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.datasets.registry import DATASETS
    from twistbench.llm import is_configured
    from twistbench.systems import available_systems
    from twistbench.tracks import TRACKS
    sections = [what] if what else ["datasets", "systems", "tracks"]
    for sec in sections:
        table = Table(title=sec)
        if sec == "datasets":
            table.add_column("name")
            table.add_column("needs")
            table.add_column("description")
            for d in DATASETS.values():
                needs = "--locomo" if d.needs_locomo else "--data" if d.needs_data else ""
                table.add_row(d.name, needs, d.description)
        elif sec == "systems":
            table.add_column("name")
            table.add_column("description")
            llm_ready = is_configured(role="system")
            for s in available_systems().values():
                note = ""
                if s.needs_llm:
                    note = (" (LLM endpoint: configured)" if llm_ready else
                            " (N/A: needs an LLM endpoint, TWIST_LLM_BASE_URL and "
                            "TWIST_LLM_MODEL)")
                table.add_row(s.name, s.description + note)
        elif sec == "tracks":
            table.add_column("key")
            table.add_column("title")
            for k, t in TRACKS.items():
                table.add_row(k, t.title)
        else:
            _fail_input(InputError(sec, "unknown list", expected="datasets, systems or tracks"))
        console.print(table)


@app.command()
def conform(
    system: Annotated[str, typer.Argument(help="Built-in name, module:Class, file.py:Class "
                                          "or the URL of a server (http://host:port).")],
    option: OptionOpt = None,
    timeout: Annotated[float, typer.Option(help="Seconds allowed per call.")] = 30.0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout: every "
                                          "check with the request and output of a failure.")
                       ] = False,
) -> None:
    """Check a system against the contract on a small built-in conversation; exit 1 on a
    failed check."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.runs.conform import check_conformance
    from twistbench.systems import make_system
    try:
        _positive(timeout, "--timeout")
        per = parse_options(option, [system])
        _use_options(per)
        sys_obj, entry = make_system(system, per[system])
    except InputError as exc:
        _fail_input(exc)
    # The system's messages may echo its options: every detail is redacted and printed plain.
    results = check_conformance(sys_obj, timeout_s=timeout, redactor=_redactor,
                                gold_channel=entry.gold_channel)
    fails = sum(r.status == "fail" for r in results)
    if as_json:
        counts = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "declined")}
        doc = {"system": _redactor.text(system), "counts": counts, "ok": not fails,
               "checks": [r.as_dict() for r in results]}
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        raise typer.Exit(1 if fails else 0)
    _print_conformance(system, results)
    if fails:
        raise typer.Exit(1)


def _print_conformance(system: str, results: list) -> None:
    table = Table(title=f"conformance of {plain(system)}")
    for col in ("check", "result", "detail"):
        table.add_column(col)
    style = {"pass": "green", "fail": "bold red", "declined": "yellow"}
    for r in results:
        detail = r.detail
        if r.status == "fail" and (r.request is not None or r.output is not None):
            detail += f" · sent {json.dumps(r.request, ensure_ascii=False)}"
            if r.output is not None:
                detail += f" · got {json.dumps(r.output, ensure_ascii=False)[:300]}"
        table.add_row(plain(r.check), f"[{style[r.status]}]{r.status}[/]",
                      plain(_redactor.text(detail)))
    console.print(table)
    fails = sum(r.status == "fail" for r in results)
    console.print(f"{sum(r.status == 'pass' for r in results)} passed, {fails} failed, "
                  f"{sum(r.status == 'declined' for r in results)} declined")


@app.command()
def serve(
    system: Annotated[str | None, typer.Argument(
        help="Built-in name, module:Class or file.py:Class.")] = None,
    port: Annotated[int, typer.Option(help="TCP port (0: any free port).")] = 8765,
    host: Annotated[str, typer.Option(help="Address to bind; another machine can reach a "
                                      "non-loopback one.")] = "127.0.0.1",
    option: OptionOpt = None,
    api_key_env: Annotated[str | None, typer.Option(
        help="Environment variable holding a bearer token every call must carry.")] = None,
    openapi: Annotated[bool, typer.Option(
        "--openapi", help="Print the contract's OpenAPI 3.1 document and exit.")] = False,
    log: Annotated[bool, typer.Option(help="Log every request on stderr.")] = False,
    dataset: Annotated[str | None, typer.Option(
        "--dataset", "-d", help="For the oracle only: the dataset whose gold it answers "
        "from.")] = None,
    locomo: LocomoOpt = None,
) -> None:
    """Serve a Python system over the HTTP contract, one instance per conversation
    (`twist run -s http://127.0.0.1:PORT` drives it)."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.systems import serve_system
    from twistbench.wire.openapi import openapi_json
    if openapi:
        sys.stdout.write(openapi_json())
        return
    try:
        if system is None:
            raise InputError("serve", "no system named", field="SYSTEM",
                             expected="a built-in name, module:Class or file.py:Class")
        per = parse_options(option, [system])
        _use_options(per)
        gold = _dataset(dataset, locomo, None, False)[0] if dataset is not None else None
        server = serve_system(system, per[system], host=host, port=port,
                              api_key_env=api_key_env, log=log, gold=gold)
    except InputError as exc:
        _fail_input(exc)
    console.print(f"serving {plain(server.description.name)} (contract "
                  f"{server.description.contract}) at {server.url}; Ctrl-C stops")
    try:
        server.serve_forever()
    finally:
        server.stop()


@build_app.command("cs")
def build_cs(
    out: Annotated[Path, typer.Option("--out", "-o", help="Key file to write (its .sha256 "
                                      "goes beside it).")] = Path("twist-cs.json"),
    seed: Annotated[int | None, typer.Option(
        help="Generator seed; the same seed gives byte-identical output. Default: the seed of "
        "the committed key of that version.")] = None,
    version: Annotated[str, typer.Option(
        "--version", help="Key version: 2.0 (written banks, the default) or 1.0 (the first, "
        "templated key, kept reproducible).")] = "2.0",
    include_crisis: CrisisOpt = False,
    paraphrase: Annotated[str | None, typer.Option(
        help="Rewrite Track A turns through an OpenAI-compatible endpoint (base URL, e.g. "
        "http://localhost:8000/v1); cached on disk. Off by default.")] = None,
    model: Annotated[str | None, typer.Option(help="Model name for --paraphrase.")] = None,
    api_key_env: Annotated[str, typer.Option(help="Environment variable holding the endpoint's "
                                             "API key, for --paraphrase.")] = "OPENAI_API_KEY",
    allow_failing_gates: AllowGatesOpt = False,
) -> None:
    """Generate the TWIST-CS workspaces and key; print counts, the shortcut audit and the
    surface (2.0) or variety (1.0) report. A key that fails a shortcut gate is not written
    (exit 1)."""
    try:
        if version not in ("1.0", "2.0"):
            raise InputError("--version", f"unknown TWIST-CS version {version!r}",
                             expected="2.0 or 1.0")
        if seed is not None:
            _at_least(seed, 0, "--seed")
        out = _output_file(out, "--out")
        if version == "2.0" and paraphrase:
            raise InputError("--paraphrase", "paraphrasing is a 1.0 option: 2.0 lines are "
                             "written, not generated", expected="--version 1.0")
    except InputError as exc:
        _fail_input(exc)
    if version == "2.0":
        # itemgen loads only for `twist build` (ARCHITECTURE.md)
        from twistbench.itemgen.cs2 import DEFAULT_SEED as SEED_2
        from twistbench.itemgen.cs2 import run_build

        with _build_gate(allow_failing_gates) as gate:
            run_build(out=out, seed=SEED_2 if seed is None else seed,
                      include_crisis=include_crisis, console=console, gate=gate)
        _note_stale_shipped_vectors(out)
        return
    # itemgen loads only for `twist build` (the generators and their templates; ARCHITECTURE.md)
    from twistbench.itemgen.cs_workspace import DEFAULT_SEED, run_build_cs
    from twistbench.itemgen.paraphrase import ParaphraseConfig

    para = None
    if paraphrase:
        if not model:
            _fail_input(InputError("--model", "--paraphrase needs a model name",
                                   expected="--model NAME"))
        para = ParaphraseConfig(base_url=paraphrase, model=model, api_key_env=api_key_env)
    with _build_gate(allow_failing_gates) as gate:
        _, rep = run_build_cs(out=out, seed=DEFAULT_SEED if seed is None else seed,
                              include_crisis=include_crisis, paraphrase=para, console=console,
                              gate=gate)
    if not rep.passes:
        err.print("[bold red]variety gate failed:[/] the items leak their label through wording "
                  "(bag-of-words accuracy above the limit); try another seed or more templates")
        raise typer.Exit(1)


def _note_stale_shipped_vectors(out: Path) -> None:
    """After a build over a committed TWIST-CS 2.0 key: a note when its shipped vectors do not
    name the key as written (they are then not used until rewritten)."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.datasets.keyfile import read_key as read_key_doc
    from twistbench.retrieval import shipped
    if not out.exists() or out.resolve() not in (cs2_key_path().resolve(),
                                                 cs2_key_path(include_crisis=True).resolve()):
        return
    _, digest = read_key_doc(out)
    for path in shipped_vectors_files(cs2_key_path()):
        if digest not in shipped.recorded_key_sha256s(path):
            err.print(f"note: {path.name} was written for another {out.name}; rewrite it: "
                      "PYTHONPATH=src python scripts/ship_key_vectors.py (docs/keys/"
                      "twist-cs-2.0.md)", highlight=False, markup=False)


@build_app.command("locomo")
def build_locomo(
    locomo: Annotated[Path, typer.Option("--locomo", help="Path of locomo10.json (the release "
                                         "file; its sha256 is recorded in the key).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Key file to write (its .sha256 "
                                      "goes beside it).")] = Path("twist-locomo.json"),
    seed: Annotated[int | None, typer.Option(help="Generator seed; default: the v1 seed.")] = None,
    include_crisis: CrisisOpt = False,
    version: Annotated[str, typer.Option(
        "--version", "--key", help="Key version: 1.0 (generated from templates) or 2.0 "
        "(assembled from the authoring files in itemgen/banks/locomo). --key is its old name, "
        "still accepted.")] = "1.0",
    conversations: Annotated[str | None, typer.Option(
        help="2.0 only: build a partial key from these conversations (comma-separated, e.g. "
        "conv-26); needs --out; not gated (the audit leaves one conversation out).")] = None,
    allow_failing_gates: AllowGatesOpt = False,
    restyle: Annotated[str | None, typer.Option(
        help="2.0 only: first run the restyle pass (docs/keys/locomo-authoring.md, Restyle "
        "pass): every injected turn rewritten in its speaker's voice through this "
        "OpenAI-compatible endpoint (base URL, e.g. http://localhost:8000/v1), written to "
        "--restyle-dir, then the key built from it. Read every line before committing.")] = None,
    model: Annotated[str | None, typer.Option(help="Model name for --restyle.")] = None,
    api_key_env: Annotated[str, typer.Option(help="Environment variable holding the endpoint's "
                                             "API key, for --restyle.")] = "OPENAI_API_KEY",
    restyle_dir: Annotated[Path | None, typer.Option(
        help="Folder of the restyle files the pass writes and the build reads (default: the "
        "committed itemgen/banks/locomo/restyle).")] = None,
) -> None:
    """Inject TWIST items into LoCoMo; print counts, QA re-validation, the shortcut audit and the
    variety report. A key that fails a shortcut gate is not written (exit 1)."""
    # itemgen loads only for `twist build` (the generators and their templates; ARCHITECTURE.md)
    from twistbench.itemgen.locomo_inject import DEFAULT_SEED, write_locomo_key

    if version not in ("1.0", "2.0"):
        _fail_input(InputError("--version", f"unknown TWIST-LoCoMo version {version!r}",
                               expected="1.0 or 2.0"))
    if conversations and version != "2.0":
        _fail_input(InputError("--conversations", "only the 2.0 key is built per conversation",
                               expected="--version 2.0"))
    if (restyle or restyle_dir) and version != "2.0":
        _fail_input(InputError("--restyle", "the restyle pass is a 2.0 option",
                               expected="--version 2.0"))
    if restyle and not model:
        _fail_input(InputError("--model", "--restyle needs a model name",
                               expected="--model NAME"))
    try:
        if seed is not None:
            if version == "2.0":
                raise InputError("--seed", "the 2.0 key is written, not drawn: it has no seed",
                                 expected="no --seed with --version 2.0")
            _at_least(seed, 0, "--seed")
        out = _output_file(out, "--out")
        gates_failed = _shortcuts().GatesFailed  # the gate's own verdict is not bad input
        with _build_gate(allow_failing_gates) as gate:
            try:
                if version == "2.0":
                    # itemgen loads only for `twist build` (ARCHITECTURE.md)
                    from twistbench.itemgen.locomo2 import write_locomo2_key

                    convs = [c.strip() for c in conversations.split(",") if c.strip()] \
                        if conversations else None
                    if restyle and model:
                        _restyle_pass(locomo, convs, restyle, model, api_key_env, restyle_dir)
                    digest, rep2 = write_locomo2_key(out, locomo, include_crisis=include_crisis,
                                                     conversations=convs, gate=gate,
                                                     restyle_folder=restyle_dir)
                else:
                    digest, rep = write_locomo_key(out, locomo,
                                                   seed=DEFAULT_SEED if seed is None else seed,
                                                   include_crisis=include_crisis, gate=gate)
            except (InputError, typer.Exit, gates_failed):
                raise
            except Exception as exc:  # noqa: BLE001 - the generator cannot fit items into this file
                if version == "2.0":
                    raise  # 2.0 places written turns: its bad input is already an InputError
                raise InputError(str(locomo), "cannot build the key from this file: "
                                 f"{type(exc).__name__}: {exc}",
                                 field="locomo", expected="the LoCoMo release file "
                                 "(snap-research/locomo data/locomo10.json)") from None
    except InputError as exc:
        _fail_input(exc)
    if version == "2.0":
        console.print(rep2.render(), markup=False, highlight=False)
        console.print(f"key -> {out}  sha256 {digest}", highlight=False)
        return
    console.print(rep.render(), markup=False, highlight=False)
    console.print(f"key -> {out}  sha256 {digest}", highlight=False)
    if rep.variety is not None and not rep.variety.passes:
        err.print("[bold red]variety gate failed:[/] the items leak their label through wording")
        raise typer.Exit(1)


def _restyle_pass(locomo: Path, conversations: list[str] | None, base_url: str, model: str,
                  api_key_env: str, folder: Path | None) -> None:
    """`twist build locomo --restyle`: the pass over the conversations to build (all ten by
    default), with a bar per conversation; prints what it rewrote and kept."""
    # itemgen loads only for `twist build` (ARCHITECTURE.md)
    from twistbench.datasets.locomo import load_locomo
    from twistbench.itemgen.locomo_plan import CONVERSATIONS
    from twistbench.itemgen.locomo_restyle import RestyleConfig, run_restyle

    corpus = load_locomo(locomo)
    cfg = RestyleConfig(base_url=base_url, model=model, api_key_env=api_key_env)
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True) as bar:

        def progress(conv: str, units: int) -> Callable[[], None]:
            task = bar.add_task(f"restyle {conv}", total=units)
            return lambda: bar.advance(task)

        report = run_restyle(corpus, conversations or list(CONVERSATIONS), cfg, folder,
                             progress)
    console.print(control_free(report.render()), markup=False, highlight=False)


def _shortcuts():  # noqa: ANN202 - the validation.shortcuts module
    """validation.shortcuts; a missing `validate` extra is one line and exit 2."""
    try:
        # lazy: the shortcut audit needs scikit-learn (the `validate` extra), which loads slowly
        from twistbench.validation import shortcuts
    except ImportError as exc:
        # escaped: the message names the extra in brackets, which rich would read as markup
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc
    return shortcuts


@contextmanager
def _build_gate(allow_failing: bool) -> Iterator[BuildGate]:
    """The shortcut audit a build runs on its key before writing it (BuildGate). A key that
    fails a gate: one line naming the failures, nothing written, exit 1."""
    shortcuts = _shortcuts()
    try:
        yield shortcuts.BuildGate(allow_failing=allow_failing, console=console)
    except shortcuts.GatesFailed as exc:
        err.print(f"[bold red]not written:[/] {escape(str(exc))} (--allow-failing-gates writes "
                  "it anyway and records the failures)", highlight=False)
        raise typer.Exit(1) from exc


@app.command()
def validate(
    dataset: Annotated[str, typer.Argument(help="Dataset name or key file to audit.")],
    locomo: LocomoOpt = None,
    errata: ErrataOpt = None,
    include_crisis: CrisisOpt = False,
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Folder for the reference runs, validation.md and "
        "validation.json.")] = Path("runs/validate"),
    write_filtered: Annotated[Path | None, typer.Option(
        help="Write a key without the items flat RAG solves or the oracle fails.")] = None,
    with_heuristic: Annotated[bool, typer.Option(
        help="Also run the heuristic system and report its separation.")] = False,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    shortcuts: Annotated[bool, typer.Option(
        "--shortcuts", help="Run only the shortcut audit (no reference systems): every known "
        "way to score without doing the task, leave-one-conversation-out.")] = False,
    json_out: Annotated[Path | None, typer.Option(
        "--json", help="Also write the report as JSON to this file.")] = None,
) -> None:
    """Separability audit (whitepaper §6.3) and shortcut audit; exit 1 when a check fails."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.audit.core import audit
    from twistbench.validation.separability import render_validation_markdown, validate_dataset
    try:
        ds, source = _dataset(dataset, locomo, errata, include_crisis)
        out = _output_dir(out, "--out")
        if write_filtered is not None:
            _output_file(write_filtered, "--write-filtered")
        if json_out is not None:
            json_out = _output_file(json_out, "--json")
        audit = _shortcuts()  # before the reference runs: a missing extra fails fast
        if shortcuts:
            rep = audit.run_gates(ds, progress=progress, console=err)
            console.print(rep.to_rich())
            notes = [f"{c.id}: {c.note}" for c in rep.checks if c.note] + rep.notes
            for line in rep.detail_lines() + notes:
                console.print(line, markup=False, highlight=False)
        else:
            with _no_empty_folders_left(out):
                rep = validate_dataset(ds, out, write_filtered=write_filtered,
                                       include_heuristic=with_heuristic, progress=progress,
                                       dataset_source=source)
            console.print(render_validation_markdown(rep), markup=False, highlight=False)
    except InputError as exc:
        _fail_input(exc)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(rep.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if not rep.passed:
        raise typer.Exit(1)


@app.command()
def trace(
    system: Annotated[str, typer.Option("--system", "-s", help="Built-in name or module:Class "
                                        "(must declare retrieve and lineage).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for traces.jsonl, "
                                      "lineage.jsonl, gold.jsonl.")],
    dataset: DatasetOpt = None,
    data: DataOpt = None,
    option: OptionOpt = None,
    k: Annotated[int, typer.Option("-k", help="Ranked ids per query.")] = 60,
    locomo: LocomoOpt = None,
    errata: ErrataOpt = None,
    granularity: GranularityOpt = "turn",
    tier: TierOpt = None,
    timeout: Annotated[float, typer.Option(help="Seconds allowed per call.")] = 120.0,
    conversation: Annotated[list[str] | None, typer.Option(
        "--conversation", help="Only these conversation ids (repeatable).")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar (on stderr).")] = True,
    embedder: EmbedderOpt = "builtin",
) -> None:
    """Write ranked retrieval traces and lineage of a system (input to `twist audit`). Exits 1
    when queries were to be traced and every one of them failed."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.audit.tracing import write_traces
    from twistbench.datasets.registry import REGISTRY as DATASET_REGISTRY
    from twistbench.datasets.registry import DatasetOptions
    from twistbench.systems import make_system
    try:
        _positive(timeout, "--timeout")
        _at_most(_at_least(k, 1, "-k"), MAX_K, "-k")
        _use_embedder(embedder)
        per = parse_options(option, [system])
        _use_options(per)
        entry = DATASET_REGISTRY.get(dataset or "")
        if entry is not None and entry.audit_only:
            ds = entry.load(DatasetOptions(data=data, granularity=granularity, tier=tier))
        else:
            ds, _ = _dataset(dataset or "locomo", locomo, errata, False)
        sys_obj, _ = make_system(system, per[system])
        out = _output_dir(out, "--out")
        with _no_empty_folders_left(out), _trace_progress(progress) as on_conversation:
            rep = write_traces(sys_obj, ds, out, k=k, timeout_s=timeout,
                               conversations=conversation, redactor=_redactor,
                               on_conversation=on_conversation)
    except InputError as exc:
        _fail_input(exc)
    console.print(f"{rep.traced}/{rep.queries} queries traced ({rep.skipped} skipped, "
                  f"{rep.errors} errors), {rep.stored_memories} memories -> {plain(out)}",
                  highlight=False)
    if rep.queries and not rep.traced:
        _error_line(f"every one of the {rep.queries} queries failed: no trace to audit "
                    f"({', '.join(f'{k} {n}' for k, n in sorted(rep.error_kinds.items()))})",
                    label="failed:")
        raise typer.Exit(1)


@contextlib.contextmanager
def _trace_progress(show: bool):
    """A progress bar over conversations and queries (stderr); yields write_traces' callback."""
    if not show:
        yield None
        return
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True) as bar:
        task = None

        def on_conversation(done: int, total: int, queries_done: int, queries: int) -> None:
            nonlocal task
            desc = f"tracing: {queries_done}/{queries} queries, conversations"
            if task is None:
                task = bar.add_task(desc, total=total)
            bar.update(task, completed=done, description=desc)

        yield on_conversation


@audit_app.command("traces")
def audit_traces(
    traces: Annotated[list[Path], typer.Argument(help="Trace files (JSONL or TREC run) or "
                                                 "folders written by `twist trace`.")],
    lineage: Annotated[list[Path] | None, typer.Option(
        help="Lineage JSONL: one for all runs or one per run (default: each folder's).")] = None,
    gold: Annotated[Path | None, typer.Option(
        help="Gold JSONL (default: the first folder's).")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Write audit.md, audit.json, per-query scores, contested cases, "
        "TREC files.")] = None,
    metric_variant: Annotated[str, typer.Option(
        help="standard or longmemeval (nDCG discount).")] = "standard",
    k: Annotated[int | None, typer.Option("-k", help="Cutoff (default: the traces' k).")] = None,
    resamples: Annotated[int, typer.Option(help="Paired bootstrap resamples.")] = TIAP_RESAMPLES,
    seed: Annotated[int, typer.Option(help="Bootstrap seed (TIAP §4).")] = TIAP_BOOTSTRAP_SEED,
    group: Annotated[list[str] | None, typer.Option(
        help="NAME=run1,run2: a configuration set for design recommendations "
        "(repeatable).")] = None,
    labels: Annotated[list[Path] | None, typer.Option(
        help="Contested-credit label CSV (case_id, rater, label), repeatable.")] = None,
    profile: Annotated[bool, typer.Option(
        "--profile", help="Print each stage's wall time to stderr ('profile: STAGE: S s').")
    ] = False,
) -> None:
    """Rescore saved traces under Raw, Source and Canonical targets.

    JSONL traces rank by list order (equal scores keep it); TREC runs ignore the rank column
    and rank by score descending, ties by docid descending (trec_eval's rule)."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.audit.core import audit
    from twistbench.audit.report import render_audit_markdown
    try:
        _at_most(_at_least(resamples, 1, "--resamples"), MAX_RESAMPLES, "--resamples")
        _at_least(seed, 0, "--seed")
        if k is not None:
            _at_most(_at_least(k, 1, "-k"), MAX_K, "-k")
        if out is not None:
            _output_dir(out, "--out")
    except InputError as exc:
        _fail_input(exc)
    groups = {}
    for g in group or []:
        if "=" not in g:
            _fail_input(InputError("--group", f"{g!r}", expected="NAME=run1,run2"))
        name, members = g.split("=", 1)
        groups[name] = [m for m in members.split(",") if m]

    def on_stage(stage: str, seconds: float) -> None:
        err.print(f"profile: {stage}: {seconds:.2f} s", markup=False, highlight=False)

    def on_note(line: str) -> None:  # a killed audit's temporary folder, removed
        err.print(f"note: {plain(line)}", markup=False, highlight=False)

    try:
        with _no_empty_folders_left(out):
            res = audit(traces,
                        lineage=(lineage[0] if lineage and len(lineage) == 1 else lineage),
                        gold=gold, out_dir=out, metric_variant=metric_variant,
                        n_resamples=resamples, seed=seed, k=k, groups=groups or None,
                        labels=labels or (), on_stage=on_stage if profile else None,
                        on_note=on_note)
    except InputError as exc:
        _fail_input(exc)
    t0 = time.perf_counter()
    console.print(render_audit_markdown(res), markup=False, highlight=False)
    if profile:
        on_stage("render + print the report", time.perf_counter() - t0)


@audit_app.command("native")
def audit_native(
    locomo: Annotated[Path, typer.Option("--locomo", help="Path of locomo10.json.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for runs/ and audit/.")] = Path(
        "runs/tiap-native"),
    retriever: Annotated[list[str] | None, typer.Option(
        help="lexical and/or dense (default both).")] = None,
    max_facts: Annotated[list[int] | None, typer.Option(
        help="Parser densities (default 1, 5, 8).")] = None,
    k: Annotated[int, typer.Option("-k", help="Ranked ids per query.")] = 60,
    resamples: Annotated[int, typer.Option(help="Paired bootstrap resamples.")] = TIAP_RESAMPLES,
    seed: Annotated[int, typer.Option(help="Bootstrap seed (TIAP §4).")] = TIAP_BOOTSTRAP_SEED,
    conversation: Annotated[list[str] | None, typer.Option(
        help="Only these LoCoMo conversations (repeatable).")] = None,
    embedder: EmbedderOpt = "builtin",
) -> None:
    """The native run matrix on LoCoMo: raw turns + parser facts at F1/F5/F8, lexical and dense."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.audit.native import native_matrix
    from twistbench.audit.report import render_audit_markdown
    try:
        _at_most(_at_least(resamples, 1, "--resamples"), MAX_RESAMPLES, "--resamples")
        _at_least(seed, 0, "--seed")
        _at_most(_at_least(k, 1, "-k"), MAX_K, "-k")
        for m in max_facts or ():
            _at_least(m, 1, "--max-facts")
        _use_embedder(embedder)
        out = _output_dir(out, "--out")
        with _no_empty_folders_left(out):
            res = native_matrix(locomo, out, retrievers=tuple(retriever or ("lexical", "dense")),
                                max_facts=tuple(max_facts or (1, 5, 8)), k=k,
                                n_resamples=resamples, seed=seed, conversations=conversation)
    except InputError as exc:
        _fail_input(exc)
    console.print(render_audit_markdown(res.audit), markup=False, highlight=False)
    console.print(res.recommendation_table(), markup=False, highlight=False)


@audit_app.command("labels")
def audit_labels(
    cases: Annotated[Path, typer.Argument(help="contested_cases.jsonl written by `twist audit`.")],
    labels: Annotated[list[Path] | None, typer.Argument(
        help="Rater CSVs (case_id, rater, label).")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Write the result as JSON.")] = None,
    llm: Annotated[bool, typer.Option(
        "--llm", help="Add LLM raters (the RATER role's endpoint; tiap_audit prompt): one per "
        "--llm-model, default the configured model. Their labels are written as CSV beside "
        "the cases.")] = False,
    llm_model: Annotated[list[str] | None, typer.Option(
        help="A model to rate with (repeatable; each is one rater).")] = None,
) -> None:
    """Semantic audit of contested credits: majority labels, Fleiss' kappa, pairwise agreement."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.audit.contested import read_cases, semantic_audit_files
    from twistbench.audit.llm_raters import rate_cases, rater_client, write_label_csv
    extra = []
    try:
        if out is not None:
            _output_file(out, "--out")
        if not labels and not llm:
            raise InputError("twist audit labels", "no labels to read",
                             expected="rater CSV files, or --llm")
        if llm:
            contested = read_cases(cases)
            for model in llm_model or [None]:
                rated = rate_cases(contested, rater_client(model))
                path = write_label_csv(cases.parent / f"labels_llm_{run_folder_name(rated.model)}"
                                       ".csv", rated.labels)
                extra.extend(rated.labels)
                err.print(plain(f"{rated.rater}: {len(rated.labels)} of {len(contested)} "
                                f"cases labelled, errors {rated.errors or 'none'} (prompt "
                                f"tiap_audit {rated.prompt_sha256[:12]}) -> {path}"),
                          highlight=False)
        res = semantic_audit_files(cases, labels or [], out, extra_labels=extra)
    except InputError as exc:
        _fail_input(exc)
    console.print(json.dumps(_as_jsonable(res), indent=2), markup=False, highlight=False)


def _as_jsonable(obj):  # noqa: ANN001, ANN202

    if hasattr(obj, "model_dump"):
        return obj.model_dump()
    if is_dataclass(obj):
        return asdict(obj)
    return obj


@annotate_app.command("export")
def annotate_export(
    key: Annotated[str, typer.Argument(help="Dataset name (see `twist list`) or key file.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="New folder for the packets and "
                                      "the coordinator's manifest.json.")],
    annotators: Annotated[int, typer.Option("--annotators", "-n", help="Annotators (>= 2); "
                                            "each gets a folder r1, r2, ...")] = 2,
    seed: Annotated[int | None, typer.Option(help="Shuffle and code seed (recorded in the "
                                             "manifest). Default: drawn at random.")] = None,
    track: Annotated[list[str] | None, typer.Option(
        "--track", "-t", help="Only these tracks (A, B, C, D). Default: all.")] = None,
    sample: Annotated[int | None, typer.Option(help="Only N items, spread over the tracks "
                                               "(a pilot round).")] = None,
    examples: Annotated[int, typer.Option(help="Worked examples in the guide per answer the "
                                          "key gives (left out of the packet).")] = 1,
    context: Annotated[int, typer.Option(help="Turns shown before and after each marked "
                                         "turn.")] = 2,
    locomo: LocomoOpt = None,
    include_crisis: CrisisOpt = False,
) -> None:
    """Write blind annotation packets (CSV, JSONL, offline HTML form, guide, full records)."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.annotate.excerpts import Settings as ExcerptSettings
    from twistbench.annotate.packet import export_packets
    try:
        _at_least(annotators, 2, "--annotators")
        _at_most(annotators, 100, "--annotators")  # a folder each: 10**30 would exhaust memory
        if sample is not None:
            _at_least(sample, 1, "--sample")
        _at_least(examples, 0, "--examples")
        _at_least(context, 0, "--context")
        if seed is not None:
            _at_least(seed, 0, "--seed")
        if out.parent != out:
            _output_dir(out.parent, "--out")  # the packet folder itself must be new
        ds, source = _dataset(key, locomo, None, include_crisis)
        res = export_packets(ds, out, annotators=annotators, seed=seed,
                             settings=ExcerptSettings(context=context), tracks=track,
                             sample=sample, examples=examples, source=source)
    except InputError as exc:
        _fail_input(exc)
    tracks = ", ".join(f"{t} {n}" for t, n in res.per_track.items())
    console.print(f"packet {res.packet} of {ds.version}: {res.items} items ({tracks}) for "
                  f"{', '.join(res.annotators)}; {len(res.examples)} worked examples; seed "
                  f"{res.seed} -> {out} (keep manifest.json; send each annotator their folder)",
                  highlight=False)


@annotate_app.command("agreement")
def annotate_agreement(
    answers: Annotated[list[Path], typer.Argument(help="Answer files, one per annotator "
                                                  "(.json from the form, .csv, .jsonl).")],
    packet: Annotated[Path, typer.Option("--packet", "-p", help="The export folder (holding "
                                         "manifest.json).")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for agreement.md/.json "
                                             "and the adjudication queue. Default: "
                                             "<packet>/adjudication.")] = None,
    min_kappa: Annotated[float, typer.Option(help="Families below this kappa are dropped at "
                                             "adjudication.")] = DEFAULT_MIN_KAPPA,
) -> None:
    """Cohen's / Fleiss' kappa, raw agreement and confusion tables per track and family; writes
    the adjudication queue."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.annotate.agreement import compute_agreement, render_markdown, write_agreement
    from twistbench.annotate.answers import load_manifest, read_answers
    try:
        _kappa(min_kappa, "--min-kappa")
        manifest = load_manifest(packet)
        if out is not None:
            _output_dir(out, "--out")
        raters = [read_answers(a, manifest) for a in answers]
        res = compute_agreement(manifest, raters, threshold=min_kappa)
        written = write_agreement(res, manifest, out or packet / "adjudication")
    except InputError as exc:
        _fail_input(exc)
    console.print(render_markdown(res), markup=False, highlight=False)
    console.print("written: " + ", ".join(str(w) for w in written), highlight=False)


@annotate_app.command("adjudicate")
def annotate_adjudicate(
    key: Annotated[str, typer.Argument(help="The key file the packet was exported from (or "
                                       "a committed key's version name).")],
    queue: Annotated[Path, typer.Argument(help="queue.jsonl from `twist annotate "
                                          "agreement`.")],
    decisions: Annotated[Path, typer.Argument(help="The filled queue.csv (decision, "
                                              "new_label, evidence, decision_reason).")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Next key version's file. "
                                             "Default: beside KEY, named by version.")] = None,
    min_kappa: Annotated[float | None, typer.Option(help="Override the queue's threshold.")
                         ] = None,
) -> None:
    """Merge the adjudicator's decisions, drop families below the threshold and rejected
    items, and write the next key version with a changelog and the agreement figures."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.annotate.adjudicate import adjudicate as adjudicate_key
    from twistbench.datasets.versions import resolve_key_file
    try:
        if min_kappa is not None:
            _kappa(min_kappa, "--min-kappa")
        if out is not None:
            _output_file(out, "--out")
        rel, record = adjudicate_key(resolve_key_file(key), queue, decisions, out=out,
                                     min_kappa=min_kappa)
    except InputError as exc:
        _fail_input(exc)
    rep = rel.report
    console.print(f"{rel.version} -> {rel.path} (sha256 {rel.sha256}): {len(rep.dropped)} "
                  f"dropped, {len(rep.relabelled)} relabelled, errata folded in: "
                  f"{rel.errata or 'none'}; families below {record['threshold']:g}: "
                  f"{', '.join(record['failing_families']) or 'none'}"
                  f"{' (sampled round: not dropped)' if record['sample'] else ''}",
                  highlight=False)


@errata_app.command("add")
def errata_add(
    key: Annotated[str, typer.Argument(help="Key file or a committed key's version name.")],
    item: Annotated[str, typer.Option("--item", help="The disputed item's id.")],
    reason: Annotated[str, typer.Option("--reason", help="Why the item is wrong (public).")],
    action: Annotated[str, typer.Option(help="drop, or relabel (Track B drafts).")] = "drop",
    label: Annotated[str | None, typer.Option(help="relabel: aligned, contradicting or "
                                              "hard_negative.")] = None,
    evidence: Annotated[list[str] | None, typer.Option(
        help="relabel: a turn id the draft contradicts (repeatable).")] = None,
    by: Annotated[str, typer.Option(help="Who filed or accepted the dispute.")] = "",
) -> None:
    """Record an accepted dispute in the key version's errata log."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.datasets.versions import add_erratum, resolve_key_file
    if action not in ("drop", "relabel"):
        _fail_input(InputError("--action", f"{action!r}", expected="drop or relabel"))
    try:
        entry, path = add_erratum(resolve_key_file(key), item, reason, action=action,  # type: ignore[arg-type]
                                  label=label, evidence=evidence, by=by)
    except InputError as exc:
        _fail_input(exc)
    console.print(f"erratum {entry.n}: {entry.action} {entry.item} -> {path} (runs: -d "
                  f"{key}+errata-{entry.n})", highlight=False)


@errata_app.command("list")
def errata_list(
    key: Annotated[str, typer.Argument(help="Key file or a committed key's version name.")],
) -> None:
    """The errata of a key version and the key's changelog."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.datasets.keyfile import read_key as read_key_doc
    from twistbench.datasets.versions import errata_path, read_errata_log, resolve_key_file
    try:
        path = resolve_key_file(key)
        doc, digest = read_key_doc(path)
        log = read_errata_log(errata_path(path, doc["version"]), doc["name"], doc["version"])
    except InputError as exc:
        _fail_input(exc)
    console.print(f"{doc['version']} sha256 {digest}: {len(log.entries)} errata", highlight=False)
    for e in log.entries:
        console.print(f"  {e.n}. {e.date} {e.action} {e.item}"
                      f"{' -> ' + e.label if e.label else ''}: {e.reason}", highlight=False)
    for c in (doc["payload"].get("meta") or {}).get("changelog", []):
        console.print(f"  {c['version']} (from {c['from']}, {c['date']}): {c['why']}; "
                      f"{len(c['dropped'])} dropped, {len(c['relabelled'])} relabelled, "
                      f"{len(c['fixed'])} fixed", highlight=False)


@errata_app.command("apply")
def errata_apply(
    key: Annotated[str, typer.Argument(help="Key file or a committed key's version name.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Next key version's file. "
                                             "Default: beside KEY, named by version.")] = None,
) -> None:
    """Write the next key version with every erratum of this version folded in."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.datasets.versions import release_next_version, resolve_key_file
    try:
        if out is not None:
            _output_file(out, "--out")
        rel = release_next_version(resolve_key_file(key), [], why="errata", out=out)
    except InputError as exc:
        _fail_input(exc)
    console.print(f"{rel.version} -> {rel.path} (sha256 {rel.sha256}): errata {rel.errata} "
                  f"folded in ({len(rel.report.dropped)} dropped, "
                  f"{len(rel.report.relabelled)} relabelled)", highlight=False)


@judge_app.command("calibrate")
def judge_calibrate(
    judge: Annotated[str, typer.Option("--judge", help="The judge to calibrate (structural, "
                                       "llm, a plugin, or module:Class).")] = DEFAULT_JUDGE,
    model: Annotated[str | None, typer.Option(help="For an LLM judge: the model (default: "
                                              "TWIST_JUDGE_MODEL or TWIST_LLM_MODEL).")] = None,
    dataset: Annotated[list[str] | None, typer.Option(
        "--dataset", "-d", help="Datasets whose Track C chains give the TWIST decoys "
        "(repeatable). Default: twist-cs-1.0.")] = None,
    locomo: LocomoOpt = None,
    locomo_decoys: Annotated[bool, typer.Option(
        help="Include the LoCoMo audit's two decoy files (shared data).")] = True,
    sample: Annotated[int | None, typer.Option(
        help="At most N decoys per style (a fixed sample by id hash), for a costly judge.")
    ] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Folder for the calibration JSON (default: the calibration store, "
        ".twistbench-cache/calibration or TWIST_CALIBRATION_DIR).")] = None,
) -> None:
    """Run a judge on decoy answers and report its rejection rate per decoy style (Wilson
    intervals); exit 1 when any style is below the pass rate, had a judge error, or was not
    judged at all (an incomplete calibration never passes)."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.datasets.registry import DEFAULT_DATASET
    from twistbench.judges import make_judge
    from twistbench.judges.calibration import PASS_RATE, calibration_summary, describe_calibration
    from twistbench.validation.judge_calibration import run_calibration
    try:
        if sample is not None:
            _at_least(sample, 1, "--sample")
        if out is not None:
            out = _output_dir(out, "--out")
        judge_obj = make_judge(judge, model=model) if model else make_judge(judge)
        datasets = [_dataset(name, locomo, None, False)[0]
                    for name in (dataset or [DEFAULT_DATASET])]
        record, path = run_calibration(judge_obj, datasets, locomo_decoys=locomo_decoys,
                                       sample=sample, out=out)
    except InputError as exc:
        _fail_input(exc)
    table = Table(title=f"decoy calibration of {plain(judge)} (pass: every rate >= "
                  f"{PASS_RATE:g})")
    table.caption = "rate: the share of decoys rejected, of controls accepted"
    # Names and counts are what a reader looks up: they never wrap (80 columns fit).
    for col in ("style", "kind", "rate", "k/n", "95% interval", "errors", "result"):
        table.add_column(col, no_wrap=col != "95% interval")
    for style, e in record["styles"].items():
        rate = e.get("rejection_rate", e.get("acceptance_rate"))
        lo, hi = e["interval"]
        table.add_row(style, e["kind"],
                      "n/a" if rate is None else f"{rate:.3f}", f"{e['k']}/{e['n']}",
                      "" if lo is None else f"[{lo:.3f}, {hi:.3f}]", str(e["errors"]),
                      "[green]pass[/]" if e["passed"] else "[bold red]FAIL[/]")
    console.print(table)
    for style, why in record["not_applicable"].items():
        console.print(f"  {style}: N/A — {plain(why)}", highlight=False)
    for style in record.get("missing", []):
        console.print(f"  {style}: not calibrated — no answer of this style was judged, so "
                      "the calibration is incomplete and cannot pass", highlight=False)
    console.print(plain(describe_calibration(calibration_summary(record))), highlight=False)
    console.print(f"calibration -> {plain(path)}", highlight=False)
    if not record["passed"]:
        raise typer.Exit(1)


@app.command()
def schema(
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write to this file.")] = None,
) -> None:
    """Print the JSON Schema of every record (datasets, items, system outputs)."""
    # lazy: the verb's layers load when it runs, not at every start-up (bench_startup.py)
    from twistbench.datasets.keyfile import atomic_write_bytes
    from twistbench.model import dump_json_schemas
    text = dump_json_schemas()
    if out:
        try:
            atomic_write_bytes(_output_file(out, "--out"), (text + "\n").encode("utf-8"))
        except InputError as exc:
            _fail_input(exc)
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
