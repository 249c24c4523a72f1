import json
from datetime import datetime

import pytest
from pydantic import ValidationError

from twistbench.datasets.demo import demo_dataset
from twistbench.model import Conversation, Dataset, Event, UpdateChain, json_schemas


def ev(i, session=1, conv="c"):
    return Event(id=f"e{i}", conversation=conv, session=session, timestamp=datetime(2025, 1, 1),
                 speaker="A", text=f"turn {i}")


def test_demo_dataset_round_trips_through_json():
    ds = demo_dataset()
    again = Dataset.model_validate_json(ds.model_dump_json())
    assert again == ds
    assert again.counts()["drafts"] == 4


def test_conversation_rejects_duplicate_ids_and_session_regressions():
    with pytest.raises(ValidationError, match="duplicate turn id"):
        Conversation(id="c", events=[ev(1), ev(1)])
    with pytest.raises(ValidationError, match="session 1 after 2"):
        Conversation(id="c", events=[ev(1, 2), ev(2, 1)])
    with pytest.raises(ValidationError, match="names conversation"):
        Conversation(id="c", events=[ev(1, conv="other")])


def test_sessions_group_in_order():
    c = Conversation(id="c", events=[ev(1, 1), ev(2, 1), ev(3, 3)])
    assert [(k, [e.id for e in evs]) for k, evs in c.sessions()] == [(1, ["e1", "e2"]), (3, ["e3"])]


def test_dataset_refuses_unknown_turn_ids_and_unknown_fields():
    doc = json.loads(demo_dataset().model_dump_json())
    doc["drafts"][0]["evidence"] = ["demo-acme:e99"]
    with pytest.raises(ValidationError, match="turn id 'demo-acme:e99' is not in demo-acme"):
        Dataset.model_validate(doc)
    doc = json.loads(demo_dataset().model_dump_json())
    doc["drafts"][0]["evidnce"] = []
    with pytest.raises(ValidationError, match="evidnce"):
        Dataset.model_validate(doc)


def test_update_chain_needs_a_current_state():
    doc = json.loads(demo_dataset().model_dump_json())["update_chains"][0]
    for s in doc["states"]:
        s["current"] = False
    with pytest.raises(ValidationError, match="no state is marked current"):
        UpdateChain.model_validate(doc)


def test_json_schema_export_covers_inputs_and_outputs():
    schemas = json_schemas()
    for name in ("Dataset", "Event", "Tension", "Verdict", "Answer", "IngestResult", "Draft"):
        assert name in schemas
    assert set(schemas["Tension"]["required"]) >= {"id", "claim_evidence", "new_evidence"}
