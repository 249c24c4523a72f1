"""The OpenAPI 3.1 document of the HTTP contract, generated from the wire models.

The committed copy, docs/http-contract.openapi.json, is this function's output; a test fails
when they differ (regenerate with `twist serve --openapi > docs/http-contract.openapi.json`).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from twistbench.wire import CALLS, CONTRACT_VERSION, ERROR_STATUS, VERSION_HEADER, ErrorResponse

_REF = "#/components/schemas/{model}"


def openapi_document() -> dict[str, Any]:
    pairs: list[tuple[type[BaseModel], Any]] = [(ErrorResponse, "serialization")]
    for call in CALLS.values():
        if call.request is not None:
            pairs.append((call.request, "validation"))
        pairs.append((call.response, "serialization"))
    refs, defs = models_json_schema(pairs, ref_template=_REF)
    version_param = {
        "name": VERSION_HEADER, "in": "header", "required": True,
        "description": "The contract version of the request.",
        "schema": {"type": "string", "enum": [CONTRACT_VERSION]},
    }
    error = {"application/json": {"schema": refs[(ErrorResponse, "serialization")]}}
    paths: dict[str, Any] = {}
    for call in CALLS.values():
        responses: dict[str, Any] = {
            "200": {"description": "done",
                    "content": {"application/json": {
                        "schema": refs[(call.response, "serialization")]}}},
            "400": {"description": "a malformed request or an unknown contract version",
                    "content": error},
            "401": {"description": "a missing or wrong bearer token (servers that require one)",
                    "content": error},
            "405": {"description": "another HTTP method than the call's", "content": error},
        }
        op: dict[str, Any] = {"operationId": call.name, "summary": call.summary,
                              "parameters": [version_param], "responses": responses}
        if call.request is not None:
            op["requestBody"] = {"required": True, "content": {"application/json": {
                "schema": refs[(call.request, "validation")]}}}
            if call.name not in ("reset", "close"):
                responses["409"] = {"description": "no conversation of this id was reset",
                                    "content": error}
            if call.name not in ("reset", "close", "ingest"):
                responses["501"] = {"description": "the system declines this call",
                                    "content": error}
            responses["500"] = {"description": "the system failed on this call",
                                "content": error}
        paths[call.path] = {call.method.lower(): op}
    assert set(ERROR_STATUS.values()) >= {400, 401, 405, 409, 500, 501}
    return {
        "openapi": "3.1.0",
        "info": {"title": "twistbench memory-system contract", "version": CONTRACT_VERSION,
                 "description": "What a memory system serves so that twistbench can drive it "
                 "over HTTP (`twist run -s http://host:port`). Every call but capabilities "
                 "names its conversation; reset starts one, close frees it."},
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def openapi_json() -> str:
    return json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n"
