"""A real default run, cut to one conversation, shared by the item-view checks and the browser
end-to-end test: `twist run` with the default key and systems, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from twistbench.datasets.paths import cs_key_path
from twistbench.datasets.registry import DEFAULT_DATASET, load_dataset


@pytest.fixture(scope="session")
def default_run(tmp_path_factory) -> Path:
    """Run root of `twist run --conversation <the default key's first conversation>`: the
    default dataset (whichever key is the default) and the default systems."""
    name = DEFAULT_DATASET if cs_key_path().exists() else "demo"
    first = load_dataset(name).conversations[0].id
    root = tmp_path_factory.mktemp("default-run")
    env = {k: v for k, v in os.environ.items() if k != "TOY_LOG"}
    r = subprocess.run([sys.executable, "-m", "twistbench.cli", "run", "--no-progress",
                        "--conversation", first, "-o", str(root)], capture_output=True,
                       text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return root
