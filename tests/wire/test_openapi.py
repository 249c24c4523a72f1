"""The HTTP contract's OpenAPI document: generated from the wire models, committed, in sync."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from twistbench.contract import Capabilities, MemorySystem
from twistbench.wire import CALLS, CONTRACT_VERSION, VERSION_HEADER, WireCapabilities
from twistbench.wire.openapi import openapi_document, openapi_json

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "http-contract.openapi.json"


def test_the_committed_document_is_the_generated_one():
    # Regenerate with: twist serve --openapi > docs/http-contract.openapi.json
    assert COMMITTED.read_text(encoding="utf-8") == openapi_json()


def test_every_contract_call_and_close_has_a_path():
    protocol_calls = {n for n in vars(MemorySystem) if not n.startswith("_")
                      and callable(getattr(MemorySystem, n))}
    assert protocol_calls <= set(CALLS)
    doc = openapi_document()
    assert doc["openapi"] == "3.1.0"
    assert {p.lstrip("/") for p in doc["paths"]} == set(CALLS) >= {"close", "capabilities"}


def test_every_operation_requires_the_contract_version_header():
    for path, item in openapi_document()["paths"].items():
        for op in item.values():
            (param,) = op["parameters"]
            assert param["name"] == VERSION_HEADER and param["required"], path
            assert param["schema"]["enum"] == [CONTRACT_VERSION]


def test_request_schemas_refuse_unknown_fields_and_name_the_conversation():
    schemas = openapi_document()["components"]["schemas"]
    for call in CALLS.values():
        if call.request is None:
            continue
        schema = schemas[call.request.__name__]
        assert schema.get("additionalProperties") is False, call.name
        assert "conversation_id" in schema["required"], call.name


def test_the_wire_capabilities_are_the_contract_capabilities():
    assert [f.name for f in fields(Capabilities)] == list(WireCapabilities.model_fields)
    caps = Capabilities(recall=True, lineage=True)
    assert WireCapabilities(**caps.as_dict()).to_capabilities() == caps


def test_the_document_is_plain_json():
    json.loads(COMMITTED.read_text(encoding="utf-8"))
