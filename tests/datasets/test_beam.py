"""BEAM loader on small folders in the release layout, written by the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twistbench.audit.core import audit_runs
from twistbench.audit.traces import Lineage, Trace, TraceRun
from twistbench.datasets.audit_corpus import raw_lineage
from twistbench.datasets.beam import find_conversations, load_beam, parse_anchor
from twistbench.errors import InputError


def _chat() -> list:
    return [
        {"batch_number": 1, "turns": [[
            {"role": "user", "id": 0, "time_anchor": "March-15-2024", "index": "1,1",
             "content": "My first sprint ends on March 29."},
            {"role": "assistant", "id": 1, "content": "Great, let's plan the sprint."},
        ]]},
        {"batch_number": 2, "turns": [[
            {"role": "user", "id": 2, "content": "The dashboard API averages 400ms."},
            {"role": "assistant", "id": 3, "content": "Caching could help."},
        ], [
            {"role": "user", "id": 4, "content": "After caching it is around 250ms now."},
            {"role": "assistant", "id": 4, "content": "Nice improvement."},  # repeated id
        ]]},
    ]


def _questions() -> dict:
    return {
        "abstention": [{"question": "What is my background?", "ideal_response": "No info."}],
        "information_extraction": [
            {"question": "When does my first sprint end?", "answer": "March 29",
             "source_chat_ids": [0]},
            {"question": "Who am I?", "answer": "Craig", "source_chat_ids": [99]},
        ],
        "knowledge_update": [
            {"question": "What is the dashboard API response time?", "answer": "250ms",
             "source_chat_ids": {"original_info": [2], "updated_info": [4]}},
        ],
        "contradiction_resolution": [
            {"question": "Have I used caching?", "ideal_answer": "Clarify.",
             "source_chat_ids": {"first_statement": [3], "second_statement": [3]}},
        ],
    }


def _beam(tmp_path: Path) -> Path:
    for tier, cid in (("1M", "1"), ("1M", "2"), ("100K", "1")):
        d = tmp_path / "chats" / tier / cid
        (d / "probing_questions").mkdir(parents=True)
        (d / "chat.json").write_text(json.dumps(_chat()))
        (d / "probing_questions" / "probing_questions.json").write_text(json.dumps(_questions()))
    return tmp_path


def test_load_tier(tmp_path: Path) -> None:
    root = _beam(tmp_path)
    c = load_beam(root, tier="1M")
    assert [x.id for x in c.conversations] == ["chats/1M/1", "chats/1M/2"]
    conv = c.conversations[0]
    assert [e.id for e in conv.events] == ["0", "1", "2", "3", "4", "4~2"]
    assert [e.session for e in conv.events] == [1, 1, 2, 2, 2, 2]
    assert conv.events[0].timestamp.date().isoformat() == "2024-03-15"
    assert conv.events[0].meta["time_anchor"] == "March-15-2024"
    q = {x.query_id: x for x in c.queries}
    assert set(q) == {"chats/1M/1:information_extraction:0", "chats/1M/1:knowledge_update:0",
                      "chats/1M/1:contradiction_resolution:0",
                      "chats/1M/2:information_extraction:0", "chats/1M/2:knowledge_update:0",
                      "chats/1M/2:contradiction_resolution:0"}
    ku = q["chats/1M/1:knowledge_update:0"]
    assert ku.anchors == ["2", "4", "4~2"] and ku.category == "knowledge_update"
    assert ku.answer == "250ms" and "250ms" in ku.anchor_texts["4"]
    assert q["chats/1M/1:contradiction_resolution:0"].anchors == ["3"]
    assert q["chats/1M/1:contradiction_resolution:0"].answer == "Clarify."
    reasons = {s["query_id"]: s["reason"] for s in c.skipped}
    assert reasons["chats/1M/1:abstention:0"].startswith("abstention")
    assert reasons["chats/1M/1:information_extraction:1"].startswith("no source_chat_ids")
    kinds = {d["kind"] for d in c.meta["defects"]}
    assert kinds == {"repeated_chat_id", "unknown_source_id", "ambiguous_source_id"}
    assert len(load_beam(root).conversations) == 3


def test_single_folder_and_errors(tmp_path: Path) -> None:
    root = _beam(tmp_path)
    one = load_beam(root / "chats" / "100K" / "1")
    assert [x.id for x in one.conversations] == ["1"]
    with pytest.raises(InputError, match="no conversation folder"):
        find_conversations(root, tier="10M")
    bad = root / "chats" / "1M" / "2" / "chat.json"
    bad.write_text(json.dumps([{"batch_number": 1, "turns": [[{"role": "user", "id": True,
                                                                "content": "x"}]]}]))
    with pytest.raises(InputError) as ei:
        load_beam(root, tier="1M")
    assert ei.value.field == "id" and ei.value.file == str(bad)
    assert parse_anchor("March-15-2024").month == 3 and parse_anchor("soon") is None


def test_audit_on_beam_raw_store(tmp_path: Path) -> None:
    c = load_beam(_beam(tmp_path), tier="100K")
    from twistbench.audit.traces import Gold

    gold = Gold("g", {q.query_id: q for q in c.queries})
    lin = Lineage("raw", raw_lineage(c.conversations))
    # a trace that ranks the updated fact first for the knowledge-update question
    run = TraceRun("r", "r", 3, {
        "chats/100K/1:knowledge_update:0": Trace("chats/100K/1:knowledge_update:0",
                                                 ["4", "0", "2"], [3, 2, 1], 3),
        "chats/100K/1:information_extraction:0": Trace(
            "chats/100K/1:information_extraction:0", ["1", "0"], [2, 1], 3),
    })
    res = audit_runs([(run, lin)], gold, None, n_resamples=50)
    r = res.runs[0]
    assert r["scored"] == 2 and r["missing"] == 1  # contradiction question has no trace line
    # raw-only store: no Canonical target anywhere; Source = Raw
    assert r["coverage"]["can"]["eligible"] == 0
    assert r["full"]["raw"]["mrr"] == pytest.approx((1 + 1 / 2) / 2)
    assert r["full"]["raw"]["recall"] == pytest.approx((2 / 3 + 1) / 2)
