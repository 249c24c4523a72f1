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


@pytest.fixture(autouse=True)
def _no_shipped_vectors_offered(monkeypatch: pytest.MonkeyPatch):
    """A key loaded by an earlier test offers its shipped vectors through the environment
    (retrieval/shipped.py); each test starts with none offered."""
    monkeypatch.delenv("TWIST_SHIPPED_VECTOR_FILES", raising=False)


@pytest.fixture
def locomo_path() -> Path:
    return shared_file("locomo", "locomo10.json")


@pytest.fixture
def twist_b_path() -> Path:
    return shared_file("twist-b", "track_b_v1.0_test.jsonl")


@pytest.fixture
def loopback():
    """An OpenAI-compatible loopback server (scripted replies, injected faults)."""
    from twistbench.llm.loopback import LoopbackServer

    with LoopbackServer() as srv:
        yield srv


@pytest.fixture
def llm_env(monkeypatch, loopback, tmp_path):
    """The TWIST_LLM_* environment pointing at the loopback server, with a cache in tmp_path
    and no role overrides; shared clients made under it are closed afterwards."""
    from twistbench.llm import close_shared_clients

    for var in list(os.environ):
        if var.startswith(("TWIST_LLM_", "TWIST_ANSWERER_", "TWIST_JUDGE_", "TWIST_SYSTEM_",
                           "TWIST_RATER_", "OPENAI_")):
            monkeypatch.delenv(var)
    monkeypatch.setenv("TWIST_LLM_BASE_URL", loopback.base_url)
    monkeypatch.setenv("TWIST_LLM_MODEL", "scripted")
    monkeypatch.setenv("TWIST_LLM_CACHE", str(tmp_path / "llm-cache.sqlite3"))
    monkeypatch.setenv("TWIST_CALIBRATION_DIR", str(tmp_path / "calibration"))
    yield loopback
    close_shared_clients()
