"""The LLM judge (`--judge llm`): a model grades LoCoMo answers CORRECT / WRONG against the
gold (the published J protocol, prompt `judge_locomo`) and labels Track C answers current /
stale / hedged / partial / other (prompt `judge_track_c`, every state of the chain marked
CURRENT or SUPERSEDED).

Its endpoint is the JUDGE role's (TWIST_JUDGE_* over TWIST_LLM_*); temperature 0 and the
response cache make a re-score identical without a call; a saved run re-scored where no
endpoint is configured reads the cache only (`offline_ok`: a judgement not in it is an error).
Its identity (model, both prompts' sha256, sampling options) is in the manifest and the
fingerprint. A failed call, a reply without a known label, or a reply out of form is a
JudgeError: that item's judgement is an error, never a score.

Track C labels map onto the structural outcomes: current -> "current" ("history" when the
answer also names a superseded state as earlier and a current one as later), stale, hedged and
partial as they are, other -> "none". Which states the answer names is the model's reading, so
`current_named` / `superseded_named` stay empty; citations are read from the evidence ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twistbench.judges.base import (
    ChainCase,
    JudgeError,
    JudgeVerdict,
    Outcome,
    QACase,
    QAVerdict,
    caught,
)
from twistbench.llm import (
    ChatRequest,
    Completion,
    LLMClient,
    LLMError,
    load_prompt,
    role_config,
    shared_client,
)
from twistbench.model import Answer, ChainQuery, UpdateChain

QA_PROMPT = "judge_locomo"
C_PROMPT = "judge_track_c"
_C_LABELS: dict[str, Outcome] = {"current": "current", "stale": "stale", "hedged": "hedged",
                                 "partial": "partial", "other": "none"}


def states_text(chain: UpdateChain) -> str:
    """The chain's states, oldest first, one a line, each marked CURRENT or SUPERSEDED, with
    its accepted variants."""
    lines = []
    for i, state in enumerate(chain.states, start=1):
        also = f" (also: {', '.join(state.variants)})" if state.variants else ""
        mark = "CURRENT" if state.current else "SUPERSEDED"
        lines.append(f"{i}. {state.value}{also} - {mark}")
    return "\n".join(lines)


class LLMJudge:
    """See the module docstring. `model` overrides the judge role's configured model."""

    name = "llm"
    version = "1"

    def __init__(self, model: str | None = None, client: LLMClient | None = None,
                 offline_ok: bool = False, max_tokens: int | None = 300):
        options: dict[str, Any] = {"model": model} if model else {}
        self.client = client or shared_client(role_config("judge", offline_ok=offline_ok,
                                                          **options))
        self.qa_prompt = load_prompt(QA_PROMPT)
        self.c_prompt = load_prompt(C_PROMPT)
        self.max_tokens = max_tokens

    @property
    def label(self) -> str:
        return f"{self.name}:{self.client.config.model}"

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "model": self.client.config.model,
                "prompts": {QA_PROMPT: self.qa_prompt.sha256, C_PROMPT: self.c_prompt.sha256},
                "llm": self.client.config.identity(), "max_tokens": self.max_tokens}

    # -- Track C ------------------------------------------------------------------------------

    def _c_request(self, chain: UpdateChain, query: ChainQuery, answer: Answer) -> ChatRequest:
        kind = "history" if query.kind == "history" else "current"
        messages = self.c_prompt.render(question=query.text, kind=kind,
                                        states=states_text(chain), answer=answer.text)
        return ChatRequest(messages, json=True, max_tokens=self.max_tokens)

    def _c_verdict(self, chain: UpdateChain, answer: Answer,
                   reply: Completion | LLMError) -> JudgeVerdict:
        data = _data(reply)
        label = str(data.get("label", "")).strip().lower()
        if label not in _C_LABELS:
            raise JudgeError("malformed_reply", f"no Track C label in {_text(reply)!r}")
        history = data.get("names_history")
        if not isinstance(history, bool):
            raise JudgeError("malformed_reply", f"names_history is not true/false in "
                                                f"{_text(reply)!r}")
        outcome = _C_LABELS[label]
        if outcome == "current" and history:
            outcome = "history"
        evidence = set(answer.evidence)
        return JudgeVerdict(
            outcome=outcome, current_named=[], superseded_named=[],
            cites_current=any(evidence & set(s.turns) for s in chain.current_states),
            cites_superseded=any(evidence & set(s.turns) for s in chain.superseded_states),
            reason=str(data.get("reasoning", ""))[:500], judge=self.label)

    def classify(self, chain: UpdateChain, query: ChainQuery, answer: Answer) -> JudgeVerdict:
        return self._c_verdict(chain, answer, self._ask(self._c_request(chain, query, answer)))

    def classify_many(self, cases: Sequence[ChainCase]) -> list[JudgeVerdict | JudgeError]:
        replies = self.client.complete_many([self._c_request(*c) for c in cases])
        return [caught(lambda c=c, r=r: self._c_verdict(c[0], c[2], r))
                for c, r in zip(cases, replies)]

    # -- LoCoMo QA (J) ------------------------------------------------------------------------

    def _qa_request(self, case: QACase) -> ChatRequest:
        messages = self.qa_prompt.render(question=case.question, gold_answer=case.gold,
                                         generated_answer=case.answer)
        return ChatRequest(messages, json=True, max_tokens=self.max_tokens)

    def _qa_verdict(self, reply: Completion | LLMError) -> QAVerdict:
        data = _data(reply)
        label = str(data.get("label", "")).strip().upper()
        if label not in ("CORRECT", "WRONG"):
            raise JudgeError("malformed_reply", f"no CORRECT/WRONG label in {_text(reply)!r}")
        return QAVerdict(label == "CORRECT", str(data.get("reasoning", ""))[:500], self.label)

    def judge_qa(self, case: QACase) -> QAVerdict:
        return self._qa_verdict(self._ask(self._qa_request(case)))

    def judge_qa_many(self, cases: Sequence[QACase]) -> list[QAVerdict | JudgeError]:
        replies = self.client.complete_many([self._qa_request(c) for c in cases])
        return [caught(lambda r=r: self._qa_verdict(r)) for r in replies]

    def _ask(self, request: ChatRequest) -> Completion | LLMError:
        try:
            return self.client.complete(request.messages, json=True,
                                        max_tokens=request.max_tokens)
        except LLMError as exc:
            return exc


def _data(reply: Completion | LLMError) -> dict[str, Any]:
    if isinstance(reply, LLMError):
        raise JudgeError(reply.kind, reply.message)
    if not isinstance(reply.data, dict):
        raise JudgeError("malformed_reply", f"the reply is not a JSON object: "
                                            f"{reply.text[:200]!r}")
    return reply.data


def _text(reply: Completion | LLMError) -> str:
    return reply.text[:200] if isinstance(reply, Completion) else ""
