"""The shortcut audit's report: one row per check (value, gate, pass/fail, n per class, which
baseline gave the value, the shuffled-label control), the surface table per item family, and
renderings for people (Markdown, a rich table) and for key metadata."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Candidate(_Model):
    """One baseline's result on one check."""

    model: str
    features: str
    value: float | None  # the gated form (folded for balanced accuracy and AUC)
    raw: float | None = None  # before folding


class ShortcutCheck(_Model):
    id: str  # "A.text", "A.nontext", "B.text", "B.skeleton", "find.items", ...
    title: str
    metric: str  # e.g. "balanced accuracy (folded)"
    value: float | None  # what is gated; None: not measurable here
    raw: float | None = None  # the value before folding (classifier checks)
    gate: str  # e.g. "<= 0.60"
    threshold: float
    passed: bool | None  # None: not measurable (too few items or groups)
    n: dict[str, int] = Field(default_factory=dict)  # per class
    groups: int | None = None  # held-out groups (leave-one-group-out)
    best: str = ""  # the baseline that gave the value
    candidates: list[Candidate] = Field(default_factory=list)
    control: float | None = None  # the same battery on shuffled labels (folded)
    partner: float | None = None  # the paired metric where one travels with the value
    partner_name: str = ""
    details: dict[str, Any] = Field(default_factory=dict)
    note: str = ""


class FamilySurface(_Model):
    """Wording variety of one item family."""

    family: str
    texts: int
    distinct_skeletons: int
    top_3gram: str
    top_3gram_share: float
    top_4gram: str
    top_4gram_share: float


