"""Starting examples/node-memory/server.js for a test (skipped with a reason without node)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parents[2] / "examples" / "node-memory" / "server.js"


@contextmanager
def node_server() -> Iterator[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on the PATH: the Node.js example server cannot run")
    proc = subprocess.Popen([node, str(SERVER), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if "listening on " not in line:
            proc.kill()
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"the node server did not start: {line!r} {err[:500]!r}")
        yield line.split("listening on ", 1)[1].strip()
    finally:
        proc.kill()
        proc.wait(10)
