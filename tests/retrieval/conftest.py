"""Fixtures of the retrieval tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from twistbench.retrieval import dense, embcache, shipped


@pytest.fixture
def fresh_embedding_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """What a new process sees: an empty in-process cache, no disk cache opened and no shipped
    file read yet, the shipped tier switched on, and a disk cache file in tmp_path (returned)."""
    monkeypatch.setattr(dense, "_cache", dense.OrderedDict())
    monkeypatch.setattr(embcache, "_shared", {})
    monkeypatch.setattr(shipped, "_files", {})
    monkeypatch.delenv(shipped.ENV_SWITCH, raising=False)
    path = tmp_path / "emb.sqlite3"
    monkeypatch.setenv(embcache.ENV_CACHE, str(path))
    return path
