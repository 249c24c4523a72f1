"""Judge calibration on decoys (whitepaper §6.2; `twist judge calibrate --judge NAME`).

A judge is run on answers that are wrong by construction and must reject them:
- LoCoMo (judge_qa, against the gold answer), the LoCoMo audit's two decoy files
  (datasets/decoys.py): `specific_but_wrong` (a confident wrong value) and
  `vague_but_topical` (on topic, no fact);
- TWIST (classify, on a Track C chain's current query), built here from the chains:
  `plausible_wrong` (values of the same kind taken from other chains, as many as the chain
  holds now, confidently stated),
  `stale_as_current` (the superseded value stated as what holds now) and `hedged` (the
  superseded and the current value, neither committed to). A Track C answer is accepted when
  the judge calls it current (outcome "current" or "history"), as Track C counts it.
Beside the decoys, two controls a judge must accept, so that a judge rejecting everything
cannot pass: `locomo_gold` (the gold answer itself) and `twist_current` (the current value,
stated in the same frame as the chain's decoys; only the value differs between them).

Each style gets its rejection rate (controls: acceptance rate) with a Wilson interval. A judge
passes when every rate is at least PASS_RATE (0.95); below it on any style, it is marked as
failing calibration in every report that uses it. A judgement that fails (JudgeError) is
counted apart and left out of the rate, never counted as a rejection.

An incomplete calibration never passes: every style the judge can be asked about is required
(the three TWIST styles and their control; the two LoCoMo styles and their control too for a
judge with judge_qa), and a required style that was not judged (`--no-locomo-decoys`, chains
with nothing superseded) or on which the judge erred even once keeps it from passing. A
record's verdict is re-derived from its styles whenever it is read, so a stored file cannot
claim more than its rates show.

Results are stored as small JSON files per judge identity (name, version, model, prompts'
sha256): `calibration_dir()` / <name>-<model>-<identity hash>.json; runs copy the result for
their judge into the manifest, and reports print it beside every judged column.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from twistbench.judges.base import (
    Judge,
    JudgeError,
    JudgeVerdict,
    QACase,
    QAJudge,
    QAVerdict,
    classify_all,
    judge_identity,
    judge_qa_all,
)
from twistbench.judges.structural import contains_form
from twistbench.model import Answer, ChainQuery, QADecoy, UpdateChain
from twistbench.stats import wilson

FORMAT = "twist-judge-calibration/1"
PASS_RATE = 0.95
LOCOMO_STYLES = ("specific_but_wrong", "vague_but_topical")
TWIST_STYLES = ("plausible_wrong", "stale_as_current", "hedged")
CONTROL_STYLES = ("locomo_gold", "twist_current")
ENV_DIR = "TWIST_CALIBRATION_DIR"
DEFAULT_DIR = ".twistbench-cache/calibration"

# One frame per chain (chosen by the chain's id) for its control and its decoys alike, so the
# wording never tells a decoy from the control: only the value differs.
ASSERT_FRAMES = (
    "It's {v} now.",
    "Currently it's {v}.",
    "{v}, as of the latest update.",
    "The latest I have is {v}.",
)
HEDGE_FRAMES = (
    "Either {a} or {b}; I'm not sure which one holds.",
    "It's {a} or {b}, I can't tell which.",
    "Possibly {a}, possibly {b}.",
)


@dataclass(frozen=True)
class ChainDecoy:
    """One Track C answer to judge: `decoy` False for a control (to be accepted)."""

    style: str
    chain: UpdateChain
    query: ChainQuery
    answer: str
    decoy: bool = True


def _pick(key: str, n: int) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % n


def _sentence(frame: str, **values: str) -> str:
    text = frame.format(**values)
    return text[0].upper() + text[1:]


def subject_kind(chain: UpdateChain) -> str:
    """What kind of value a chain holds ('timezone', 'podcast'): the generator's subject key,
    else the subject before any ':'."""
    key = chain.meta.get("subject_key")
    return str(key) if key else chain.subject.split(":")[0].strip().lower()


def _overlaps(value: str, chain: UpdateChain) -> bool:
    """Whether `value` names a state of `chain` or one of its forms names `value`."""
    return any(contains_form(value, f) or contains_form(f, value)
               for s in chain.states for f in s.surface_forms())


def twist_decoys(chains: Sequence[UpdateChain]) -> tuple[list[ChainDecoy], dict[str, int]]:
    """The TWIST decoys and controls of these chains (each chain's current query), and the
    counts of chains that could not give a style (no current query; no plausible wrong value
    of the same kind; no superseded state for stale and hedged)."""
    by_kind: dict[str, list[str]] = {}
    for ch in chains:
        for st in ch.states:
            by_kind.setdefault(subject_kind(ch), [])
            if st.value not in by_kind[subject_kind(ch)]:
                by_kind[subject_kind(ch)].append(st.value)
    out: list[ChainDecoy] = []
    skipped = {"no_current_query": 0, "no_wrong_value": 0}
    for ch in chains:
        query = next((q for q in ch.queries if q.kind == "current"), None)
        if query is None:
            skipped["no_current_query"] += 1
            continue
        frame = ASSERT_FRAMES[_pick(ch.id, len(ASSERT_FRAMES))]
        current = " and ".join(s.value for s in ch.current_states)
        out.append(ChainDecoy("twist_current", ch, query, _sentence(frame, v=current), False))
        wrong = [v for v in by_kind[subject_kind(ch)] if not _overlaps(v, ch)]
        # As many wrong values as the chain holds now (two for a coexisting chain), so that
        # the number of values never tells the decoy from the control.
        count = len(ch.current_states)
        if len(wrong) >= count:
            start = _pick(ch.id + "|wrong", len(wrong))
            values = [wrong[(start + i) % len(wrong)] for i in range(count)]
            out.append(ChainDecoy("plausible_wrong", ch, query,
                                  _sentence(frame, v=" and ".join(values))))
        else:
            skipped["no_wrong_value"] += 1
        if not ch.superseded_states:
            continue  # coexisting facts: nothing is stale
        last_current = min(i for i, s in enumerate(ch.states) if s.current)
        stale = [s for s in ch.states[:last_current] if not s.current]
        stale_value = (stale[-1] if stale else ch.superseded_states[-1]).value
        new_value = ch.current_states[0].value
        out.append(ChainDecoy("stale_as_current", ch, query, _sentence(frame, v=stale_value)))
        a, b = ((stale_value, new_value) if _pick(ch.id + "|order", 2) == 0
                else (new_value, stale_value))
        hedge = HEDGE_FRAMES[_pick(ch.id + "|hedge", len(HEDGE_FRAMES))]
        out.append(ChainDecoy("hedged", ch, query, _sentence(hedge, a=a, b=b)))
    return out, skipped


def _rate_entry(k: int, n: int, errors: int, rate_name: str) -> dict[str, Any]:
    lo, hi = wilson(k, n) if n else (None, None)
    value = k / n if n else None
    # A style the judge erred on was not fully measured: the rate over the rest cannot pass it.
    return {rate_name: value, "k": k, "n": n, "interval": [lo, hi], "errors": errors,
            "passed": value is not None and value >= PASS_RATE and errors == 0}


def required_styles(judge: Judge) -> list[str]:
    """The styles a complete calibration of `judge` covers: the TWIST ones and their control,
    and the LoCoMo ones and their control for a judge that grades LoCoMo answers."""
    locomo = [*LOCOMO_STYLES, "locomo_gold"] if isinstance(judge, QAJudge) else []
    return [*locomo, *TWIST_STYLES, "twist_current"]


def _rate(entry: dict[str, Any]) -> float | None:
    return entry.get("rejection_rate" if entry.get("kind") == "decoy" else "acceptance_rate")


def verdict_of(styles: dict[str, dict[str, Any]], required: Sequence[str],
               threshold: float = PASS_RATE) -> dict[str, Any]:
    """Whether these per-style entries pass, and what stops them: `below` (a rate under the
    threshold, or none), `errored` (a judge error on some answer), `missing` (a required style
    never judged); `failing` is all three together."""
    below = sorted(s for s, e in styles.items()
                   if (rate := _rate(e)) is None or rate < threshold)
    errored = sorted(s for s, e in styles.items() if e.get("errors"))
    missing = [s for s in required if s not in styles]
    failing = sorted({*below, *errored, *missing})
    decoys = any(e.get("kind") == "decoy" for e in styles.values())
    return {"passed": decoys and not failing, "complete": not missing and not errored,
            "failing": failing, "below": below, "errored": errored, "missing": missing}


def calibrate(judge: Judge, qa_decoys: Sequence[QADecoy], chain_decoys: Sequence[ChainDecoy],
              sources: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run `judge` on every decoy and control; the calibration record (see the module
    docstring). LoCoMo styles are left out, with the reason, for a judge without judge_qa."""
    styles: dict[str, dict[str, Any]] = {}
    na: dict[str, str] = {}
    if qa_decoys:
        gold_cases = {d.id: d for d in qa_decoys}  # one gold control per question
        if isinstance(judge, QAJudge):
            cases = [QACase(d.question, d.gold, d.answer, d.category) for d in qa_decoys]
            controls = [QACase(d.question, d.gold, d.gold, d.category)
                        for d in gold_cases.values()]
            verdicts = judge_qa_all(judge, cases + controls)
            for style in dict.fromkeys(d.style for d in qa_decoys):
                picked = [v for d, v in zip(qa_decoys, verdicts) if d.style == style]
                styles[style] = _qa_entry(picked, reject=True)
            styles["locomo_gold"] = _qa_entry(verdicts[len(cases):], reject=False)
        else:
            for style in [*dict.fromkeys(d.style for d in qa_decoys), "locomo_gold"]:
                na[style] = f"judge {judge.name} does not grade LoCoMo answers (no judge_qa)"
    if chain_decoys:
        verdicts_c = classify_all(judge, [(d.chain, d.query, Answer(text=d.answer))
                                          for d in chain_decoys])
        for style in dict.fromkeys(d.style for d in chain_decoys):
            picked_c = [(d, v) for d, v in zip(chain_decoys, verdicts_c) if d.style == style]
            styles[style] = _chain_entry(picked_c)
    required = required_styles(judge)
    identity = judge_identity(judge)
    return {
        "format": FORMAT,
        "judge": identity,
        "key": identity_key(identity),
        "threshold": PASS_RATE,
        "styles": styles,
        "not_applicable": na,
        "required": required,
        **verdict_of(styles, required),
        "sources": sources or {},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _qa_entry(verdicts: Sequence[QAVerdict | JudgeError], *, reject: bool) -> dict[str, Any]:
    ok = [v for v in verdicts if isinstance(v, QAVerdict)]
    errors = len(verdicts) - len(ok)
    if reject:
        entry = _rate_entry(sum(not v.correct for v in ok), len(ok), errors, "rejection_rate")
        return {"kind": "decoy", "family": "locomo", **entry}
    entry = _rate_entry(sum(v.correct for v in ok), len(ok), errors, "acceptance_rate")
    return {"kind": "control", "family": "locomo", **entry}


def _chain_entry(rows: Sequence[tuple[ChainDecoy, JudgeVerdict | JudgeError]]
                 ) -> dict[str, Any]:
    ok = [(d, v) for d, v in rows if isinstance(v, JudgeVerdict)]
    errors = len(rows) - len(ok)
    accepted = sum(v.outcome in ("current", "history") for _, v in ok)
    outcomes: dict[str, int] = {}
    for _, v in ok:
        outcomes[v.outcome] = outcomes.get(v.outcome, 0) + 1
    if rows and not rows[0][0].decoy:
        entry = _rate_entry(accepted, len(ok), errors, "acceptance_rate")
        return {"kind": "control", "family": "twist", **entry,
                "outcomes": dict(sorted(outcomes.items()))}
    entry = _rate_entry(len(ok) - accepted, len(ok), errors, "rejection_rate")
    return {"kind": "decoy", "family": "twist", **entry, "outcomes": dict(sorted(outcomes.items()))}


# -- storage ----------------------------------------------------------------------------------


def identity_key(identity: dict[str, Any]) -> str:
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def calibration_dir() -> Path:
    return Path(os.environ.get(ENV_DIR) or DEFAULT_DIR)


def calibration_path(identity: dict[str, Any], folder: str | Path | None = None) -> Path:
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", str(identity.get("model") or "nomodel"))
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(identity.get("name", "judge")))
    base = Path(folder) if folder is not None else calibration_dir()
    return base / f"{name}-{model}-{identity_key(identity)}.json"


def store_calibration(record: dict[str, Any], folder: str | Path | None = None) -> Path:
    path = calibration_path(record["judge"], folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def load_calibration(identity: dict[str, Any], folder: str | Path | None = None
                     ) -> dict[str, Any] | None:
    """The stored calibration of the judge with this identity, or None (never run, or the
    file is unreadable: a report then says the judge is not calibrated)."""
    path = calibration_path(identity, folder)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("key") != identity_key(identity):
        return None
    return record


def _required_of(record: dict[str, Any]) -> list[str]:
    """The styles a stored record had to cover; a record written before `required` existed
    is held to every style but those it marked not applicable."""
    required = record.get("required")
    if isinstance(required, list):
        return [str(s) for s in required]
    na = record.get("not_applicable") or {}
    return [s for s in (*LOCOMO_STYLES, "locomo_gold", *TWIST_STYLES, "twist_current")
            if s not in na]


def calibration_summary(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part a manifest and a report carry: per style the rate, n, interval and passed;
    the verdict (passed, and the failing / below / errored / missing styles), re-derived from
    the styles so that no record passes on a claim its rates do not back."""
    if record is None:
        return None
    styles = {}
    threshold = PASS_RATE  # the bar is the harness's, never the one a file says
    for style, e in (record.get("styles") or {}).items():
        rate_name = "rejection_rate" if e.get("kind") == "decoy" else "acceptance_rate"
        rate, errors = e.get(rate_name), e.get("errors", 0)
        styles[style] = {"kind": e.get("kind"), rate_name: rate, "n": e.get("n"),
                         "interval": e.get("interval"), "errors": errors,
                         "passed": bool(e.get("passed")) and rate is not None
                         and rate >= threshold and not errors}
    required = _required_of(record)
    verdict = verdict_of(styles, required, threshold)
    verdict["passed"] = verdict["passed"] and bool(record.get("passed"))
    # A summary is itself a valid input (a report re-derives the one a manifest recorded).
    return {"threshold": threshold, **verdict, "required": required,
            "not_applicable": dict(record.get("not_applicable") or {}), "styles": styles,
            "created": record.get("created"), "key": record.get("key")}


def calibration_verdict(summary: dict[str, Any]) -> str:
    """'passes calibration', or why not: 'FAILS calibration (< 0.95: hedged; judge errors on:
    stale_as_current; not calibrated on: plausible_wrong)'; an incomplete calibration whose
    rates all pass says 'INCOMPLETE calibration, not passing (...)'."""
    if summary.get("passed"):
        return "passes calibration"
    threshold = summary.get("threshold", PASS_RATE)
    below = summary.get("below")
    if below is None:  # a summary from before the verdict was split: all failing were below
        below = summary.get("failing") or []
    errored, missing = summary.get("errored") or [], summary.get("missing") or []
    why = [f"< {threshold:g}: {', '.join(below)}" if below else "",
           f"judge errors on: {', '.join(errored)}" if errored else "",
           f"not calibrated on: {', '.join(missing)}" if missing else ""]
    reason = "; ".join(w for w in why if w) or "no decoys"
    head = "INCOMPLETE calibration, not passing" if (errored or missing) and not below \
        else "FAILS calibration"
    return f"{head} ({reason})"


def describe_calibration(summary: dict[str, Any] | None) -> str:
    """One line for a report: 'decoys rejected: specific_but_wrong 0.83 (n 1540), ...;
    FAILS calibration (< 0.95: ...)', or 'not calibrated (run `twist judge calibrate`)'."""
    if not summary:
        return "not calibrated (run `twist judge calibrate`)"
    parts = []
    for style, e in summary["styles"].items():
        if e.get("kind") != "decoy":
            continue
        rate = e.get("rejection_rate")
        errors = f", {e['errors']} errors" if e.get("errors") else ""
        parts.append(f"{style} {'n/a' if rate is None else f'{rate:.3f}'} "
                     f"(n {e.get('n')}{errors})")
    return f"decoys rejected: {'; '.join(parts) or 'none'} — {calibration_verdict(summary)}"
