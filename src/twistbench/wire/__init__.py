"""The HTTP/JSON system contract: one request and one response model per call.

A system written in any language serves these calls; `systems/http.py` drives it and
`twist serve` (wire/server.py) serves any Python system over the same contract. The OpenAPI 3.1
document (wire/openapi.py, committed as docs/http-contract.openapi.json) is generated from these
models, so the document, the client and the server cannot disagree.

Every call but capabilities names its conversation: a server keeps one system instance per
conversation, created by reset and freed by close (keyed by the id alone, so one server serves
one run at a time). Every request carries the contract version in
the `Twist-Contract` header; a server answers a version it does not speak with 400.

This module imports only model and contract.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError

from twistbench.contract import Capabilities
from twistbench.model import (
    Answer,
    Event,
    IngestResult,
    LineageRecord,
    Memories,
    ScoredMemory,
    Tension,
    Verdict,
)

CONTRACT_VERSION = "1"
VERSION_HEADER = "Twist-Contract"
MAX_RETRIEVE_K = 1000

ErrorKind = Literal["bad_request", "contract_version", "unauthorized", "not_found",
                    "method_not_allowed", "no_conversation", "declined", "system_error"]


class _Request(BaseModel):
    # A typo in a request field is refused, never silently dropped.
    model_config = ConfigDict(extra="forbid")


class _Response(BaseModel):
    # Servers may attach diagnostics; the client keeps only the contract's fields.
    model_config = ConfigDict(extra="ignore")


class WireCapabilities(_Response):
    """The flags of contract.Capabilities; a missing flag means declined."""

    online_tensions: bool = False
    batch_tensions: bool = False
    check_alignment: bool = False
    recall: bool = False
    resolve: bool = False
    safety: bool = False
    retrieve: bool = False
    lineage: bool = False

    def to_capabilities(self) -> Capabilities:
        return Capabilities(**self.model_dump())


# Both lists name the same flags: a new capability must reach the wire too.
assert {f.name for f in fields(Capabilities)} == set(WireCapabilities.model_fields)


class CapabilitiesResponse(_Response):
    contract: str = Field(description="the contract version the server speaks")
    name: str = Field(min_length=1, description="the system's name, shown in reports")
    capabilities: WireCapabilities
    config: dict[str, Any] = Field(default_factory=dict,
                                   description="options that shape behaviour (no secrets)")


class ConversationRequest(_Request):
    """reset, flag_tensions, lineage and close: the conversation is the only argument."""

    conversation_id: str = Field(min_length=1)


class IngestRequest(_Request):
    conversation_id: str = Field(min_length=1)
    events: list[Event] = Field(description="one session's events, in order")


class RecallRequest(_Request):
    conversation_id: str = Field(min_length=1)
    query: str


class RecallResponse(RootModel[Answer | Memories]):
    """What recall returns: an answer citing turn ids, or, for a memory layer that retrieves
    rather than answers, the memories it retrieved (the harness answers those with the run's
    answerer, as in process)."""


class AlignmentRequest(_Request):
    conversation_id: str = Field(min_length=1)
    draft: str


class ResolveRequest(_Request):
    conversation_id: str = Field(min_length=1)
    tension_id: str = Field(min_length=1)


class RetrieveRequest(_Request):
    conversation_id: str = Field(min_length=1)
    query: str
    k: int = Field(ge=1, le=MAX_RETRIEVE_K)


class Ack(_Response):
    """reset, resolve and close answer only that they were done."""

    ok: Literal[True] = True


class TensionsResponse(_Response):
    tensions: list[Tension]


class RetrieveResponse(_Response):
    hits: list[ScoredMemory] = Field(description="at most k, best first")


class LineageResponse(_Response):
    records: list[LineageRecord]


class ErrorBody(_Response):
    kind: ErrorKind
    message: str


class ErrorResponse(_Response):
    """Every non-200 answer. `declined` (501) means the system does not offer the call."""

    error: ErrorBody


@dataclass(frozen=True)
class Call:
    name: str  # the contract method
    method: Literal["GET", "POST"]
    request: type[BaseModel] | None
    response: type[BaseModel]
    summary: str

    @property
    def path(self) -> str:
        return f"/{self.name}"


CALLS: dict[str, Call] = {c.name: c for c in [
    Call("capabilities", "GET", None, CapabilitiesResponse,
         "The system's name, contract version, capabilities and config."),
    Call("reset", "POST", ConversationRequest, Ack,
         "Start a conversation: a fresh system instance that has seen nothing."),
    Call("ingest", "POST", IngestRequest, IngestResult,
         "One session's events, in order; online systems return tensions found so far."),
    Call("flag_tensions", "POST", ConversationRequest, TensionsResponse,
         "Batch mode: every tension in the conversation ingested so far."),
    Call("recall", "POST", RecallRequest, RecallResponse,
         "Answer a question from memory citing the turn ids used, or return the memories "
         "retrieved for it (the harness answers them with the run's answerer)."),
    Call("check_alignment", "POST", AlignmentRequest, Verdict,
         "Would sending the draft contradict the record? Cite the contradicted turns."),
    Call("resolve", "POST", ResolveRequest, Ack,
         "A human resolved this tension: the refuted belief should stop being asserted."),
    Call("retrieve", "POST", RetrieveRequest, RetrieveResponse,
         "Top-k memory ids with scores (retrieval audit)."),
    Call("lineage", "POST", ConversationRequest, LineageResponse,
         "For every stored memory id: its source turn ids and raw / canonical flags."),
    Call("close", "POST", ConversationRequest, Ack,
         "The conversation is over: free its instance. Closing an unknown one is not an error."),
]}

def validation_problems(exc: ValidationError) -> str:
    """What is wrong with a request or a response: the first three fields at fault, never the
    values (they may hold a secret)."""
    errs = exc.errors(include_url=False, include_input=False, include_context=False)
    parts = [f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in errs[:3]]
    return "; ".join(parts) + (f" (+{len(errs) - 3} more)" if len(errs) > 3 else "")


# HTTP status of each error kind.
ERROR_STATUS: dict[str, int] = {
    "bad_request": 400, "contract_version": 400, "unauthorized": 401, "not_found": 404,
    "method_not_allowed": 405, "no_conversation": 409, "declined": 501, "system_error": 500,
}

__all__ = ["CALLS", "CONTRACT_VERSION", "ERROR_STATUS", "MAX_RETRIEVE_K", "VERSION_HEADER", "Ack",
           "AlignmentRequest", "Call", "CapabilitiesResponse", "ConversationRequest", "ErrorBody",
           "ErrorKind", "ErrorResponse", "IngestRequest", "LineageResponse", "RecallRequest",
           "RecallResponse", "ResolveRequest", "RetrieveRequest", "RetrieveResponse",
           "TensionsResponse", "WireCapabilities", "validation_problems"]
