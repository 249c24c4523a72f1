"""The `twist` command. Thin: parse options, call one function per verb, print.

Exit codes: 0 success; 1 the run finished but failed a check (error rate above --max-error-rate,
a conformance failure); 2 bad input (a clear message naming file, record, field).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from typer.core import TyperGroup
from rich.table import Table

from twistbench.errors import InputError

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
                        "targets. `twist audit TRACES...`, `twist audit native`, `twist audit labels`.")
app.add_typer(audit_app, name="audit")
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
    "--dataset", "-d", help="Dataset name (see `twist list`) or a key file. Default: twist-cs-1.0 "
    "(the built-in demo when no committed key is found).")]
LocomoOpt = Annotated[Path | None, typer.Option(
    "--locomo", help="Path of locomo10.json, for the LoCoMo-based datasets.")]
ErrataOpt = Annotated[str | None, typer.Option(
    "--errata", help="Errata overlay for LoCoMo QA: 'locomo-audit' or a path to errors.json.")]
CrisisOpt = Annotated[bool, typer.Option(
    "--include-crisis", help="Include the opt-in crisis plants (content warning: self-harm-"
    "adjacent phrasings).")]


def main() -> None:
    """Console-script entry point: InputError becomes one line on stderr and exit code 2."""
    try:
        app()
    except InputError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(2)


def _fail_input(exc: InputError) -> None:
    err.print(f"[bold red]error:[/] {exc}", highlight=False)
    raise typer.Exit(2)


def parse_options(pairs: list[str] | None, systems: list[str]) -> dict[str, dict[str, str]]:
    """-S key=value / -S system.key=value into per-system option dicts."""
    per: dict[str, dict[str, str]] = {s: {} for s in systems}
    for pair in pairs or []:
        if "=" not in pair:
            raise InputError("-S", f"{pair!r} is not key=value", expected="key=value")
        key, value = pair.split("=", 1)
        target = [s for s in systems if key.startswith(s + ".")]
        if target:
            per[target[0]][key[len(target[0]) + 1:]] = value
        else:
            for s in systems:
                per[s][key] = value
    return per


def _dataset(name: str | None, locomo: Path | None, errata: str | None, crisis: bool):
    from twistbench.datasets import DEFAULT_DATASET, DatasetOptions, data_dir, load_dataset

    opts = DatasetOptions(locomo=locomo, errata=errata, include_crisis=crisis)
    if name is None:
        name = DEFAULT_DATASET
        if not (data_dir() / "twist-cs-1.0.json").exists():
            err.print("note: no committed TWIST-CS key found; running the built-in demo dataset")
            name = "demo"
    source = {"name": name, "locomo": str(locomo) if locomo else None, "errata": errata,
              "include_crisis": crisis}
    ds = load_dataset(name, opts)
    from twistbench.corpus.locomo import dataset_notes

    for line in dataset_notes(ds):  # sha check, defects handled, re-validation, errata
        err.print(f"note: {line}", highlight=False, markup=False)
    return ds, source


@app.command()
def run(
    dataset: DatasetOpt = None,
    system: SystemOpt = None,
    option: OptionOpt = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder root; each system gets "
                                      "a subfolder. Running again resumes.")] = Path("runs/default"),
    track: Annotated[list[str] | None, typer.Option(
        "--track", "-t", help="Only these tracks (A, B, C, D, locomo). Default: all that apply.")] = None,
    conversation: Annotated[list[str] | None, typer.Option(
        "--conversation", help="Only these conversation ids (repeatable).")] = None,
    locomo: LocomoOpt = None,
    errata: ErrataOpt = None,
    include_crisis: CrisisOpt = False,
    timeout: Annotated[float, typer.Option(help="Seconds allowed per system call.")] = 30.0,
    ingest_timeout: Annotated[float, typer.Option(help="Seconds allowed per ingested session.")] = 300.0,
    max_error_rate: Annotated[float, typer.Option(
        help="Exit non-zero when the share of items that errored exceeds this.")] = 0.0,
    force_new: Annotated[bool, typer.Option(
        "--force-new", help="Discard an existing run in the folder and start over.")] = False,
    seed: Annotated[int, typer.Option(help="Seed recorded in the manifest and given to "
                                      "stochastic parts.")] = 1337,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Run systems through the TWIST tracks and print the profile."""
    from twistbench.runs.runner import RunSettings, run_system
    from twistbench.systems import DEFAULT_SYSTEMS, make_system

    try:
        ds, source = _dataset(dataset, locomo, errata, include_crisis)
        systems = system or list(DEFAULT_SYSTEMS)
        per = parse_options(option, systems)
        settings = RunSettings(tracks=track, timeout_s=timeout, ingest_timeout_s=ingest_timeout,
                               seed=seed, force_new=force_new, conversations=conversation,
                               progress=progress)
        folders = []
        failed = []
        for spec in systems:
            sys_obj, entry = make_system(spec, per[spec])
            folder = out / _folder_name(spec)
            outcome = run_system(ds, sys_obj, folder, spec=spec, options=per[spec],
                                 gold_channel=entry.gold_channel, settings=settings,
                                 dataset_source=source)
            folders.append(folder)
            note = (f"{outcome.items} items ({outcome.new_items} new, {outcome.skipped} resumed), "
                    f"{outcome.errors} errors")
            console.print(f"[bold]{outcome.system}[/]: {note} -> {folder}", highlight=False)
            if outcome.error_rate > max_error_rate:
                failed.append(f"{outcome.system}: error rate {outcome.error_rate:.3f} > "
                              f"{max_error_rate:g}")
        _print_report(folders, out)
    except InputError as exc:
        _fail_input(exc)
    if failed:
        for f in failed:
            err.print(f"[bold red]failed:[/] {f}", highlight=False)
        raise typer.Exit(1)


