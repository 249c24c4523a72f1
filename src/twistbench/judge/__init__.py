"""Judges of free-text answers. `structural` needs no model; an LLM judge can plug in through
the `Judge` protocol."""

from twistbench.judge.structural import (
    OUTCOMES,
    Judge,
    JudgeVerdict,
    StructuralJudge,
    classify_answer,
    contains_form,
    normalize_text,
    value_leaked,
)

__all__ = ["OUTCOMES", "Judge", "JudgeVerdict", "StructuralJudge", "classify_answer",
           "contains_form", "normalize_text", "value_leaked"]
