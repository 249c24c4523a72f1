"""Judges of free-text answers, chosen by name (`twist run --judge NAME`).

A judge is a class with `name`, `version` and `classify(chain, query, answer) -> JudgeVerdict`
(judges/base.py), and `judge_qa` when it grades LoCoMo answers. Built in: `structural` (value
matching; LoCoMo by the official F1, the default) and `llm` (a model, through the JUDGE role's
endpoint). Adding one is a matter of registering its class: a line in JUDGES, or an entry point
in the `twistbench.judges` group of another package. Every judge is calibrated on decoys
(calibration.py, `twist judge calibrate`).
"""

from __future__ import annotations

import inspect
from typing import Any

from twistbench.defaults import DEFAULT_JUDGE
from twistbench.judges.base import (
    OUTCOMES,
    Judge,
    JudgeError,
    JudgeVerdict,
    QACase,
    QAJudge,
    QAVerdict,
    judge_identity,
)
from twistbench.plugins import build, resolve

ENTRY_POINT_GROUP = "twistbench.judges"
# name -> "module:Class"
JUDGES: dict[str, str] = {
    "structural": "twistbench.judges.structural:StructuralJudge",
    "llm": "twistbench.judges.llm:LLMJudge",
}


def make_judge(spec: str = DEFAULT_JUDGE, **options: Any) -> Judge:
    """The judge `spec` names (a registered name, an entry point, or module:Class), built with
    `options` (an LLM judge: model, offline_ok); InputError when it cannot be built (an LLM
    judge without an endpoint names the variables to set) or is not a Judge."""
    cls = resolve(spec, table=JUDGES, group=ENTRY_POINT_GROUP, flag="--judge", what="judge")
    return build(spec, cls, options, flag="--judge", what="judge", protocol=Judge,
                 shape="a class with name, version and classify()")


def judge_record(judge: Judge) -> dict[str, Any]:
    """What the manifest and the fingerprint record about a judge: its identity (name,
    version, and model and prompt sha256 where it has them)."""
    return judge_identity(judge)


def judge_from_record(record: dict[str, Any] | None) -> Judge:
    """The judge a manifest recorded, built again to re-score its run: same name, and for a
    judge with a model the same model, answering from the cache when no endpoint is set."""
    record = record or {}
    name = record.get("name") or DEFAULT_JUDGE
    if not record.get("model"):
        return make_judge(name)
    cls = resolve(name, table=JUDGES, group=ENTRY_POINT_GROUP, flag="--judge", what="judge")
    accepted = inspect.signature(cls).parameters
    options = {k: v for k, v in (("model", record["model"]), ("offline_ok", True))
               if k in accepted}
    return make_judge(name, **options)


__all__ = ["DEFAULT_JUDGE", "JUDGES", "OUTCOMES", "Judge", "JudgeError", "JudgeVerdict",
           "QACase", "QAJudge", "QAVerdict", "judge_from_record", "judge_record", "make_judge"]