def _folder_name(spec: str) -> str:
    return spec.replace(":", "_").replace("/", "_").replace(".", "_")


def _print_report(folders: list[Path], out: Path | None, fmt: str = "md",
                  locomo: Path | None = None) -> None:
    from twistbench.report.runs import report_runs

    _emit_report(report_runs(folders, locomo=locomo), out, fmt)


def _emit_report(rep, out: Path | None, fmt: str) -> None:  # noqa: ANN001 - RunsReport
    """Print the profile; with `out`, also write report.md, report.json and profile plots."""
    written = []
    if out is not None:
        from twistbench.report.plots import plot_profile

        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(rep.markdown, encoding="utf-8")
        (out / "report.json").write_text(json.dumps(rep.data, indent=2, sort_keys=True) + "\n",
                                         encoding="utf-8")
        written = [out / "report.md", out / "report.json"]
        for i, profile in enumerate(rep.profiles):
            written.append(plot_profile(profile, out / f"profile{'' if i == 0 else i + 1}.png"))
    if fmt == "json":
        sys.stdout.write(json.dumps(rep.data, indent=2, sort_keys=True) + "\n")
    else:
        rep.print(console)
        if written:
            console.print("report: " + ", ".join(str(w) for w in written), highlight=False)


@app.command()
def report(
    runs: Annotated[list[Path], typer.Argument(help="Run folders, or folders of run folders.")],
    format: Annotated[str, typer.Option("--format", "-f", help="md or json.")] = "md",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Also write report.md and "
                                             "report.json into this folder.")] = None,
    locomo: LocomoOpt = None,
) -> None:
    """Re-score saved runs (no system is called) and print the profile."""
    from twistbench.runs.folder import find_run_folders

    if format not in ("md", "json"):
        _fail_input(InputError("--format", f"unknown format {format!r}", expected="md or json"))
    try:
        _print_report(find_run_folders(runs), out, format, locomo)
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
    """Write Track B verdicts in the public TWIST predictions format {item_id, aligned, evidence}."""
    from twistbench.report.runs import export_predictions as export

    try:
        n = export(run_dir, out)
    except InputError as exc:
        _fail_input(exc)
    console.print(f"{n} predictions -> {out}", highlight=False)


@app.command("score-predictions")
def score_predictions(
    predictions: Annotated[Path, typer.Argument(help="JSONL {item_id, aligned, evidence}.")],
    dataset: DatasetOpt = None,
    locomo: LocomoOpt = None,
    name: Annotated[str, typer.Option(help="System name for the table.")] = "external",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the report here.")] = None,
) -> None:
    """Score Track B predictions made by another harness against a key."""
    from twistbench.report.runs import report_predictions

    try:
        ds, _ = _dataset(dataset, locomo, None, False)
        _emit_report(report_predictions(ds, predictions, system=name), out, "md")
    except InputError as exc:
        _fail_input(exc)


