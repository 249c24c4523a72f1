"""Fixtures: one export of the committed TWIST-CS key, shared by the annotation tests."""

from __future__ import annotations

import pytest
from annotate_helpers import cs_dataset

from twistbench.annotate.packet import export_packets


@pytest.fixture(scope="session")
def cs():
    return cs_dataset()


@pytest.fixture(scope="session")
def packet(cs, tmp_path_factory):
    """Two annotators, fixed seed, every track, one worked example per answer."""
    out = tmp_path_factory.mktemp("export") / "round"
    export_packets(cs, out, annotators=2, seed=11, source={"name": "twist-cs-1.0"})
    return out
