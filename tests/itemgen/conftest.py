"""Fixtures for the TWIST-CS 2.0 tests: one in-process build (and its trace) per session."""

from __future__ import annotations

from typing import Any

import pytest

from twistbench.itemgen.cs2 import build
from twistbench.model import Dataset


@pytest.fixture(scope="session")
def cs2_built() -> tuple[Dataset, dict[str, Any]]:
    trace: dict[str, Any] = {}
    return build(trace=trace), trace


@pytest.fixture(scope="session")
def cs2_crisis() -> Dataset:
    return build(include_crisis=True)
