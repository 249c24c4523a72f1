"""TWIST-CS 2.0: the committed key, its sizes, and byte-identical rebuilds (issue 12)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from twistbench.datasets.keyfile import read_key, sha256_file
from twistbench.datasets.registry import DEFAULT_DATASET, load_dataset
from twistbench.itemgen import cs2
from twistbench.itemgen.cs2.generate import SIZES, SIZES_4_3
from twistbench.validation import shortcuts

REPO = Path(__file__).resolve().parents[2]
KEY = REPO / "data" / cs2.KEY_FILE
CRISIS_KEY = REPO / "data" / cs2.CRISIS_KEY_FILE


def test_committed_keys_are_versioned_and_hashed():
    for path, version in ((KEY, cs2.VERSION), (CRISIS_KEY, cs2.VERSION_CRISIS)):
        doc, digest = read_key(path)
        assert doc["name"] == "twist-cs" and doc["version"] == version
        assert path.with_name(path.name + ".sha256").read_text().split() == [digest, path.name]


@pytest.mark.parametrize("include_crisis", [False, True])
def test_rebuilding_gives_the_committed_bytes(tmp_path, include_crisis):
    out = tmp_path / "key.json"
    digest = cs2.write_key_2(out, include_crisis=include_crisis,
                             measured_with=shortcuts.measured_with())
    committed = CRISIS_KEY if include_crisis else KEY
    assert digest == sha256_file(committed)
    assert out.read_bytes() == committed.read_bytes()


def test_the_default_dataset_is_2_0_and_1_0_stays_loadable():
    assert DEFAULT_DATASET == "twist-cs-2.0"
    ds = load_dataset("twist-cs-2.0")
    assert ds.version == "twist-cs-2.0" and ds.key_sha256 == sha256_file(KEY)
    old = load_dataset("twist-cs-1.0")
    assert old.version == "twist-cs-1.0"
    assert old.key_sha256 == sha256_file(REPO / "data" / "twist-cs-1.0.json")


def test_another_seed_gives_another_key(cs2_built):
    ds, _ = cs2_built
    other = cs2.build(seed=7)
    assert [e.text for e in other.conversations[0].events[:40]] != \
        [e.text for e in ds.conversations[0].events[:40]]


def test_sizes_hold_whitepaper_4_3(cs2_built, cs2_crisis):
    ds, _ = cs2_built
    assert len(ds.conversations) == 6
    assert all(400 <= len(c.events) <= 900 for c in ds.conversations)
    assert len(ds.reversal_arcs) == SIZES["reversal_arcs"] >= SIZES_4_3["reversal_arcs"]
    assert len(ds.hard_negative_arcs) == SIZES["hard_negative_arcs"] >= \
        SIZES_4_3["hard_negative_arcs"]
    labels = Counter(d.label for d in ds.drafts)
    assert labels == {"contradicting": SIZES["drafts"] // 2, "aligned": SIZES["drafts"] // 4,
                      "hard_negative": SIZES["drafts"] // 4}
    assert SIZES["drafts"] >= SIZES_4_3["drafts"]
    assert len(ds.update_chains) >= SIZES_4_3["update_chains"]
    assert sum(len(c.queries) for c in ds.update_chains) >= SIZES_4_3["chain_queries"]
    assert len(ds.pii_plants) >= 30 and sum(len(p.probes) for p in ds.pii_plants) >= 60
    fams = Counter(n.meta["family"] for n in ds.emotional_negatives)
    assert fams["emotional"] >= 32 and fams["business_contact"] >= 16
    assert len(cs2_crisis.crisis_plants) >= 16 and not ds.crisis_plants


def test_crisis_plants_change_nothing_else(cs2_built, cs2_crisis):
    plain, crisis = cs2_built[0], cs2_crisis
    for a, b in zip(plain.conversations, crisis.conversations):
        ids = {e.id: e for e in b.events}
        assert all(ids[e.id] == e for e in a.events)
        assert len(b.events) > len(a.events)
    for fld in ("reversal_arcs", "hard_negative_arcs", "drafts", "update_chains", "pii_plants",
                "emotional_negatives"):
        assert getattr(plain, fld) == getattr(crisis, fld)
    assert crisis.meta["content_warning"]


def test_committed_keys_record_the_gates_measured_on_their_content(cs2_built, cs2_crisis):
    """The key's meta carries the shortcut battery's and the separability audit's results, and
    says which content they were measured on: the content the generator builds now."""
    for path, ds in ((KEY, cs2_built[0]), (CRISIS_KEY, cs2_crisis)):
        meta = read_key(path)[0]["payload"]["meta"]
        assert meta["gates_measured_on"] == cs2.content_sha256(ds)
        assert meta["gates_measured_with"] == shortcuts.measured_with()
        gates, sep = meta["gates"], meta["separability"]
        assert gates["passed"] is True and gates["failures"] == []
        assert gates["battery"] == "twistbench.validation.shortcuts"
        assert all(c["passed"] is not False for c in gates["checks"].values())
        assert {"A.text", "A.nontext", "B.text", "B.skeleton", "find.items", "C.most_recent",
                "D.masking", "surface.duplicates"} <= set(gates["checks"])
        assert sep["passed"] is True and sep["oracle_failed"] == 0
        assert len(sep["checks"]) == 12 and all(c["ok"] for c in sep["checks"].values())


def test_a_key_whose_content_was_not_measured_says_so(tmp_path):
    now = shortcuts.measured_with()
    ds = cs2.with_gate_record(cs2.build(seed=7), now)
    assert ds.meta["gates_measured_on"] is None and ds.meta["gates_measured_with"] is None
    assert ds.meta["gates"]["passed"] is None and ds.meta["separability"]["passed"] is None
    assert cs2.content_sha256(ds) in ds.meta["gates"]["note"]
    # the record is keyed by content: the same content with another record file is unmeasured
    plain = cs2.build()
    other_content = {"content_sha256": "0", "shortcuts": {}, "separability": {},
                     "measured_with": now}
    (tmp_path / "r.json").write_text(json.dumps({"twist-cs-2.0": other_content}))
    assert cs2.with_gate_record(plain, now, tmp_path / "r.json").meta["gates_measured_on"] is None


@pytest.mark.parametrize("part", ["battery", "judge"])
def test_a_record_measured_by_another_battery_or_judge_does_not_count(cs2_built, tmp_path, part):
    plain = cs2_built[0]
    now = shortcuts.measured_with()
    assert cs2.recorded_gates(plain, now) is not None
    other = {**now, part: now[part] + "-other"}
    ds = cs2.with_gate_record(plain, other)
    assert ds.meta["gates_measured_on"] is None
    assert ds.meta["gates"]["passed"] is None and ds.meta["separability"]["passed"] is None
    # a record without what it was measured with does not count either
    entry = json.loads(cs2.GATES_RECORD.read_text())["twist-cs-2.0"]
    del entry["measured_with"]
    (tmp_path / "r.json").write_text(json.dumps({"twist-cs-2.0": entry}))
    assert cs2.recorded_gates(plain, now, tmp_path / "r.json") is None
    # and a build that does not know what it measures with trusts no record
    assert cs2.with_gate_record(plain, None).meta["gates"]["passed"] is None


class _FixedGate:
    """A KeyGate that reports fixed shortcut results, as BuildGate would after the battery."""

    def __init__(self, result: dict) -> None:
        self.result = result
        self.seen: list[str] = []

    def before_write(self, dataset):
        self.seen.append(dataset.version)
        assert "gates" not in dataset.meta  # the gate sees the content, not old results
        return self.result

    def measured_with(self):
        return shortcuts.measured_with()

    def after_write(self, key_path):
        return None


def test_a_build_through_the_gate_records_what_the_gate_measured(tmp_path):
    """The gate's results go into meta.gates; the separability audit (never run by a build)
    comes from the record; a result differing from the record's is said on the console."""
    recorded = json.loads(cs2.GATES_RECORD.read_text())["twist-cs-2.0"]
    gate = _FixedGate(recorded["shortcuts"])
    cs2.run_build(out=tmp_path / "same.json", gate=gate)
    assert (tmp_path / "same.json").read_bytes() == KEY.read_bytes()
    changed = {**recorded["shortcuts"], "passed": True, "seed": 99}
    console = Console(record=True, width=200)
    cs2.run_build(out=tmp_path / "changed.json", gate=_FixedGate(changed), console=console)
    meta = read_key(tmp_path / "changed.json")[0]["payload"]["meta"]
    assert meta["gates"] == changed and meta["separability"] == recorded["separability"]
    assert "differ from the record" in console.export_text()
