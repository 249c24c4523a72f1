"""`twist report`: re-score saved run folders (no system is called) and render the profile.

A report of a run root covers every run folder under it, in run order (`runs.order`, written
by `twist run`), then any others by start time; folders named on the command line keep the
order given. A folder holding a TIAP audit.json adds its score shifts to the HTML report.

For each run folder: read the manifest, load the dataset it names again (or take the one given),
check that its key sha256 is the one the run used, read items.jsonl, and score every track that
ran with the same pure functions the run used. The numbers are therefore identical to the ones
printed at the end of `twist run`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.markdown import Markdown

from twistbench.contract import Capabilities
from twistbench.datasets.keyfile import atomic_write_bytes
from twistbench.datasets.registry import DatasetOptions, load_dataset
from twistbench.errors import InputError
from twistbench.judges import judge_from_record
from twistbench.model import Dataset
from twistbench.records import (
    ITEMS,
    MANIFEST,
    ItemRecord,
    charge_ingest_failures,
    read_manifest,
    read_records,
)
from twistbench.report.items import ItemViews, RunData, build_item_views
from twistbench.report.profile import JudgeInfo, Profile, ProfileEntry, group_by_key
from twistbench.report.render import profile_json, render_profile_markdown
from twistbench.report.terminal import profile_lines
from twistbench.tracks import TRACK_ORDER, TRACKS, RunScores, locomo_qa, score_run
from twistbench.tracks.b_alignment import score_predictions, write_predictions
from twistbench.tracks.base import TrackResult


def _title(track: str, dataset_name: str) -> str:
    """A track's title on a dataset: the QA track is named after the dataset's corpus."""
    return locomo_qa.title_for(dataset_name) if track == locomo_qa.KEY else TRACKS[track].title


def restrict(dataset: Dataset, conversations: list[str] | None) -> Dataset:
    """The dataset cut down to these conversations (a run limited with --conversation)."""
    if not conversations:
        return dataset
    keep = set(conversations)
    data: dict[str, Any] = {"conversations": [c for c in dataset.conversations if c.id in keep]}
    for fld in Dataset.ITEM_FIELDS:
        data[fld] = [it for it in getattr(dataset, fld) if it.conversation in keep]
    return dataset.model_copy(update=data)


def capabilities_from_manifest(manifest: dict[str, Any], where: str) -> Capabilities:
    caps = (manifest.get("system") or {}).get("capabilities")
    if not isinstance(caps, dict):
        raise InputError(where, "missing", field="system.capabilities",
                         expected="the system's capability flags")
    known = set(Capabilities().as_dict())
    return Capabilities(**{k: bool(v) for k, v in caps.items() if k in known})


def load_run_dataset(manifest: dict[str, Any], where: str, locomo: Path | None = None) -> Dataset:
    """Load the dataset a run used, from the manifest's dataset.source."""
    src = (manifest.get("dataset") or {}).get("source") or {}
    name = src.get("name")
    if not name:
        raise InputError(where, "the manifest does not say how to load its dataset",
                         field="dataset.source.name",
                         expected="a run written by `twist run` (or pass the dataset)")
    loc = locomo or (Path(src["locomo"]) if src.get("locomo") else None)
    opts = DatasetOptions(locomo=loc, errata=src.get("errata"),
                          include_crisis=bool(src.get("include_crisis")),
                          data=Path(src["data"]) if src.get("data") else None,
                          granularity=str(src.get("granularity") or "turn"),
                          tier=src.get("tier"))
    return load_dataset(name, opts)


def display_name(manifest: dict[str, Any], folder: Path) -> str:
    """What a run is called in tables: its label, else its system's name, else its folder."""
    system = manifest.get("system") or {}
    return str(system.get("label") or system.get("name") or folder.name)


