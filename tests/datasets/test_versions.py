"""datasets/versions.py: errata logs, errata applied by version at load time, the next key
version, and the LoCoMo audit as a versioned key."""

from __future__ import annotations

import json
import shutil
from datetime import date

import pytest

from twistbench.datasets.keyfile import read_key, sha256_bytes
from twistbench.datasets.locomo import locomo_dataset
from twistbench.datasets.paths import cs_key_path
from twistbench.datasets.registry import DatasetOptions, load_dataset
from twistbench.datasets.twist_cs import load_cs_dataset
from twistbench.datasets.versions import (
    Change,
    add_erratum,
    apply_changes,
    bump_version,
    errata_path,
    read_errata_log,
    release_next_version,
    resolve_key_file,
    split_errata_name,
)
from twistbench.errors import InputError

DAY = date(2026, 12, 1)


@pytest.fixture
def key(tmp_path):
    """A copy of the committed TWIST-CS key (and its .sha256) in a scratch folder."""
    src = cs_key_path()
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    shutil.copy(src.with_name(src.name + ".sha256"), tmp_path / (src.name + ".sha256"))
    return dst


def test_version_names():
    assert bump_version("twist-cs-2.0") == "twist-cs-2.1"
    assert bump_version("twist-cs-2.9+crisis") == "twist-cs-2.10+crisis"
    with pytest.raises(InputError, match="next version"):
        bump_version("locomo10")
    assert split_errata_name("twist-cs-2.0+errata-3") == ("twist-cs-2.0", 3)
    assert split_errata_name("data/k.json+errata") == ("data/k.json", None)
    assert split_errata_name("twist-cs-2.0") is None


def test_errata_log_add_and_refuse(key):
    ds = load_cs_dataset(key)
    pii, draft = ds.pii_plants[0], next(d for d in ds.drafts if d.label == "aligned")
    e1, path = add_erratum(key, pii.id, "the number is a desk line", by="reviewer", on=DAY)
    assert path == errata_path(key, "twist-cs-1.0") and path.name == "twist-cs-1.0.errata.json"
    e2, _ = add_erratum(key, draft.id, "the record changed", action="relabel",
                        label="contradicting", evidence=[draft.evidence[0]], on=DAY)
    assert (e1.n, e2.n) == (1, 2)
    log = read_errata_log(path, "twist-cs", "twist-cs-1.0+crisis")  # one log per version
    assert [e.item for e in log.entries] == [pii.id, draft.id]
    with pytest.raises(InputError, match="already has erratum 1"):
        add_erratum(key, pii.id, "again", on=DAY)
    with pytest.raises(InputError, match="no item"):
        add_erratum(key, "cs-nowhere:pii-99", "x", on=DAY)
    with pytest.raises(InputError, match="only a Track B draft"):
        add_erratum(key, ds.update_chains[0].id, "x", action="relabel", label="aligned")
    with pytest.raises(InputError, match="not in cs-"):
        add_erratum(key, ds.drafts[5].id, "x", action="relabel", label="contradicting",
                    evidence=["cs-nowhere:e0001"])
    with pytest.raises(InputError, match="empty"):
        add_erratum(key, ds.drafts[6].id, "  ")
    assert len(read_errata_log(path, "twist-cs", "twist-cs-1.0").entries) == 2
    doc = json.loads(path.read_text())
    doc["entries"][1]["n"] = 5
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="numbered"):
        read_errata_log(path, "twist-cs", "twist-cs-1.0")


def test_runs_apply_errata_by_version(key):
    ds = load_cs_dataset(key)
    pii, draft = ds.pii_plants[0], next(d for d in ds.drafts if d.label == "aligned")
    add_erratum(key, pii.id, "a desk line", on=DAY)
    add_erratum(key, draft.id, "changed", action="relabel", label="contradicting", on=DAY)
    one = load_dataset(f"{key}+errata-1")
    both = load_dataset(f"{key}+errata")
    none = load_dataset(f"{key}+errata-0")
    assert (one.version, both.version, none.version) == (
        "twist-cs-1.0+errata-1", "twist-cs-1.0+errata-2", "twist-cs-1.0+errata-0")
    assert both.meta["dataset_name"] == f"{key}+errata-2"  # pinned for re-scoring
    assert pii.id not in {p.id for p in one.pii_plants} and len(one.pii_plants) == 29
    assert next(d for d in one.drafts if d.id == draft.id).label == "aligned"
    assert next(d for d in both.drafts if d.id == draft.id).label == "contradicting"
    shas = {ds.key_sha256, none.key_sha256, one.key_sha256, both.key_sha256}
    assert len(shas) == 4
    log = read_errata_log(errata_path(key, ds.version), "twist-cs", ds.version)
    assert one.key_sha256 == sha256_bytes(f"{ds.key_sha256}+{log.digest(1)}".encode())
    with pytest.raises(InputError, match="errata-3 asked for"):
        load_dataset(f"{key}+errata-3")


