"""Property-based testing of `twist serve` against its own OpenAPI document (schemathesis):
every generated request, valid or not, gets a documented status and a body that fits the
documented schema, and no server error (a 5xx other than 501, the documented answer of a
declined call)."""

from __future__ import annotations

import functools

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is in the test extra")

from hypothesis import HealthCheck, settings  # noqa: E402
from node_server import node_server  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    response_schema_conformance,
    status_code_conformance,
)

from twistbench.systems import build_system  # noqa: E402
from twistbench.systems.http import HttpSystem  # noqa: E402
from twistbench.wire.openapi import openapi_document  # noqa: E402
from twistbench.wire.server import ContractServer  # noqa: E402

CONVERSATION = "fuzz"
schema = schemathesis.openapi.from_dict(openapi_document())
# Valid requests and invalid ones (wrong types, missing fields, a bad header): the latter must
# be refused with a documented 4xx, never a server error.
schema.config.generation.update(modes=[schemathesis.GenerationMode.POSITIVE,
                                       schemathesis.GenerationMode.NEGATIVE])


@pytest.fixture(scope="module", params=["twist-serve", "node-example"])
def served(request):
    """The URL of a server with the conversation CONVERSATION reset: `twist serve flat-rag`
    (lexical retriever; every call but resolve and flag_tensions is served), or the Node.js
    example (skipped without node)."""
    if request.param == "node-example":
        with node_server() as url:
            HttpSystem(url).reset(CONVERSATION)
            yield url
        return
    server = ContractServer(functools.partial(build_system, "flat-rag", {"retriever": "lexical"}))
    server.start_in_thread()
    HttpSystem(server.url).reset(CONVERSATION)
    yield server.url
    server.stop()


@schema.parametrize()
@settings(max_examples=30, derandomize=True, deadline=None,
          suppress_health_check=list(HealthCheck))
def test_served_system_has_no_server_error(case, served):
    if isinstance(case.body, dict) and case.operation.path not in ("/reset", "/close"):
        case.body["conversation_id"] = CONVERSATION  # reach the system, not only the 409
    response = case.call_and_validate(
        base_url=served, checks=[response_schema_conformance, status_code_conformance])
    assert response.status_code < 500 or response.status_code == 501, response.text[:500]
