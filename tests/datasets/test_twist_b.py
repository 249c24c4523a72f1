"""datasets/twist_b.py: the public Track B v1.0 key over the original LoCoMo conversations."""

from __future__ import annotations

import json

import pytest

from twistbench.datasets.twist_b import load_twist_b, read_twist_b
from twistbench.errors import InputError

LINE = {"id": "c:1", "conv": "conv-26", "speaker": "Caroline", "type": "aligned", "family": "B-AL",
        "draft": "Hi", "evidence": ["D1:3"], "contradicted_quote": "", "rationale": "r",
        "history_turns": 419}


def test_real_key(twist_b_path, locomo_path):
    ds = load_twist_b(twist_b_path, locomo_path)
    assert ds.name == "twist-b" and ds.version == "twist-b-v1.0"
    labels = [d.label for d in ds.drafts]
    assert len(labels) == 161
    counts = (labels.count("contradicting"), labels.count("aligned"), labels.count("hard_negative"))
    assert counts == (38, 61, 62)
    assert len(ds.conversations) == 10 and sum(len(c.events) for c in ds.conversations) == 5882
    d = next(d for d in ds.drafts if d.id == "conv-26:v1b1")
    assert d.evidence == ["D19:1"] and d.meta["history_turns"] == 419
    assert d.meta["contradicted_quote"].startswith("Woohoo Melanie!")
    # every evidence turn is spoken by the item's speaker (SOURCE.md check)
    for d in ds.drafts:
        idx = ds.conversation(d.conversation).event_index()
        assert all(idx[e].speaker == d.speaker for e in d.evidence), d.id


@pytest.mark.parametrize(("mutate", "field", "line"), [
    (lambda r: r.pop("draft"), "draft", 2),
    (lambda r: r.update(type="maybe"), "type", 2),
    (lambda r: r.update(evidence="D1:3"), "evidence", 2),
    (lambda r: r.update(id="c:0"), "id", 2),
])
def test_bad_lines(tmp_path, mutate, field, line):
    good = dict(LINE, id="c:0")
    bad = dict(LINE)
    mutate(bad)
    p = tmp_path / "k.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError) as ei:
        read_twist_b(p)
    assert ei.value.field == field and ei.value.where == f"line {line}"


def test_not_json_line(tmp_path):
    p = tmp_path / "k.jsonl"
    p.write_text(json.dumps(LINE) + "\n{oops\n")
    with pytest.raises(InputError, match="not valid JSON") as ei:
        read_twist_b(p)
    assert ei.value.where == "line 2"


def test_unknown_evidence_refused(tmp_path, locomo_path):
    p = tmp_path / "k.jsonl"
    p.write_text(json.dumps(dict(LINE, evidence=["D99:1"])) + "\n")
    with pytest.raises(InputError, match="names no turn"):
        load_twist_b(p, locomo_path)