@app.command("list")
def list_(
    what: Annotated[str | None, typer.Argument(help="datasets, systems or tracks (default all)")] = None,
) -> None:
    """List datasets, systems and tracks."""
    from twistbench.datasets import DATASETS
    from twistbench.systems import REGISTRY
    from twistbench.tracks import TRACKS

    sections = [what] if what else ["datasets", "systems", "tracks"]
    for sec in sections:
        table = Table(title=sec)
        if sec == "datasets":
            table.add_column("name")
            table.add_column("needs --locomo")
            table.add_column("description")
            for d in DATASETS.values():
                table.add_row(d.name, "yes" if d.needs_locomo else "", d.description)
        elif sec == "systems":
            table.add_column("name")
            table.add_column("description")
            for s in REGISTRY.values():
                table.add_row(s.name, s.description)
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
    system: Annotated[str, typer.Argument(help="Built-in name or module:Class.")],
    option: OptionOpt = None,
    timeout: Annotated[float, typer.Option(help="Seconds allowed per call.")] = 30.0,
) -> None:
    """Check a system against the contract on a small built-in conversation."""
    from twistbench.runs.conform import check_conformance
    from twistbench.systems import make_system

    try:
        sys_obj, _ = make_system(system, parse_options(option, [system])[system])
    except InputError as exc:
        _fail_input(exc)
    results = check_conformance(sys_obj, timeout_s=timeout)
    table = Table(title=f"conformance of {system}")
    for col in ("check", "result", "detail"):
        table.add_column(col)
    style = {"pass": "green", "fail": "bold red", "declined": "yellow"}
    for r in results:
        table.add_row(r.check, f"[{style[r.status]}]{r.status}[/]", r.detail)
    console.print(table)
    fails = sum(r.status == "fail" for r in results)
    console.print(f"{sum(r.status == 'pass' for r in results)} passed, {fails} failed, "
                  f"{sum(r.status == 'declined' for r in results)} declined")
    if fails:
        raise typer.Exit(1)


@build_app.command("cs")
def build_cs(
    out: Annotated[Path, typer.Option("--out", "-o", help="Key file to write (its .sha256 "
                                      "goes beside it).")] = Path("twist-cs.json"),
    seed: Annotated[int | None, typer.Option(help="Generator seed; the same seed gives "
                                             "byte-identical output. Default: the v1 seed.")] = None,
    include_crisis: CrisisOpt = False,
    paraphrase: Annotated[str | None, typer.Option(
        help="Rewrite Track A turns through an OpenAI-compatible endpoint (base URL, e.g. "
        "http://localhost:8000/v1); cached on disk. Off by default.")] = None,
    model: Annotated[str | None, typer.Option(help="Model name for --paraphrase.")] = None,
    api_key_env: Annotated[str, typer.Option(help="Environment variable holding the endpoint's "
                                             "API key, for --paraphrase.")] = "OPENAI_API_KEY",
) -> None:
    """Generate the TWIST-CS workspaces and key; print counts and the variety report."""
    from twistbench.build.cs_workspace import DEFAULT_SEED, ParaphraseConfig, run_build_cs

    para = None
    if paraphrase:
        if not model:
            _fail_input(InputError("--model", "--paraphrase needs a model name",
                                   expected="--model NAME"))
        para = ParaphraseConfig(base_url=paraphrase, model=model, api_key_env=api_key_env)
    _, rep = run_build_cs(out=out, seed=DEFAULT_SEED if seed is None else seed,
                          include_crisis=include_crisis, paraphrase=para, console=console)
    if not rep.passes:
        err.print("[bold red]variety gate failed:[/] the items leak their label through wording "
                  "(bag-of-words accuracy above the limit); try another seed or more templates")
        raise typer.Exit(1)


