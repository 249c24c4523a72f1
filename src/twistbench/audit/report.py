"""Markdown rendering of an audit in the paper's table shapes (TIAP Tables 2, 4, 5, 6)."""

from __future__ import annotations

import math
from typing import Any

from twistbench.audit.metrics import METRICS, metric_label
from twistbench.audit.result import AuditResult
from twistbench.audit.targets import TARGET_LABELS, TARGETS


def _f(x: Any, signed: bool = False, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def _pct(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{100 * x:.1f}%"


def _ci(iv: dict[str, Any]) -> str:
    if iv.get("n", 0) == 0 or iv["estimate"] is None:
        return "n/a"
    est = iv["estimate"]
    if isinstance(est, float) and math.isnan(est):
        return "n/a"
    mark = "*" if (iv["low"] > 0 or iv["high"] < 0) else ""
    return f"{est:+.3f} [{iv['low']:+.3f}, {iv['high']:+.3f}]{mark}"


def _winner_cell(winner: str | None) -> str:
    return "n/a (n = 0)" if winner is None else winner


def _bucket_key(bucket: str) -> int:
    digits = "".join(c if c.isdigit() else " " for c in bucket).split()
    return int(digits[0]) if digits else 0


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _pair(a: str, b: str) -> str:
    return f"{TARGET_LABELS[a]} − {TARGET_LABELS[b]}"


def render_audit_markdown(result: AuditResult) -> str:
    """The audit as Markdown: configuration, coverage, scores, shifts with CIs, coverage gap,
    instability, run comparisons with winner flips, design recommendations, contested credits
    and (when labels were given) the semantic audit."""
    c = result.config
    k = c.k
    ml = {m: metric_label(m, k) for m in METRICS}
    lines: list[str] = ["# TIAP scoring-target audit", ""]
    lines += [
        f"- Cutoff k = {k}; metric variant **{c.metric_variant}**: {c.metric_definition}.",
        f"- Targets: Raw, Source, Canonical; {c.anchor_policy}.",
        f"- Bootstrap: {c.n_resamples:,} resamples, {c.ci_method}, "
        f"{100 * c.confidence:.0f}% interval, seed {c.seed}. `*` = interval excludes 0.",
        "- Queries without an eligible id under a target are targetless there: reported, "
        "never scored as zero. Errors and missing traces are counted, never scored.",
        "",
        "## Runs and target coverage",
        "",
    ]
    rows = []
    for r in result.runs:
        cov = r["coverage"]
        rows.append([r["name"], str(r["scored"]), str(r["errors"]), str(r["missing"]),
                     *(f"{cov[t]['eligible']} / {cov[t]['targetless']}" for t in TARGETS),
                     str(r["shared_n"]), str(r["unknown_ids"]), str(r["stored_memories"])])
    lines += _table(["run", "scored", "errors", "missing",
                     *(f"{TARGET_LABELS[t]} eligible / targetless" for t in TARGETS),
                     "shared (all 3)", "unknown ids", "memories"], rows)
    lines += ["", "## Scores per target", "",
              "Full run = mean over the queries eligible under that target; shared = mean over "
              "the run's queries eligible under all three targets.", ""]
    rows = []
    for r in result.runs:
        for t in TARGETS:
            rows.append([r["name"], TARGET_LABELS[t], str(r["full"][t]["n"]),
                         *(_f(r["full"][t][m]) for m in METRICS), str(r["shared"][t]["n"]),
                         *(_f(r["shared"][t][m]) for m in METRICS)])
    lines += _table(["run", "target", "n (full)", *(f"{ml[m]} full" for m in METRICS),
                     "n (shared)", *(f"{ml[m]} shared" for m in METRICS)], rows)

    lines += ["", "## Score shifts (same rankings, target changed)", "",
              "Mean per-query difference on the queries eligible under both targets, "
              "paired bootstrap CI.", ""]
    rows = [[s["run"], _pair(s["a"], s["b"]), str(s["n"]), *(_ci(s["delta"][m]) for m in METRICS)]
            for s in result.shifts]
    lines += _table(["run", "comparison", "n", *(f"Δ {ml[m]}" for m in METRICS)], rows)

    gap = result.coverage_gap
    lines += ["", "## Coverage gap", "",
              "Raw score of queries that have a Canonical target minus queries that have none "
              "(independent-groups bootstrap; the mean run-level gap resamples each run).", ""]
    rows = [[g["run"], str(g["covered"]), str(g["uncovered"]),
             *(_ci(g["gap"][m]) for m in METRICS)] for g in gap["per_run"]]
    rows.append(["**mean run-level gap**", "", "", *(_ci(gap["mean_run_gap"][m]) for m in METRICS)])
    lines += _table(["run", "covered", "uncovered", *(f"Raw {ml[m]} gap" for m in METRICS)], rows)

    lines += ["", "## Query-level instability", "",
              f"Share of queries whose score changes at all / by at least {c.min_change:g} "
              "when only the target changes.", ""]
    rows = [[e["run"], _pair(e["a"], e["b"]), str(e["n"]),
             *(f"{_pct(e['overall'][m]['changed'])} / {_pct(e['overall'][m]['changed_ge'])}"
               for m in METRICS)] for e in result.instability]
    lines += _table(["run", "comparison", "n", *(f"{ml[m]} changed / ≥{c.min_change:g}"
                                                 for m in METRICS)], rows)
    lines += ["", f"By category ({ml['ndcg']}, changed / ≥{c.min_change:g}, n):", ""]
    rows = []
    for e in result.instability:
        for cat, v in e["by_category"].items():
            d = v["ndcg"]
            rows.append([e["run"], _pair(e["a"], e["b"]), str(cat), str(d["n"]),
                         f"{_pct(d['changed'])} / {_pct(d['changed_ge'])}"])
    lines += _table(["run", "comparison", "category", "n", "changed / ≥"], rows)

    if result.comparisons:
        lines += ["", "## Run comparisons", "",
                  "Δ_t(A, B) = M_t(A) − M_t(B) under each target on the queries eligible under "
                  "that target in both runs (n per target; the query sets differ between "
                  "targets). n = 0 means nothing was compared there, never a tie.", ""]
        rows = []
        for cmp_ in result.comparisons:
            for t in TARGETS:
                pt = cmp_["per_target"][t]
                rows.append([f"{cmp_['a']} vs {cmp_['b']}", TARGET_LABELS[t], str(pt["n"]),
                             *(_ci(pt["delta"][m]) for m in METRICS),
                             *(_winner_cell(pt["winner"][m]) for m in METRICS)])
        lines += _table(["A vs B", "target", "n", *(f"Δ {ml[m]}" for m in METRICS),
                         *(f"better on {ml[m]}" for m in METRICS)], rows)
        empty = [(cmp_, t) for cmp_ in result.comparisons for t in TARGETS
                 if cmp_["per_target"][t]["n"] == 0]
        if empty:
            lines += [""] + [f"- {cmp_['a']} vs {cmp_['b']}, {TARGET_LABELS[t]}: n = 0 "
                             f"({cmp_['per_target'][t]['why_empty']})." for cmp_, t in empty]

        lines += ["", "## Winner flips on the shared subset", "",
                  "The same comparison on the queries eligible under all three targets in both "
                  "runs, so only the target changes. Flip: the sign of Δ changes across targets "
                  "(flip_ci: intervals exclude 0 in opposite directions).", ""]
        rows = []
        for cmp_ in result.comparisons:
            sh = cmp_["shared"]
            if sh["n"] == 0:
                continue
            for m in METRICS:
                f = cmp_["flips"][m]
                rows.append([f"{cmp_['a']} vs {cmp_['b']}", ml[m], str(sh["n"]),
                             *(_ci(sh["delta"][t][m]) for t in TARGETS),
                             *(_winner_cell(f["winner"][t]) for t in TARGETS),
                             "yes" if f["flip"] else "no", "yes" if f["flip_ci"] else "no"])
        if rows:
            lines += _table(["A vs B", "metric", "n", *(f"Δ {TARGET_LABELS[t]}" for t in TARGETS),
                             *(f"better under {TARGET_LABELS[t]}" for t in TARGETS),
                             "flip", "flip_ci"], rows)
        no_shared = [cmp_ for cmp_ in result.comparisons if cmp_["shared"]["n"] == 0]
        if no_shared:
            lines += [""] * bool(rows) + [
                f"- {cmp_['a']} vs {cmp_['b']}: no shared subset (n = 0): "
                f"{cmp_['shared']['why_empty']}." for cmp_ in no_shared]
        flips = [cmp_["flips"][m]["flip"] for cmp_ in result.comparisons for m in METRICS
                 if cmp_["flips"][m]["flip"] is not None]
        lines += ["", f"Winner flips: {sum(flips)} of {len(flips)} comparison × metric cells "
                      "with a shared subset."]

    if result.recommendations:
        lines += ["", "## Design recommendations", "",
                  "Best configuration per metric and target, each target on the queries eligible "
                  "under it in every configuration of the group (n per target).", ""]
        rows = []
        for rec in result.recommendations:
            for m in METRICS:
                rows.append([rec["group"], ml[m], " / ".join(str(rec["n"][t]) for t in TARGETS),
                             *(_winner_cell(rec["best"][m][t]) for t in TARGETS),
                             "**yes**" if rec["changes"][m] else "no"])
        lines += _table(["group", "metric", "n " + " / ".join(TARGET_LABELS[t] for t in TARGETS),
                         *(f"best under {TARGET_LABELS[t]}" for t in TARGETS), "changes"], rows)
        empty_rec = [(rec, t) for rec in result.recommendations for t in TARGETS
                     if rec["n"][t] == 0]
        if empty_rec:
            lines += [""] + [f"- {rec['group']}, {TARGET_LABELS[t]}: n = 0 "
                             f"({rec['why_empty'][t]})." for rec, t in empty_rec]
        lines += ["", "Means behind the recommendations:", ""]
        rows = []
        for rec in result.recommendations:
            for m in METRICS:
                for cfg in rec["configurations"]:
                    rows.append([rec["group"], ml[m], cfg,
                                 *(_f(rec["means"][m][t][cfg]) for t in TARGETS)])
        lines += _table(["group", "metric", "configuration",
                         *(TARGET_LABELS[t] for t in TARGETS)], rows)

    con = result.contested
    lines += ["", "## Contested credits (Raw misses, Source and Canonical credit)", "",
              f"{con.get('total', 0)} cases ({con.get('definition', '')}).", ""]
    rows = [[r, str(n)] for r, n in con.get("per_run", {}).items()]
    lines += _table(["run", "cases"], rows)
    if con.get("by_rank_bucket"):
        lines += ["", "By credited rank: " + ", ".join(
            f"{b}: {n}" for b, n in sorted(con["by_rank_bucket"].items(),
                                           key=lambda kv: _bucket_key(kv[0])))]
    sem = result.semantic
    if sem:
        lines += ["", "## Semantic audit of contested credits", "",
                  f"{sem['n_labelled']} of {sem['n_cases']} cases labelled by "
                  f"{len(sem['raters'])} rater(s): {', '.join(sem['raters'])}.", ""]
        mc, ms = sem["majority_counts"], sem["majority_shares"]
        rows = [[lab, str(mc.get(lab, 0)), _pct(ms.get(lab)) if lab in ms else ""]
                for lab in ("supports", "partial", "does_not_support", "no_majority")]
        lines += _table(["majority label", "cases", "share (of cases with a majority)"], rows)
        lines += ["", *_table(["agreement", "three-class", "binary"], [
            ["Fleiss' κ (cases rated by all raters, n=" + str(sem["n_complete"]) + ")",
             _f(sem["fleiss_kappa_three"]), _f(sem["fleiss_kappa_binary"])],
            ["mean pairwise agreement", _pct(sem["pairwise_agreement_three"]),
             _pct(sem["pairwise_agreement_binary"])],
        ]), "", f"Binary mapping: {sem['binary_mapping']}."]
    if result.files:
        lines += ["", "Files: " + ", ".join(f"`{v}`" for v in result.files.values())]
    return "\n".join(lines) + "\n"
