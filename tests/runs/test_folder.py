import json

import pytest

from twistbench.errors import InputError
from twistbench.records import ItemRecord
from twistbench.runs.folder import REDACTED, Redactor, RunFolder, iter_records


def rec(i):
    return ItemRecord(item_id=f"B:x{i}", track="B", kind="draft", conversation="c", input_hash="h",
                      output={"n": i})


def test_append_and_read_back(tmp_path):
    f = RunFolder(tmp_path)
    for i in range(3):
        f.append(rec(i))
    assert [r.item_id for r in f.records()] == ["B:x0", "B:x1", "B:x2"]


def test_torn_tail_is_cut_and_the_rest_kept(tmp_path):
    f = RunFolder(tmp_path)
    f.append(rec(0))
    f.append(rec(1))
    with open(f.items_path, "ab") as fh:
        fh.write(b'{"item_id": "B:x2", "tra')  # a kill in the middle of a write
    assert [r.item_id for r in f.records()] == ["B:x0", "B:x1"]
    removed = f.repair_tail()
    assert removed == len(b'{"item_id": "B:x2", "tra')
    assert f.items_path.read_bytes().endswith(b"\n")
    f.append(rec(2))
    assert [r.item_id for r in f.records()] == ["B:x0", "B:x1", "B:x2"]


def test_a_bad_line_in_the_middle_names_file_and_line(tmp_path):
    f = RunFolder(tmp_path)
    f.append(rec(0))
    with open(f.items_path, "a") as fh:
        fh.write("not json\n")
    f.append(rec(2))
    with pytest.raises(InputError) as info:
        list(iter_records(f.items_path))
    assert "line 2" in str(info.value) and str(f.items_path) in str(info.value)


def test_a_record_with_a_wrong_field_names_the_field(tmp_path):
    p = tmp_path / "items.jsonl"
    p.write_text(json.dumps({"item_id": "x", "track": "B", "kind": "k", "conversation": "c",
                             "input_hash": "h", "latency_s": "slow"}) + "\n")
    with pytest.raises(InputError) as info:
        list(iter_records(p))
    assert "latency_s" in str(info.value) and "line 1" in str(info.value)


def test_redactor_scrubs_by_name_and_by_value():
    r = Redactor({"api_key": "sk-live-123456", "model": "gpt"}, {"OPENAI_API_KEY": "sk-env-999999",
                                                                "HOME": "/root"})
    cfg = r.config({"api_key": "sk-live-123456", "nested": {"token": "abc",
                                                            "url": "x?k=sk-env-999999"},
                    "model": "gpt"})
    assert cfg["api_key"] == REDACTED and cfg["nested"]["token"] == REDACTED
    assert "sk-env-999999" not in json.dumps(cfg) and cfg["model"] == "gpt"
    assert r.text("echo sk-live-123456 and sk-env-999999") == f"echo {REDACTED} and {REDACTED}"