@build_app.command("locomo")
def build_locomo(
    locomo: Annotated[Path, typer.Option("--locomo", help="Path of locomo10.json (the release "
                                         "file; its sha256 is recorded in the key).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Key file to write (its .sha256 "
                                      "goes beside it).")] = Path("twist-locomo.json"),
    seed: Annotated[int | None, typer.Option(help="Generator seed; default: the v1 seed.")] = None,
    include_crisis: CrisisOpt = False,
    key: Annotated[str, typer.Option(
        "--key", help="Key version: 1.0 (generated from templates) or 2.0 (assembled from the "
        "authoring files in itemgen/banks/locomo).")] = "1.0",
    conversations: Annotated[str | None, typer.Option(
        help="2.0 only: build a partial key from these conversations (comma-separated, e.g. "
        "conv-26); needs --out.")] = None,
) -> None:
    """Inject TWIST items into LoCoMo; print counts, QA re-validation and the variety report."""
    from twistbench.build.locomo_inject import DEFAULT_SEED, write_locomo_key

    if key not in ("1.0", "2.0"):
        _fail_input(InputError("--key", f"unknown key version {key!r}", expected="1.0 or 2.0"))
    if key == "2.0":
        from twistbench.itemgen.locomo2 import write_locomo2_key

        convs = [c.strip() for c in conversations.split(",") if c.strip()] if conversations \
            else None
        try:
            digest, rep2 = write_locomo2_key(out, locomo, include_crisis=include_crisis,
                                             conversations=convs)
        except InputError as exc:
            _fail_input(exc)
        console.print(rep2.render(), markup=False, highlight=False)
        console.print(f"key -> {out}  sha256 {digest}", highlight=False)
        return
    if conversations:
        _fail_input(InputError("--conversations", "only the 2.0 key is built per conversation",
                               expected="--key 2.0"))
    try:
        digest, rep = write_locomo_key(out, locomo, seed=DEFAULT_SEED if seed is None else seed,
                                       include_crisis=include_crisis)
    except InputError as exc:
        _fail_input(exc)
    console.print(rep.render(), markup=False, highlight=False)
    console.print(f"key -> {out}  sha256 {digest}", highlight=False)
    if rep.variety is not None and not rep.variety.passes:
        err.print("[bold red]variety gate failed:[/] the items leak their label through wording")
        raise typer.Exit(1)


