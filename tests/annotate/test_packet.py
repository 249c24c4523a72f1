"""`twist annotate export`: the packets are blind, shuffled per annotator with a recorded seed,
complete, and written whole or not at all."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from annotate_helpers import manifest_of

from twistbench.annotate.excerpts import MARK_FOCUS, Settings
from twistbench.annotate.labels import C_TAIL, CHOICES, TRACK_FIELDS, family_of
from twistbench.annotate.packet import annotation_units, export_packets
from twistbench.datasets.paths import data_dir
from twistbench.datasets.registry import load_dataset
from twistbench.errors import InputError
from twistbench.model import Dataset

ITEM_KEYS = {"seq", "code", "track", "conversation", "lead", "excerpts", "legend", "question",
             "choices", "answer", "note"}


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _identifiers(obj: Any) -> set[str]:
    """Identifier-like strings in an item's metadata (template and line ids, slot keys)."""
    out: set[str] = set()
    if isinstance(obj, dict):
        for v in obj.values():
            out |= _identifiers(v)
    elif isinstance(obj, list):
        for v in obj:
            out |= _identifiers(v)
    elif isinstance(obj, str) and " " not in obj and re.search(r"[._:]", obj) and len(obj) > 6:
        out.add(obj)
    return out


def gold_strings(ds: Dataset) -> dict[str, set[str]]:
    """What must never reach an annotator, by kind."""
    items = [it for fld in Dataset.ITEM_FIELDS for it in getattr(ds, fld)]
    fams = {family_of(it).split("/", 1)[1].removeprefix("pii:") for fld in
            (f for t in TRACK_FIELDS.values() for f in t) for it in getattr(ds, fld)}
    fams |= {str(getattr(it, "family", "")) for it in items} - {""}
    probes = {p.text for it in ds.pii_plants for p in it.probes}
    probes |= {it.probe.text for it in ds.emotional_negatives}
    return {
        "item ids": {it.id for it in items},
        "turn ids": {e.id for c in ds.conversations for e in c.events},
        "snake-case family names": {f for f in fams if "_" in f},
        "family names": fams,
        "rationales": {d.rationale for d in ds.drafts if d.rationale},
        "meta identifiers": set().union(*(_identifiers(it.meta) for it in items)),
        # topic keys (2.0: "champion_staying"); 1.0 topics are phrases of the record itself
        "topics": {it.topic for it in [*ds.reversal_arcs, *ds.hard_negative_arcs]
                   if "_" in it.topic},
        "probes": probes,
        "draft labels": {"hard_negative", "contradicting"},
    }


SCANNED = ("item ids", "turn ids", "snake-case family names", "rationales", "meta identifiers",
           "topics", "probes", "draft labels")


def scan(text: str, forbidden: dict[str, set[str]]) -> dict[str, list[str]]:
    """Forbidden strings found in `text`, by kind. Single-token strings are looked up among the
    runs of id characters (and those runs stripped of end punctuation: "cs-acme:e0012."), the
    others as substrings."""
    runs = set(re.findall(r"[\w:./#@-]+", text))
    tokens = runs | {r.strip(".:/#@-") for r in runs}
    found = {}
    for kind in SCANNED:
        hits = sorted(s for s in forbidden[kind]
                      if (s in tokens if re.fullmatch(r"[\w:./#@-]+", s) else s in text))
        if hits:
            found[kind] = hits
    return found


def test_the_scan_finds_what_it_looks_for(cs):
    forbidden = gold_strings(cs)
    arc, draft = cs.reversal_arcs[0], next(d for d in cs.drafts if d.rationale or d.evidence)
    text = (f"turn {draft.evidence[0]}. and ({arc.id}) family {arc.family} "
            f"probe {cs.pii_plants[0].probes[0].text}")
    found = scan(text, forbidden)
    assert found["turn ids"] == [draft.evidence[0]] and found["item ids"] == [arc.id]
    assert found["snake-case family names"] == [arc.family]
    assert found["probes"] == [cs.pii_plants[0].probes[0].text]


