"""Judges of free-text answers, chosen by name (`twist run --judge NAME`).

A judge is a class with `name`, `version` and `classify(chain, query, answer) -> JudgeVerdict`
(judges/base.py). Adding one is a matter of registering its class: a line in JUDGES, or an
entry point in the `twistbench.judges` group of another package.
"""

from __future__ import annotations

from twistbench.errors import InputError
from twistbench.judges.base import OUTCOMES, Judge, JudgeVerdict
from twistbench.plugins import resolve

ENTRY_POINT_GROUP = "twistbench.judges"
DEFAULT_JUDGE = "structural"
# name -> "module:Class"
JUDGES: dict[str, str] = {
    "structural": "twistbench.judges.structural:StructuralJudge",
}


def make_judge(spec: str = DEFAULT_JUDGE) -> Judge:
    """The judge `spec` names (a registered name, an entry point, or module:Class); InputError
    when it cannot be built or is not a Judge."""
    cls = resolve(spec, table=JUDGES, group=ENTRY_POINT_GROUP, flag="--judge", what="judge")
    try:
        judge = cls()
    except Exception as exc:  # noqa: BLE001 - a plugin that cannot be built is the user's input
        raise InputError("--judge", f"judge {spec} cannot be built: {exc}", field="judge",
                         expected="a judge class constructible without arguments") from exc
    if not isinstance(judge, Judge):
        raise InputError("--judge", f"{spec} is not a judge", field="judge",
                         expected="a class with name, version and classify()")
    return judge


def judge_record(judge: Judge) -> dict[str, str]:
    """What the manifest records about a judge: its own name and version."""
    return {"name": judge.name, "version": str(getattr(judge, "version", ""))}


__all__ = ["DEFAULT_JUDGE", "JUDGES", "OUTCOMES", "Judge", "JudgeVerdict", "judge_record",
           "make_judge"]