@app.command()
def validate(
    dataset: Annotated[str, typer.Argument(help="Dataset name or key file to audit.")],
    locomo: LocomoOpt = None,
    errata: ErrataOpt = None,
    include_crisis: CrisisOpt = False,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the reference runs, "
                                      "validation.md and validation.json.")] = Path("runs/validate"),
    write_filtered: Annotated[Path | None, typer.Option(
        help="Write a key without the items flat RAG solves or the oracle fails.")] = None,
    with_heuristic: Annotated[bool, typer.Option(
        help="Also run the heuristic system and report its separation.")] = False,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Separability audit (whitepaper §6.3): flat-rag, fact-rag and oracle on every item."""
    from twistbench.validate import render_markdown, validate_dataset

    try:
        ds, source = _dataset(dataset, locomo, errata, include_crisis)
        rep = validate_dataset(ds, out, write_filtered=write_filtered,
                               include_heuristic=with_heuristic, progress=progress,
                               dataset_source=source)
    except InputError as exc:
        _fail_input(exc)
    console.print(render_markdown(rep), markup=False, highlight=False)
    if not rep.passed:
        raise typer.Exit(1)


@app.command()
def trace(
    system: Annotated[str, typer.Option("--system", "-s", help="Built-in name or module:Class "
                                        "(must declare retrieve and lineage).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for traces.jsonl, "
                                      "lineage.jsonl, gold.jsonl.")],
    dataset: DatasetOpt = None,
    data: Annotated[Path | None, typer.Option(
        help="For --dataset longmemeval or beam: the benchmark file or folder.")] = None,
    option: OptionOpt = None,
    k: Annotated[int, typer.Option("-k", help="Ranked ids per query.")] = 60,
    locomo: LocomoOpt = None,
    errata: ErrataOpt = None,
    granularity: Annotated[str, typer.Option(help="LongMemEval gold: turn or session.")] = "turn",
    tier: Annotated[str | None, typer.Option(help="BEAM tier, e.g. 1M.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds allowed per call.")] = 120.0,
) -> None:
    """Write ranked retrieval traces and lineage of a system (input to `twist audit`)."""
    from twistbench.audit.tracing import load_audit_corpus, write_traces
    from twistbench.systems import make_system

    try:
        if dataset in ("longmemeval", "beam"):
            if data is None:
                raise InputError("--data", f"--dataset {dataset} needs --data PATH",
                                 expected="the benchmark's file or folder")
            ds = load_audit_corpus(dataset, data, granularity=granularity, tier=tier)
        else:
            ds, _ = _dataset(dataset or "locomo", locomo, errata, False)
        sys_obj, _ = make_system(system, parse_options(option, [system])[system])
        rep = write_traces(sys_obj, ds, out, k=k, timeout_s=timeout)
    except InputError as exc:
        _fail_input(exc)
    console.print(f"{rep.traced}/{rep.queries} queries traced ({rep.skipped} skipped, "
                  f"{rep.errors} errors), {rep.stored_memories} memories -> {out}",
                  highlight=False)


@audit_app.command("traces")
def audit_traces(
    traces: Annotated[list[Path], typer.Argument(help="Trace files (JSONL or TREC run) or "
                                                 "folders written by `twist trace`.")],
    lineage: Annotated[list[Path] | None, typer.Option(
        help="Lineage JSONL: one for all runs or one per run (default: each folder's).")] = None,
    gold: Annotated[Path | None, typer.Option(help="Gold JSONL (default: the first folder's).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write audit.md, audit.json, "
                                             "per-query scores, contested cases, TREC files.")] = None,
    metric_variant: Annotated[str, typer.Option(help="standard or longmemeval (nDCG discount).")] = "standard",
    k: Annotated[int | None, typer.Option("-k", help="Cutoff (default: the traces' k).")] = None,
    resamples: Annotated[int, typer.Option(help="Paired bootstrap resamples.")] = 3000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 1337,
    group: Annotated[list[str] | None, typer.Option(
        help="NAME=run1,run2: a configuration set for design recommendations (repeatable).")] = None,
    labels: Annotated[list[Path] | None, typer.Option(
        help="Contested-credit label CSV (case_id, rater, label), repeatable.")] = None,
) -> None:
    """Rescore saved traces under Raw, Source and Canonical targets."""
    from twistbench.audit.core import audit
    from twistbench.audit.report import render_markdown

    groups = {}
    for g in group or []:
        if "=" not in g:
            _fail_input(InputError("--group", f"{g!r}", expected="NAME=run1,run2"))
        name, members = g.split("=", 1)
        groups[name] = [m for m in members.split(",") if m]
    try:
        res = audit(traces, lineage=(lineage[0] if lineage and len(lineage) == 1 else lineage),
                    gold=gold, out_dir=out, metric_variant=metric_variant, n_resamples=resamples,
                    seed=seed, k=k, groups=groups or None, labels=labels or ())
    except InputError as exc:
        _fail_input(exc)
    console.print(render_markdown(res), markup=False, highlight=False)


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
    resamples: Annotated[int, typer.Option(help="Paired bootstrap resamples.")] = 3000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 1337,
    conversation: Annotated[list[str] | None, typer.Option(
        help="Only these LoCoMo conversations (repeatable).")] = None,
) -> None:
    """The native run matrix on LoCoMo: raw turns + parser facts at F1/F5/F8, lexical and dense."""
    from twistbench.audit.native import native_matrix
    from twistbench.audit.report import render_markdown

    try:
        res = native_matrix(locomo, out, retrievers=tuple(retriever or ("lexical", "dense")),
                            max_facts=tuple(max_facts or (1, 5, 8)), k=k, n_resamples=resamples,
                            seed=seed, conversations=conversation)
    except InputError as exc:
        _fail_input(exc)
    console.print(render_markdown(res.audit), markup=False, highlight=False)
    console.print(res.recommendation_table(), markup=False, highlight=False)


@audit_app.command("labels")
def audit_labels(
    cases: Annotated[Path, typer.Argument(help="contested_cases.jsonl written by `twist audit`.")],
    labels: Annotated[list[Path], typer.Argument(help="Rater CSVs (case_id, rater, label).")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the result as JSON.")] = None,
) -> None:
    """Semantic audit of contested credits: majority labels, Fleiss' kappa, pairwise agreement."""
    from twistbench.audit.contested import semantic_audit_files

    try:
        res = semantic_audit_files(cases, labels, out)
    except InputError as exc:
        _fail_input(exc)
    console.print(json.dumps(_as_jsonable(res), indent=2), markup=False, highlight=False)


def _as_jsonable(obj):  # noqa: ANN001, ANN202
    from dataclasses import asdict, is_dataclass

    if hasattr(obj, "model_dump"):
        return obj.model_dump()
    if is_dataclass(obj):
        return asdict(obj)
    return obj


@app.command()
def schema(
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write to this file.")] = None,
) -> None:
    """Print the JSON Schema of every record (datasets, items, system outputs)."""
    from twistbench.model import dump_json_schemas

    text = dump_json_schemas()
    if out:
        out.write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