def load_run(folder: str | Path, dataset: Dataset | None = None, locomo: Path | None = None,
             name: str | None = None) -> tuple[ProfileEntry, RunData]:
    """Re-score one run folder: its profile entry and what the item browser needs. Raises
    InputError if the dataset's key sha256 differs from the run's (a report on another key
    would silently mix items)."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    where = str(folder / "manifest.json")
    if dataset is None:
        dataset = load_run_dataset(manifest, where, locomo)
    want = (manifest.get("dataset") or {}).get("sha256")
    if want != dataset.key_sha256:
        raise InputError(where, f"the run used key sha256 {want}, the dataset loaded now has "
                         f"{dataset.key_sha256}", field="dataset.sha256",
                         expected="the same key file (and LoCoMo file) the run used")
    conversations = (manifest.get("config") or {}).get("conversations")
    dataset = restrict(dataset, conversations)
    caps = capabilities_from_manifest(manifest, where)
    records = read_records(folder)
    plan: dict[str, str] = manifest.get("tracks") or {}
    ran = [k for k in TRACK_ORDER if plan.get(k, "run") == "run"]
    try:
        judge = judge_from_record(manifest.get("judge"))
    except InputError as exc:  # the judge a manifest names is the manifest's error, not --judge's
        raise InputError(where, exc.message, field="judge.name", expected=exc.expected) from exc
    scores = score_run(dataset, records, caps, keys=ran, judge=judge,
                       source=str(folder / "items.jsonl"))
    recorded_answerer = manifest.get("answerer")
    if recorded_answerer is not None and not isinstance(recorded_answerer, dict):
        raise InputError(where, f"is a {type(recorded_answerer).__name__}", field="answerer",
                         expected="an object (name, version, model) written by twist run")
    scores.answerer = answerer_used(recorded_answerer, records)
    for k in TRACK_ORDER:
        if k not in ran:
            reason = plan.get(k, "not run")
            reason = reason[5:] if reason.startswith("N/A: ") else reason
            scores.tracks[k] = TrackResult.not_applicable(k, _title(k, dataset.name), reason)
    name = name or display_name(manifest, folder)
    try:
        info = JudgeInfo.from_manifest(manifest.get("judge"), judge)
    except (AttributeError, TypeError, ValueError) as exc:  # a hand-edited calibration record
        raise InputError(where, f"unreadable judge record ({type(exc).__name__}: {exc})",
                         field="judge.calibration",
                         expected="the judge record twist run wrote") from exc
    entry = ProfileEntry(system=name, scores=scores, run=str(folder), judge=info)
    # the item browser sees the records as scoring did: a failed ingest's items are errors
    return entry, RunData(name=name, dataset=dataset, records=charge_ingest_failures(records),
                          caps=caps, judge=judge, scores=scores)


def score_folder(folder: str | Path, dataset: Dataset | None = None,
                 locomo: Path | None = None) -> tuple[ProfileEntry, Dataset, list[ItemRecord]]:
    """Re-score one run folder: (profile entry, the dataset as scored, the records)."""
    entry, data = load_run(folder, dataset=dataset, locomo=locomo)
    return entry, data.dataset, data.records


# ---------------------------------------------------------------------------------------------
# Which folders a report covers, in which order

RUN_ORDER = "runs.order"  # in a run root: the folder names in the order they were first run
AUDIT_JSON = "audit.json"


def record_run_order(root: str | Path, folder: str | Path) -> None:
    """Note a run folder in its root's run order (first run first); idempotent."""
    root, name = Path(root), Path(folder).name
    path = root / RUN_ORDER
    names = _read_order(path)
    if name not in names:
        atomic_write_bytes(path, ("\n".join([*names, name]) + "\n").encode("utf-8"))