class GateReport(_Model):
    dataset: str
    version: str
    key_sha256: str
    split: str  # how groups are formed
    seed: int
    checks: list[ShortcutCheck]
    surface: list[FamilySurface] = Field(default_factory=list)
    pii_detector: str = ""
    seconds: float = 0.0
    notes: list[str] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        """No measurable gate fails (a check that cannot be measured is shown, not failed)."""
        return all(c.passed is not False for c in self.checks)

    def failures(self) -> list[ShortcutCheck]:
        return [c for c in self.checks if c.passed is False]

    def check(self, check_id: str) -> ShortcutCheck:
        for c in self.checks:
            if c.id == check_id:
                return c
        raise KeyError(check_id)

    def to_meta(self) -> dict[str, Any]:
        """What a key records about its gates: no timings and values rounded to 3 decimals, so
        that the same build gives the same bytes."""
        def r(v: float | None) -> float | None:
            return None if v is None else round(v, 3)

        return {
            "battery": "twistbench.validation.shortcuts",
            "passed": self.passed,
            "split": self.split,
            "seed": self.seed,
            "pii_detector": self.pii_detector,
            "checks": {c.id: {"value": r(c.value), "gate": c.gate, "passed": c.passed,
                              "best": c.best, **({"partner": r(c.partner)}
                                                 if c.partner_name else {})}
                       for c in self.checks},
            "failures": [c.id for c in self.failures()],
        }

    # -- rendering ----------------------------------------------------------------------------

    def rows(self) -> list[list[str]]:
        out = []
        for c in self.checks:
            value = _fmt(c.value)
            if c.partner_name:
                value += f" / {_fmt(c.partner)}"
            elif c.raw is not None and c.value is not None and abs(c.raw - c.value) > 1e-12:
                value += f" ({_fmt(c.raw)})"
            out.append([c.id, c.title, c.metric, value, c.gate,
                        {True: "pass", False: "FAIL", None: "n/a"}[c.passed],
                        ", ".join(f"{k} {v}" for k, v in c.n.items()),
                        _fmt(c.control), c.best or c.note])
        return out

    def detail_lines(self) -> list[str]:
        """One line per check with details (what the table has no room for); the list of
        non-text feature names is left to the JSON, the fit counts come last."""
        out = []
        last = ("fits", "nonconverged_fits")
        for c in self.checks:
            shown = {k: v for k, v in c.details.items() if k != "features" and k not in last}
            shown.update((k, c.details[k]) for k in last if k in c.details)
            if shown:
                out.append(f"{c.id}: " + "; ".join(f"{k.replace('_', ' ')} {_plain(v)}"
                                                   for k, v in shown.items()))
        return out

    HEADER: ClassVar[list[str]] = ["check", "what", "metric", "value", "gate", "result", "n",
                                   "shuffled", "by"]

    def render_markdown(self) -> str:
        lines = [f"## Shortcut audit: {self.dataset} {self.version}", "",
                 (f"{self.split}; seed {self.seed}; PII detector: "
                  f"{self.pii_detector or 'n/a'}; {self.seconds:.1f} s."), ""]
        verdict = "PASS" if self.passed else "FAIL"
        fails = self.failures()
        lines += [f"**{verdict}** — {len(fails)} of "
                  f"{sum(c.passed is not None for c in self.checks)} measurable gates fail"
                  + (": " + ", ".join(c.id for c in fails) if fails else "") + ".", ""]
        lines += ["| " + " | ".join(self.HEADER) + " |", "|---" * len(self.HEADER) + "|"]
        lines += ["| " + " | ".join(_md(x) for x in row) + " |" for row in self.rows()]
        lines += ["", ("Value: the strongest baseline's (balanced accuracy and AUC folded: "
                       "|v - 0.5| + 0.5; raw shown when it differs). Shuffled: the same baselines "
                       "on shuffled labels — what chance looks like at this size."), ""]
        if self.detail_lines():
            lines += ["### Details", ""] + [f"- {_md(x)}" for x in self.detail_lines()] + [""]
        detail = [c for c in self.checks if c.candidates]
        if detail:
            lines += ["### Every baseline", "", "| check | baseline | value | raw |",
                      "|---|---|---|---|"]
            for c in detail:
                for cand in c.candidates:
                    lines.append(f"| {c.id} | {cand.model} on {_md(cand.features)} | "
                                 f"{_fmt(cand.value)} | {_fmt(cand.raw)} |")
            lines.append("")
        if self.surface:
            lines += ["### Surface variety per item family", "",
                      ("| family | texts | distinct skeletons | top 3-gram (share) | "
                       "top 4-gram (share) |"), "|---|---|---|---|---|"]
            for f in self.surface:
                lines.append(f"| {f.family} | {f.texts} | {f.distinct_skeletons} | "
                             f"\"{_md(f.top_3gram)}\" ({f.top_3gram_share:.0%}) | "
                             f"\"{_md(f.top_4gram)}\" ({f.top_4gram_share:.0%}) |")
            lines.append("")
        notes = [f"{c.id}: {c.note}" for c in self.checks if c.note] + self.notes
        lines += [f"_{n}_" for n in notes]
        return "\n".join(lines).rstrip() + "\n"

    def to_rich(self) -> Any:
        """For a terminal: a compact table (fits 80 columns), then which baseline gave each
        value and what the values are; what each check is, in the Markdown and the JSON."""
        table = Table(title=f"Shortcut audit: {self.dataset} {self.version} "
                      f"({'PASS' if self.passed else 'FAIL'})", box=box.SIMPLE_HEAD)
        style = {"pass": "green", "FAIL": "bold red", "n/a": "yellow"}
        for h in ("check", "value", "gate", "result", "n", "shuffled"):
            table.add_column(h, overflow="fold", no_wrap=h in ("check", "result", "shuffled"))
        for c, row in zip(self.checks, self.rows()):
            cells = dict(zip(self.HEADER, row))
            table.add_row(c.id, cells["value"], cells["gate"],
                          f"[{style[cells['result']]}]{cells['result']}[/]",
                          " / ".join(str(v) for v in c.n.values()), cells["shuffled"])
        by = "\n".join(f"{c.id}: {c.best or c.note}" for c in self.checks if c.best or c.note)
        legend = ("A, B: balanced accuracy; find: AUC (both folded, |v - 0.5| + 0.5, the raw "
                  "value in brackets when it differs); C: current-answer rate; D: leak / "
                  "over-block; surface: duplicate share. n: per class. shuffled: the same "
                  "baselines on shuffled labels (chance at this size).")
        parts = [table, Text(by), Text(legend, style="dim")]
        if line := self.nonconverged_line():
            parts.append(Text(line, style="yellow"))
        return Group(*parts)

    def nonconverged_line(self) -> str:
        """One line for all the baseline fits that stopped at max_iter unconverged (sklearn's
        ConvergenceWarning, counted per check in details.nonconverged_fits); "" when none did."""
        counted = [c for c in self.checks if c.details.get("nonconverged_fits")]
        if not counted:
            return ""
        total = sum(c.details["nonconverged_fits"] for c in counted)
        fits = sum(c.details.get("fits", 0) for c in counted)
        where = ", ".join(f"{c.id} {c.details['nonconverged_fits']}" for c in counted)
        return (f"{total} of {fits} baseline fits in these checks stopped at max_iter "
                f"unconverged ({where}); see details.nonconverged_fits")


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _plain(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_plain(x)}" for k, x in v.items()) + "}"
    return str(v)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def major_version(version: str) -> int | None:
    """The major number of a key version ("twist-cs-1.0" -> 1, "twist-locomo-2.0+crisis" -> 2)."""
    m = re.search(r"(\d+)\.\d+", version)
    return int(m.group(1)) if m else None


def records_gates_in_key(version: str) -> bool:
    """Keys of version 2.0 and later carry their gate results in their metadata; 1.0 keys keep
    the bytes they were released with (their results go beside the key file instead)."""
    major = major_version(version)
    return major is not None and major >= 2
