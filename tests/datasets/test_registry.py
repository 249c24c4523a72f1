"""The dataset registry names the committed key each built-in entry loads (DatasetEntry.key_file):
the CLI looks up a key's shipped vectors by it, so it must be the file the loader read."""

from __future__ import annotations

import pytest

from twistbench.datasets.keyfile import read_key
from twistbench.datasets.paths import cs2_key_path, cs_key_path
from twistbench.datasets.registry import REGISTRY, DatasetOptions, builtin_key_path, load_dataset


def test_the_twist_cs_entries_name_their_committed_keys():
    assert {name: e.key_file for name, e in REGISTRY.items() if e.key_file} == {
        "twist-cs-2.0": cs2_key_path, "twist-cs-1.0": cs_key_path}
    assert builtin_key_path("twist-cs-2.0", include_crisis=True).name == "twist-cs-2.0-crisis.json"
    for other in ("demo", "locomo", "twist-cs-2.0+errata", "data/twist-cs-2.0.json"):
        assert builtin_key_path(other) is None


@pytest.mark.parametrize("name", ["twist-cs-2.0", "twist-cs-1.0"])
@pytest.mark.parametrize("crisis", [False, True])
def test_the_named_key_is_the_file_the_entry_loads(name: str, crisis: bool):
    key = builtin_key_path(name, crisis)
    assert key is not None and key.exists()
    ds = load_dataset(name, DatasetOptions(include_crisis=crisis))
    assert ds.key_sha256 == read_key(key)[1]  # read_key also checks the .sha256 beside it
