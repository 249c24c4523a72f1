"""LLM raters for the TIAP semantic audit (tiap-paper §3.3; `twist audit labels --llm`).

Each model is one rater: every contested case (question, gold answer, the source turns, the
credited memory's text) goes to the `tiap_audit` prompt through the RATER role's endpoint
(TWIST_RATER_* over TWIST_LLM_*), and the reply's label (supports / partial /
does_not_support) becomes a row (case_id, rater "llm:<model>", label) like a person's. A call
that fails or a reply without a known label leaves that case unlabelled by that rater, counted
by kind; it is never a label. The rows are written as a CSV beside the people's, so the
agreement can be computed again later without a call (the response cache makes a re-run free
anyway).
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from twistbench.audit.contested import LABELS, ContestedCase, Label
from twistbench.llm import ChatRequest, LLMClient, LLMError, load_prompt, role_config, shared_client
from twistbench.llm.prompts import format_lines

PROMPT = "tiap_audit"


@dataclass
class RaterRun:
    rater: str
    model: str
    prompt_sha256: str
    labels: list[Label] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)


def rater_client(model: str | None = None) -> LLMClient:
    """The RATER role's shared client (InputError naming the variables without an endpoint)."""
    return shared_client(role_config("rater", **({"model": model} if model else {})))


def case_request(case: ContestedCase) -> ChatRequest:
    source = format_lines(case.evidence.items()) or "(the source turns are not available)"
    messages = load_prompt(PROMPT).render(question=case.question, gold_answer=case.answer,
                                          source=source, memory=case.credited_text or "")
    return ChatRequest(messages, json=True, max_tokens=300)


def rate_cases(cases: Sequence[ContestedCase], client: LLMClient) -> RaterRun:
    """One model's labels for every case it could rate, and its errors by kind."""
    model = client.config.model
    run = RaterRun(rater=f"llm:{model}", model=model,
                   prompt_sha256=load_prompt(PROMPT).sha256)
    errors: Counter[str] = Counter()
    for case, reply in zip(cases, client.complete_many([case_request(c) for c in cases])):
        if isinstance(reply, LLMError):
            errors[reply.kind] += 1
            continue
        data = reply.data if isinstance(reply.data, dict) else {}
        label = str(data.get("label", "")).strip().lower()
        if label not in LABELS:
            errors["malformed_reply"] += 1
            continue
        run.labels.append(Label(case.case_id, run.rater, label))
    run.errors = dict(sorted(errors.items()))
    return run


def write_label_csv(path: str | Path, labels: Sequence[Label]) -> Path:
    """Rows case_id, rater, label: the file `twist audit labels` reads."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(("case_id", "rater", "label"))
        for lab in labels:
            writer.writerow((lab.case_id, lab.rater, lab.label))
    return path
