"""`twist report`: re-score saved run folders (no system is called) and render the profile.

For each run folder: read the manifest, load the dataset it names again (or take the one given),
check that its key sha256 is the one the run used, read items.jsonl, and score every track that
ran with the same pure functions the run used. The numbers are therefore identical to the ones
printed at the end of `twist run`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.markdown import Markdown

from twistbench.contract import Capabilities
from twistbench.datasets.keyfile import atomic_write_bytes
from twistbench.datasets.registry import DatasetOptions, load_dataset
from twistbench.errors import InputError
from twistbench.judges import DEFAULT_JUDGE, make_judge
from twistbench.model import Dataset
from twistbench.records import ItemRecord, read_manifest, read_records
from twistbench.report.profile import Profile, ProfileEntry, group_by_key
from twistbench.report.render import console_table, profile_json, render_profile_markdown
from twistbench.sanitize import plain
from twistbench.tracks import TRACK_ORDER, TRACKS, RunScores, score_run
from twistbench.tracks.b_alignment import score_predictions, write_predictions
from twistbench.tracks.base import TrackResult


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
                          include_crisis=bool(src.get("include_crisis")))
    return load_dataset(name, opts)


def score_folder(folder: str | Path, dataset: Dataset | None = None,
                 locomo: Path | None = None) -> tuple[ProfileEntry, Dataset, list[ItemRecord]]:
    """Re-score one run folder. Raises InputError if the dataset's key sha256 differs from the
    run's (a report on another key would silently mix items)."""
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
    judge = make_judge((manifest.get("judge") or {}).get("name") or DEFAULT_JUDGE)
    scores = score_run(dataset, records, caps, keys=ran, judge=judge,
                       source=str(folder / "items.jsonl"))
    for k in TRACK_ORDER:
        if k not in ran:
            reason = plan.get(k, "not run")
            reason = reason[5:] if reason.startswith("N/A: ") else reason
            scores.tracks[k] = TrackResult.not_applicable(k, TRACKS[k].title, reason)
    system = (manifest.get("system") or {}).get("name") or folder.name
    return ProfileEntry(system=system, scores=scores, run=str(folder)), dataset, records


@dataclass
class RunsReport:
    """`markdown`: profile tables plus every metric per system (report.md); `summary`: the
    profile tables and N/A reasons only (what the console shows); `data`: everything as JSON."""

    profiles: list[Profile]
    markdown: str
    data: dict[str, Any]
    entries: list[ProfileEntry] = field(default_factory=list)
    summary: str = ""

    def print(self, console: Any, details: bool = False) -> None:
        """Print the profile: a compact table per key and why each N/A cell is N/A;
        details=True prints the whole Markdown report (every metric, with intervals)."""
        if details:
            console.print(Markdown(self.markdown))
            return
        for profile in self.profiles:
            console.print(console_table(profile))
            for row in profile.rows:
                for col, cell in row.cells.items():
                    if cell.status == "n/a" and cell.reason:
                        console.print(f"  [dim]{plain(row.system)} · {col}: N/A — "
                                      f"{plain(cell.reason)}[/]", highlight=False)


def report_entries(entries: list[ProfileEntry], details: bool = True) -> RunsReport:
    """Profiles (one per key) for in-memory scores, rendered as Markdown and JSON data."""
    profiles = group_by_key(entries)
    md = "\n".join(render_profile_markdown(p, details=details) for p in profiles)
    summary = "\n".join(render_profile_markdown(p, details=False) for p in profiles)
    data = {"format": "twist-report/1", "profiles": [profile_json(p) for p in profiles]}
    return RunsReport(profiles=profiles, markdown=md, data=data, entries=entries, summary=summary)


def report_runs(folders: list[Path], locomo: Path | None = None, dataset: Dataset | None = None,
                details: bool = True) -> RunsReport:
    """Re-score run folders without calling any system; one profile per dataset key.

    `dataset`: use this dataset instead of loading the one each manifest names (it must have the
    run's key sha256). `locomo`: path of locomo10.json for LoCoMo-based datasets, overriding the
    one recorded in the manifest."""
    entries = [score_folder(f, dataset=dataset, locomo=locomo)[0] for f in folders]
    return report_entries(entries, details=details)


def export_predictions(folder: str | Path, out: str | Path) -> int:
    """Write a run's Track B verdicts in the public TWIST predictions format (one JSON object
    per line: item_id = draft id, aligned, evidence). Returns the number of lines written;
    failed calls are left out (they are errors, which the format cannot express)."""
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
            k, TRACKS[k].title, "not run (predictions file holds Track B only)")
    scores.tracks["B"] = score_predictions(dataset, path)
    return report_entries([ProfileEntry(system=system, scores=scores, run=str(path))],
                          details=details)
