"""The variety report of TWIST-CS: the look-alike turns of Track A and the template pools they
come from (what `twist build cs` prints; the gate that items do not leak their label)."""

from __future__ import annotations

from twistbench.itemgen.templates import cs_tension as TN
from twistbench.itemgen.variety import VarietyReport, variety_report
from twistbench.model import Dataset, Event


def turn_body(ev: Event) -> str:
    """The words of a turn without its e-mail greeting and sign-off."""
    if ev.channel == "email":
        parts = ev.text.split("\n\n")
        if len(parts) >= 3:
            return "\n\n".join(parts[1:-1])
    return ev.text


def cs_variety_rows(dataset: Dataset) -> list[tuple[str, str, str, str, str]]:
    """Variety-report rows for a built or loaded TWIST-CS dataset: every reversal turn and every
    hard-negative look-alike turn, as (arc id, label, family, template id, turn body)."""
    rows: list[tuple[str, str, str, str, str]] = []
    for conv in dataset.conversations:
        idx = conv.event_index()
        for arc in dataset.items_of(conv.id, "reversal_arcs"):
            for tid in arc.reversal:
                rows.append((arc.id, "reversal", arc.family, arc.meta["templates"]["reversal"],
                             turn_body(idx[tid])))
        for arc in dataset.items_of(conv.id, "hard_negative_arcs"):
            for tid, tmpl in zip(arc.turns, arc.meta["templates"]["turns"]):
                rows.append((arc.id, "hard_negative", arc.family, tmpl, turn_body(idx[tid])))
    return rows


def template_pool() -> dict[str, int]:
    """How many turn templates (frame x topic clause) each family can draw from."""
    n_neg = sum(len(t["neg"]) for t in TN.TOPICS.values())
    out = {fam: len(TN.REVERSAL_FRAMES) * n_neg for fam in TN.REVERSAL_FAMILIES}
    for fam, (frames, kind) in TN.HARD_NEGATIVE_FAMILIES.items():
        out[fam] = len(frames) * sum(len(t[kind]) for t in TN.TOPICS.values())
    return out


def cs_variety_report(dataset: Dataset, seed: int) -> VarietyReport:
    """The variety report of a TWIST-CS dataset (what `twist build cs` prints)."""
    report = variety_report(cs_variety_rows(dataset), seed=seed)
    report.extra["template_pool"] = template_pool()
    report.extra["frames"] = {
        **{fam: len(TN.REVERSAL_FRAMES) for fam in TN.REVERSAL_FAMILIES},
        **{fam: len(frames) for fam, (frames, _) in TN.HARD_NEGATIVE_FAMILIES.items()},
    }
    return report
