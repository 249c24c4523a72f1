"""`twist serve` from the command line: the document it prints, bad input, a real server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from twistbench.cli import run_cli

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "http-contract.openapi.json"


def test_serve_openapi_prints_the_committed_document(capsys):
    assert run_cli(["serve", "--openapi"]) == 0
    assert capsys.readouterr().out == COMMITTED.read_text(encoding="utf-8")


@pytest.fixture
def busy_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.mark.parametrize("args, named", [
    (["serve"], "SYSTEM"),
    (["serve", "no-such-system"], "--system"),
    (["serve", "oracle"], "oracle"),
    (["serve", "flat-rag", "--port", "70000"], "--port"),
    (["serve", "flat-rag", "--port", "-1"], "--port"),
    (["serve", "flat-rag", "--api-key-env", "TWIST_TEST_UNSET_TOKEN"], "--api-key-env"),
    (["serve", "flat-rag", "--host", "no-such-host.invalid"], "no-such-host.invalid"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, monkeypatch, args, named):
    monkeypatch.delenv("TWIST_TEST_UNSET_TOKEN", raising=False)
    assert run_cli(args) == 2
    err = capsys.readouterr().err
    assert named in err and len(err.strip().splitlines()) == 1, err


def test_a_port_in_use_is_bad_input(capsys, busy_port):
    assert run_cli(["serve", "flat-rag", "--port", str(busy_port)]) == 2
    assert f"127.0.0.1:{busy_port}" in capsys.readouterr().err


def test_twist_serve_then_conform_over_http():
    env = {**os.environ, "COLUMNS": "400"}
    proc = subprocess.Popen([sys.executable, "-m", "twistbench.cli", "serve", "flat-rag",
                             "--port", "0", "-S", "retriever=lexical"], stdout=subprocess.PIPE,
                            text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert " at http://127.0.0.1:" in line, line
        url = line.split(" at ", 1)[1].split(";", 1)[0]
        r = subprocess.run([sys.executable, "-m", "twistbench.cli", "conform", url, "--json"],
                           capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert '"fail": 0' in r.stdout
    finally:
        proc.terminate()
        proc.wait(30)
