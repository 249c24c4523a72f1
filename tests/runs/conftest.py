"""Fixtures of the runner tests."""

import pytest
import toy_systems


@pytest.fixture
def hangs(monkeypatch):
    """Swap the guard's clock for one driven by the toys' hang signal (a call times out exactly
    when a toy hangs, however slow the machine); release every hung call, so its thread ends,
    when the test is over."""
    toy_systems.HANGING.clear()
    toy_systems.RELEASE.clear()
    monkeypatch.setattr("twistbench.runs.isolation.wait_for", toy_systems.hang_aware_wait)
    yield
    toy_systems.RELEASE.set()