def test_release_next_version_folds_in_errata_and_keeps_the_old_key(key, tmp_path):
    ds = load_cs_dataset(key)
    neg = ds.hard_negative_arcs[0]
    add_erratum(key, neg.id, "not a look-alike", on=DAY)
    before = key.read_bytes()
    rel = release_next_version(key, [Change(ds.drafts[0].id, "drop", "test")], why="errata",
                               on=DAY)
    assert key.read_bytes() == before
    assert rel.path == tmp_path / "twist-cs-1.1.json" and rel.errata == [1]
    new = load_cs_dataset(rel.path)
    assert new.version == "twist-cs-1.1" and new.key_sha256 == rel.sha256
    assert {neg.id, ds.drafts[0].id}.isdisjoint(
        {i.id for f in ("hard_negative_arcs", "drafts") for i in getattr(new, f)})
    arc = next(a for a in new.reversal_arcs if a.id == neg.paired_reversal)
    assert arc.paired_negative is None and rel.report.unpaired == [arc.id]
    log = new.meta["changelog"][-1]
    assert (log["version"], log["from"], log["errata"], log["date"]) == (
        "twist-cs-1.1", "twist-cs-1.0", [1], "2026-12-01")
    assert [d["item"] for d in log["dropped"]] == [neg.id, ds.drafts[0].id]
    # the new version's errata log starts empty; the output is never overwritten
    assert read_errata_log(errata_path(rel.path, new.version), "twist-cs", new.version
                           ).entries == []
    with pytest.raises(InputError, match="exists already"):
        release_next_version(key, [], why="again")
    # byte-deterministic for the same inputs
    again = release_next_version(key, [Change(ds.drafts[0].id, "drop", "test")], why="errata",
                                 out=tmp_path / "again.json", on=DAY)
    assert again.sha256 == rel.sha256


def test_apply_changes_checks_every_change():
    lists = {"drafts": [{"id": "d1", "conversation": "c", "label": "aligned", "text": "t",
                         "evidence": []}],
             "qa": [{"id": "q1", "conversation": "c", "question": "?", "category": 4}]}
    with pytest.raises(InputError, match="needs the turns it contradicts"):
        apply_changes(lists, [Change("d1", "relabel", "x", label="contradicting")], "t")
    with pytest.raises(InputError, match="cannot change"):
        apply_changes(lists, [Change("q1", "fix", "x", fields={"id": "q2"})], "t")
    with pytest.raises(InputError, match="category"):
        apply_changes(lists, [Change("q1", "fix", "x", fields={"category": 9})], "t")
    with pytest.raises(InputError, match="one change per item"):
        apply_changes(lists, [Change("q1", "drop", "x"), Change("q1", "drop", "y")], "t")
    new, rep = apply_changes(lists, [Change("q1", "fix", "x", fields={"answer": "Paris"})], "t")
    assert new["qa"][0]["answer"] == "Paris" and lists["qa"][0].get("answer") is None
    assert rep.fixed == [{"item": "q1", "fields": ["answer"], "why": "x"}]


def test_resolve_key_file(key):
    assert resolve_key_file(str(key)) == key
    assert resolve_key_file("twist-cs-1.0") == cs_key_path()
    with pytest.raises(InputError, match="no such key file"):
        resolve_key_file("twist-cs-9.9")


def test_locomo_audit_is_a_versioned_key(locomo_path):
    """`-d locomo+audit-1` is the same key (version and sha256) as `--errata locomo-audit`."""
    opts = DatasetOptions(locomo=locomo_path)
    pinned = load_dataset("locomo+audit-1", opts)
    old = locomo_dataset(locomo_path, errata="locomo-audit")
    assert (pinned.version, pinned.key_sha256) == (old.version, old.key_sha256)
    assert pinned.version == "locomo10+locomo-audit-9493fb4"
    assert [q.answer for q in pinned.qa] == [q.answer for q in old.qa]
    assert pinned.meta["errata"]["answer_changed"] == 99
    twist_locomo = load_dataset("twist-locomo-1.0+audit-1", opts)
    assert twist_locomo.version == "twist-locomo-1.0+locomo-audit-9493fb4"
    with pytest.raises(InputError, match="LoCoMo-based"):
        load_dataset("twist-cs-1.0+audit-1", opts)


def test_another_audit_file_is_refused_under_the_pinned_name(locomo_path, tmp_path):
    shared = tmp_path / "shared"
    (shared / "locomo-audit").mkdir(parents=True)
    (shared / "locomo-audit" / "errors.json").write_text("[]")
    (shared / "locomo").mkdir()
    loc = shared / "locomo" / "locomo10.json"
    shutil.copy(locomo_path, loc)  # the audit file is looked up beside the LoCoMo folder
    with pytest.raises(InputError, match="is not locomo-audit@9493fb4"):
        load_dataset("locomo+audit-1", DatasetOptions(locomo=loc))


def test_key_versions_are_in_the_key_file(key):
    doc, _ = read_key(key)
    assert doc["version"] == doc["payload"]["version"] == "twist-cs-1.0"