def test_layout_and_counts(cs, packet):
    m = manifest_of(packet)
    assert sorted(p.name for p in packet.iterdir()) == ["README.md", "manifest.json", "r1", "r2"]
    for a in ("r1", "r2"):
        names = sorted(p.name for p in (packet / a).iterdir())
        assert names == ["README.txt", "conversations", "form.html", "guide.md", "packet.csv",
                         "packet.jsonl"]
        assert not (packet / a / "manifest.json").exists()
        lines = (packet / a / "packet.jsonl").read_text().splitlines()
        assert json.loads(lines[0])["key"]["sha256"] == cs.key_sha256
        assert len(lines) - 1 == len(m["items"]) == len(m["annotators"][a]["codes"])
    total = sum(len(getattr(cs, f)) for fields in TRACK_FIELDS.values() for f in fields)
    # one worked example per answer of each track: A 2, B 3, C 2 (latest, all), D 2
    assert len(m["examples"]) == 9
    assert len(m["items"]) + len(m["examples"]) == total
    assert not set(m["examples"]) & set(m["items"])
    members = [i for lst in m["family_members"].values() for i in lst]
    assert sorted(members) == sorted([*m["items"], *m["examples"]])
    convs = {p.stem for p in (packet / "r1" / "conversations").iterdir()}
    assert convs == {c.id for c in cs.conversations}


def test_packet_is_blind(cs, packet):
    """Scan every file an annotator receives for what would give the key away."""
    forbidden = gold_strings(cs)
    for a in ("r1", "r2"):
        files = _files(packet / a)
        assert scan("\n".join(files.values()), forbidden) == {}, a
        # plain-word family names (direct, nostalgia, phone ...) may be words of the record or
        # of the definitions; they must not be in what we wrote for one item, and the
        # definitions are the same for every item of a track (C: but for its values)
        choices: dict[str, set[str]] = {}
        for line in files["packet.jsonl"].splitlines()[1:]:
            item = json.loads(line)
            assert set(item) == ITEM_KEYS
            ours = " ".join([item["question"], item["legend"],
                             *(c["code"] for c in item["choices"])]).lower()
            words = set(re.findall(r"[a-z_]+", ours))
            assert not words & {f.lower() for f in forbidden["family names"]}, item["code"]
            fixed = [c for c in item["choices"] if not re.fullmatch(r"v\d+", c["code"])]
            choices.setdefault(item["track"], set()).add(json.dumps(fixed))
        assert all(len(v) == 1 for v in choices.values()), "choices differ within a track"


@pytest.mark.parametrize("key_file", sorted(p.name for p in data_dir().glob("twist-cs-*.json")))
def test_every_committed_cs_key_exports_blind(key_file, tmp_path):
    """The same scan on every committed TWIST-CS key (2.0 and the crisis variants included as
    they land): one annotator's folder is enough, the others differ only in order and codes."""
    ds = load_dataset(str(data_dir() / key_file))
    export_packets(ds, tmp_path / "p", annotators=2, seed=5)
    assert scan("\n".join(_files(tmp_path / "p" / "r1").values()), gold_strings(ds)) == {}


def test_choice_codes_are_no_family_name(cs):
    codes = {c.code for cs_ in CHOICES.values() for c in cs_} | {c.code for c in C_TAIL}
    assert not codes & gold_strings(cs)["family names"]


