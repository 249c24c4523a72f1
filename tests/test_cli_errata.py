"""`twist errata add | list | apply` as a user runs them, and runs pinned to an errata level."""

from __future__ import annotations

import shutil
import subprocess
import sys

from twistbench.cli import _dataset
from twistbench.datasets.paths import cs_key_path
from twistbench.datasets.twist_cs import load_cs_dataset


def twist(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "twistbench.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_errata_add_list_apply_and_a_pinned_run(tmp_path):
    key = tmp_path / "twist-cs-1.0.json"
    shutil.copy(cs_key_path(), key)
    ds = load_cs_dataset(key)
    item = ds.emotional_negatives[0].id
    r = twist("errata", "add", str(key), "--item", item, "--reason", "a crisis, not a feeling",
              "--by", "reviewer")
    assert r.returncode == 0, r.stderr
    assert "erratum 1: drop" in r.stdout and "+errata-1" in r.stdout
    draft = next(d for d in ds.drafts if d.label == "hard_negative")
    r = twist("errata", "add", str(key), "--item", draft.id, "--reason", "names no change",
              "--action", "relabel", "--label", "aligned")
    assert r.returncode == 0, r.stderr
    bad = twist("errata", "add", str(key), "--item", "nope", "--reason", "x")
    assert bad.returncode == 2 and "no item 'nope'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    bad = twist("errata", "add", str(key), "--item", item, "--reason", "x", "--action", "fix")
    assert bad.returncode == 2 and "drop or relabel" in bad.stderr
    listed = twist("errata", "list", str(key))
    assert listed.returncode == 0 and "2 errata" in listed.stdout and item in listed.stdout
    # a run names the level it used, so that re-scoring later loads the same key
    loaded, source = _dataset(f"{key}+errata", None, None, False)
    assert loaded.version == "twist-cs-1.0+errata-2"
    assert source["name"] == f"{key}+errata-2"
    out = tmp_path / "next.json"
    r = twist("errata", "apply", str(key), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "twist-cs-1.1" in r.stdout
    new = load_cs_dataset(out)
    assert item not in {e.id for e in new.emotional_negatives}
    assert next(d for d in new.drafts if d.id == draft.id).label == "aligned"
    listed = twist("errata", "list", str(out))
    assert "twist-cs-1.1 (from twist-cs-1.0" in listed.stdout and "0 errata" in listed.stdout