def _read_order(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _started(folder: Path) -> str:
    try:
        return str(read_manifest(folder).get("started") or "")
    except InputError:
        return ""


def runs_under(root: Path) -> list[Path]:
    """The run folders one level below a root: in the root's run order, then any others by
    start time and name (a stable order, never alphabetical re-sorting of a known order)."""
    subs = [d for d in root.iterdir() if d.is_dir() and (d / MANIFEST).exists()]
    order = {n: i for i, n in enumerate(_read_order(root / RUN_ORDER))}
    return sorted(subs, key=lambda d: (order.get(d.name, len(order)), _started(d), d.name))


@dataclass
class Sources:
    runs: list[Path]
    audits: list[Path]


def find_sources(paths: Sequence[str | Path]) -> Sources:
    """Run folders and audit folders (holding audit.json) named directly or found one level
    below a named root, in the order given; under a root, in run order."""
    runs: list[Path] = []
    audits: list[Path] = []
    for p in map(Path, paths):
        if (p / MANIFEST).exists():
            runs.append(p)
            continue
        if (p / AUDIT_JSON).exists():
            audits.append(p)
            continue
        subs = runs_under(p) if p.is_dir() else []
        subs_audit = sorted(d for d in p.iterdir() if d.is_dir() and (d / AUDIT_JSON).exists()
                            ) if p.is_dir() else []
        if not subs and not subs_audit:
            raise InputError(str(p), "no run folder here", expected="a folder with manifest.json "
                             "(or audit.json), or a folder of such folders")
        runs += [d for d in subs if d not in runs]
        audits += [d for d in subs_audit if d not in audits]
    if not runs:
        raise InputError(", ".join(map(str, paths)), "no run folder among these",
                         expected="at least one folder written by `twist run`")
    return Sources(runs=runs, audits=audits)


def _unique_names(folders: Sequence[Path], names: list[str]) -> list[str]:
    """Names as shown; two runs of one name are told apart by their folder (then its root)."""
    out = list(names)
    for i, n in enumerate(names):
        if names.count(n) > 1:
            out[i] = f"{n} ({folders[i].name})"
    for i, n in enumerate(list(out)):
        if out.count(n) > 1:
            out[i] = f"{names[i]} ({folders[i].parent.name}/{folders[i].name})"
    for i, n in enumerate(out):
        if out.count(n) > 1:
            out[i] = f"{n} #{i + 1}"
    return out


def read_audit(folder: str | Path) -> dict[str, Any]:
    """The parts of a TIAP audit.json the report shows (score shifts by target)."""
    path = Path(folder) / AUDIT_JSON
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"cannot read the audit: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("shifts"), list):
        raise InputError(str(path), "no score shifts", field="shifts",
                         expected="audit.json written by `twist audit`")
    return {"folder": str(folder), "config": doc.get("config") or {}, "shifts": doc["shifts"]}


def answerer_used(recorded: dict[str, Any] | None, records: list[ItemRecord]
                  ) -> dict[str, Any]:
    """The run's answerer and how many recall answers it wrote (from the system's memories)
    out of all recall answers; a run from before answerers existed had none."""
    answered = recalls = 0
    for r in records:
        answer = (r.output or {}).get("answer") if r.ok else None
        if isinstance(answer, dict):
            recalls += 1
            answered += answer.get("retrieved") is not None
    base = dict(recorded) if recorded else {"name": "extractive", "version": "1",
                                            "model": None, "recorded": False}
    return {**base, "answered": answered, "recalls": recalls}


@dataclass
class RunsReport:
    """`markdown`: profile tables plus every metric per system (report.md); `summary`: the
    profile tables and N/A reasons only; `data`: everything as JSON; `runs`: per run what the
    HTML item browser needs; `audits`: TIAP audits included in the report."""

    profiles: list[Profile]
    markdown: str
    data: dict[str, Any]
    entries: list[ProfileEntry] = field(default_factory=list)
    summary: str = ""
    runs: list[RunData] = field(default_factory=list)
    audits: list[dict[str, Any]] = field(default_factory=list)
    _views: dict[str, ItemViews] = field(default_factory=dict, repr=False)

    def print(self, console: Any, details: bool = False, written: Sequence[str] = ()) -> None:
        """Print the profile: a compact table per key (80 columns or the console's width) and
        why each N/A cell is N/A; details=True prints the whole Markdown report."""
        if details:
            console.print(Markdown(self.markdown))
            return
        for profile in self.profiles:
            for line in profile_lines(profile, width=console.width, written=written):
                console.print(line, highlight=False)

    def markdown_with_images(self, images: Sequence[str | None]) -> str:
        """report.md: each profile with its picture above the table."""
        return "\n".join(render_profile_markdown(p, image=img)
                         for p, img in zip(self.profiles, images))

    def runs_of(self, profile: Profile) -> list[RunData]:
        """The run data of a profile's rows, in row order."""
        return [r for r in self.runs if r.scores.key_sha256 == profile.key_sha256]

    def views(self, profile: Profile) -> ItemViews:
        """The per-item views of a profile's runs (built once)."""
        if profile.key_sha256 not in self._views:
            self._views[profile.key_sha256] = build_item_views(self.runs_of(profile))
        return self._views[profile.key_sha256]


def report_entries(entries: list[ProfileEntry], details: bool = True,
                   runs: list[RunData] | None = None,
                   audits: list[dict[str, Any]] | None = None) -> RunsReport:
    """Profiles (one per key) for in-memory scores, rendered as Markdown and JSON data."""
    profiles = group_by_key(entries)
    md = "\n".join(render_profile_markdown(p, details=details) for p in profiles)
    summary = "\n".join(render_profile_markdown(p, details=False) for p in profiles)
    data: dict[str, Any] = {"format": "twist-report/1",
                            "profiles": [profile_json(p) for p in profiles]}
    if audits:
        data["audits"] = audits
    return RunsReport(profiles=profiles, markdown=md, data=data, entries=entries, summary=summary,
                      runs=runs or [], audits=audits or [])


def report_runs(folders: list[Path], locomo: Path | None = None, dataset: Dataset | None = None,
                details: bool = True, labels: Sequence[str] | None = None,
                audits: Sequence[Path] = ()) -> RunsReport:
    """Re-score run folders without calling any system; one profile per dataset key.

    `dataset`: use this dataset instead of loading the one each manifest names (it must have the
    run's key sha256). `locomo`: path of locomo10.json for LoCoMo-based datasets, overriding the
    one recorded in the manifest. `labels`: names for the runs, in order (default: each run's
    label or system name). `audits`: TIAP audit folders whose score shifts the report shows."""
    if labels and len(labels) != len(folders):
        raise InputError("--label", f"{len(labels)} label(s) for {len(folders)} run folder(s)",
                         expected="one --label per run folder, in order")
    names = list(labels) if labels else [display_name(read_manifest(f), Path(f))
                                         for f in folders]
    names = _unique_names([Path(f) for f in folders], names)
    loaded = [load_run(f, dataset=dataset, locomo=locomo, name=n)
              for f, n in zip(folders, names)]
    return report_entries([e for e, _ in loaded], details=details, runs=[d for _, d in loaded],
                          audits=[read_audit(a) for a in audits])


def export_predictions(folder: str | Path, out: str | Path) -> int:
    """Write a run's Track B verdicts in the public TWIST predictions format (one JSON object
    per line: item_id = draft id, aligned, evidence). Returns the number of lines written;
    failed calls are left out (they are errors, which the format cannot express). InputError
    for a folder without items.jsonl (a typo must not give an empty predictions file)."""
    if not (Path(folder) / ITEMS).is_file():
        raise InputError(str(folder), f"no {ITEMS} here", field="run_dir",
                         expected="a run folder written by `twist run`")
    lines = write_predictions(read_records(folder))
    atomic_write_bytes(out, ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
    return len(lines)


def report_predictions(dataset: Dataset, path: str | Path, system: str = "external",
                       details: bool = True) -> RunsReport:
    """Score a public-format Track B predictions file (made by any harness) against `dataset`
    and render it as a one-row profile (every other column N/A: not run)."""
    caps = Capabilities(check_alignment=True)
    scores = RunScores(dataset=dataset.name, dataset_version=dataset.version,
                       key_sha256=dataset.key_sha256, capabilities=caps.as_dict())
    for k in TRACK_ORDER:
        scores.tracks[k] = TrackResult.not_applicable(
            k, _title(k, dataset.name), "not run (predictions file holds Track B only)")
    scores.tracks["B"] = score_predictions(dataset, path)
    return report_entries([ProfileEntry(system=system, scores=scores, run=str(path))],
                          details=details)