def test_shuffled_per_annotator_with_recorded_seed(cs, packet, tmp_path):
    m = manifest_of(packet)
    order = {a: [m["annotators"][a]["codes"][c] for c in m["annotators"][a]["order"]]
             for a in ("r1", "r2")}
    assert sorted(order["r1"]) == sorted(order["r2"]) and order["r1"] != order["r2"]
    assert not set(m["annotators"]["r1"]["codes"]) & set(m["annotators"]["r2"]["codes"])
    assert m["seed"] == 11 and m["annotators"]["r1"]["seed"] != m["annotators"]["r2"]["seed"]
    # tracks in order A-D, the key's order inside a track is not kept
    tracks = [m["items"][i]["track"] for i in order["r1"]]
    assert tracks == sorted(tracks)
    key_order = [i for i in m["items"] if m["items"][i]["track"] == "B"]
    assert [i for i in order["r1"] if m["items"][i]["track"] == "B"] != key_order
    # the recorded seed reproduces the packet byte for byte; another seed does not
    again = export_packets(cs, tmp_path / "again", annotators=2, seed=11,
                           source={"name": "twist-cs-1.0"})
    assert again.packet == m["packet"]
    assert _files(tmp_path / "again" / "r1") == _files(packet / "r1")
    other = export_packets(cs, tmp_path / "other", annotators=2, seed=12)
    assert other.packet != m["packet"]
    mo = manifest_of(tmp_path / "other")["annotators"]["r1"]
    assert [mo["codes"][c] for c in mo["order"]] != order["r1"]


def test_csv_rows_match_the_jsonl_items(packet):
    rows = list(csv.DictReader((packet / "r2" / "packet.csv").open()))
    items = [json.loads(x) for x in (packet / "r2" / "packet.jsonl").read_text().splitlines()[1:]]
    assert [r["code"] for r in rows] == [i["code"] for i in items]
    assert all(r["answer"] == "" and r["note"] == "" for r in rows)
    for r, i in zip(rows, items):
        assert r["choices"].split(" | ") == [c["code"] for c in i["choices"]]
        assert i["question"] in r["item"]


def test_marks_do_not_count_the_evidence(cs):
    """Track B shows the same number of marked turns whatever the key cites (one turn for a
    contradicting draft, two for a hard negative); Track C likewise; Track D one turn."""
    settings = Settings()
    per: dict[tuple[str, str], Counter] = {}
    for u in annotation_units(cs, ["B", "C", "D"], settings):
        marked = sum(1 for ex in u.view.excerpts for t in ex.turns if t.mark == MARK_FOCUS)
        per.setdefault((u.track, u.gold), Counter())[marked] += 1
    for (track, _), counts in per.items():
        want = {"B": settings.focus, "C": settings.chain_focus, "D": 1}[track]
        assert counts.most_common(1)[0][0] == want
    assert all(set(c) == {settings.focus} for (t, _), c in per.items() if t == "B")


def test_track_a_shows_the_acknowledgement_without_pointing_at_it(cs):
    """Drift turns (arcs) and same-speaker turns chosen by overlap get the same mark."""
    units = {u.item_id: u for u in annotation_units(cs, ["A"], Settings())}
    drift_arc = next(a for a in cs.reversal_arcs if a.drift)
    view = units[drift_arc.id].view
    marks = {t.n: t.mark for ex in view.excerpts for t in ex.turns}
    conv = cs.conversation(drift_arc.conversation)
    pos = {e.id: i + 1 for i, e in enumerate(conv.events)}
    assert all(marks[pos[t]] == "•" for t in drift_arc.drift)
    assert marks[pos[drift_arc.anchor[0]]] == "1" and marks[pos[drift_arc.reversal[0]]] == "2"


def test_existing_folder_and_bad_tracks_are_refused_before_writing(cs, tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("keep me")
    with pytest.raises(InputError, match="not empty"):
        export_packets(cs, full, seed=1)
    assert (full / "x").read_text() == "keep me"
    with pytest.raises(InputError, match="unknown track"):
        export_packets(cs, tmp_path / "t", seed=1, tracks=["E"])
    with pytest.raises(InputError, match="at least 2"):
        export_packets(cs, tmp_path / "one", annotators=1, seed=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


def test_a_sample_spreads_over_the_tracks(cs, tmp_path):
    res = export_packets(cs, tmp_path / "s", seed=3, sample=10, examples=0)
    assert res.items == 10 and res.per_track == {"A": 3, "B": 3, "C": 2, "D": 2}
    assert res.examples == []
