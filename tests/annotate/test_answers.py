"""Reading answers: every accepted format, and every bad input refused with a clear error."""

from __future__ import annotations

import csv
import json

import pytest
from annotate_helpers import manifest_of, other_choice, write_answers

from twistbench.annotate.answers import load_manifest, read_answers
from twistbench.errors import InputError


def test_json_csv_and_filled_packet_jsonl_read_alike(packet, tmp_path):
    m = manifest_of(packet)
    item = next(iter(m["items"]))
    choose = {item: other_choice(m, item)}
    a = read_answers(write_answers(tmp_path, m, "r1", choose, notes={item: "hm"}), m)
    b = read_answers(write_answers(tmp_path, m, "r1", choose, fmt="csv", notes={item: "hm"}), m)
    assert a.categories == b.categories and a.notes == b.notes == {item: "hm"}
    assert a.choices[item] == choose[item] and len(a.categories) == len(m["items"])
    # packet.jsonl with its answer fields filled
    lines = (packet / "r1" / "packet.jsonl").read_text().splitlines()
    filled = [lines[0]]
    for line in lines[1:]:
        row = json.loads(line)
        row["answer"] = a.choices[m["annotators"]["r1"]["codes"][row["code"]]]
        filled.append(json.dumps(row))
    path = tmp_path / "filled.jsonl"
    path.write_text("\n".join(filled))
    assert read_answers(path, m).categories == a.categories
    # packet.csv with its answer column filled
    rows = list(csv.DictReader((packet / "r1" / "packet.csv").open()))
    for r in rows:
        r["answer"] = a.choices[m["annotators"]["r1"]["codes"][r["code"]]]
    path = tmp_path / "filled.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert read_answers(path, m).categories == a.categories


def _error(path, m) -> InputError:
    with pytest.raises(InputError) as ei:
        read_answers(path, m)
    return ei.value


def test_wrong_key_version_or_packet(packet, tmp_path):
    m = manifest_of(packet)
    e = _error(write_answers(tmp_path, m, "r1", key_version="twist-cs-2.0"), m)
    assert e.field == "key_version" and "twist-cs-2.0" in str(e)
    e = _error(write_answers(tmp_path, m, "r1", key_sha256="0" * 64), m)
    assert e.field == "key_version"
    e = _error(write_answers(tmp_path, m, "r1", packet="ffffffffffff", fmt="csv"), m)
    assert e.field == "packet" and e.where == "row 1"


def test_another_annotators_shuffle(packet, tmp_path):
    m = manifest_of(packet)
    # r2's packet answered but labelled as r1's: the codes give it away
    e = _error(write_answers(tmp_path, m, "r1", codes_of="r2"), m)
    assert "another annotator's shuffle" in str(e) and e.field == "code"
    e = _error(write_answers(tmp_path, m, "r7", codes_of="r1"), m)
    assert e.field == "annotator" and "r7" in str(e)


def test_missing_duplicate_unknown(packet, tmp_path):
    m = manifest_of(packet)
    path = write_answers(tmp_path, m, "r2")
    doc = json.loads(path.read_text())
    gone = dict(doc, answers=doc["answers"][:-2])
    path.write_text(json.dumps(gone))
    e = _error(path, m)
    assert "2 of" in str(e) and f"item {len(doc['answers'])}" in str(e)
    blank = json.loads(json.dumps(doc))
    blank["answers"][4]["answer"] = ""
    path.write_text(json.dumps(blank))
    assert "1 of" in str(_error(path, m))
    dup = dict(doc, answers=[*doc["answers"], doc["answers"][3]])
    path.write_text(json.dumps(dup))
    e = _error(path, m)
    assert "twice" in str(e) and e.where == f"answers[{len(doc['answers'])}]"
    bad = json.loads(json.dumps(doc))
    bad["answers"][0]["answer"] = "maybe"
    path.write_text(json.dumps(bad))
    e = _error(path, m)
    assert e.field == "answer" and "maybe" in str(e) and "cannot_tell" in str(e)
    bad["answers"][0]["code"] = "0123456789"
    path.write_text(json.dumps(bad))
    assert "not in this packet" in str(_error(path, m))


def test_unreadable_inputs(packet, tmp_path):
    m = manifest_of(packet)
    p = tmp_path / "a.csv"
    p.write_text("code,answer\nx,y\n")
    assert "missing columns" in str(_error(p, m))
    p = tmp_path / "a.txt"
    p.write_text("")
    assert "unknown answers format" in str(_error(p, m))
    p = tmp_path / "a.json"
    p.write_text("{")
    assert "not valid JSON" in str(_error(p, m))
    with pytest.raises(InputError, match="cannot read the packet manifest"):
        load_manifest(packet / "r1" / "packet.jsonl")
    p.write_text("{}")
    with pytest.raises(InputError, match="not a packet manifest"):
        load_manifest(p)
