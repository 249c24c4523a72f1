"""Shared test fixtures. Data from ../shared/data is read in place and never copied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("TWIST_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_file(*parts: str) -> Path:
    """Path of a file under ../shared/data, or skip the test with the reason."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs {path} (the shared test data is absent on this machine)")
    return path


@pytest.fixture(scope="session", autouse=True)
def _embedding_cache_per_session(tmp_path_factory: pytest.TempPathFactory):
    """Every test session embeds into its own cache file, never the checkout's: a vector left
    by an earlier session (or another branch's model) must not decide a test."""
    old = os.environ.get("TWIST_EMBED_CACHE")
    os.environ["TWIST_EMBED_CACHE"] = str(tmp_path_factory.mktemp("emb") / "embeddings.sqlite3")
    yield
    if old is None:
        os.environ.pop("TWIST_EMBED_CACHE", None)
    else:
        os.environ["TWIST_EMBED_CACHE"] = old


@pytest.fixture
def locomo_path() -> Path:
    return shared_file("locomo", "locomo10.json")


@pytest.fixture
def twist_b_path() -> Path:
    return shared_file("twist-b", "track_b_v1.0_test.jsonl")
