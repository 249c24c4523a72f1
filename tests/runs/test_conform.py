"""`twist conform`: pass/fail per call with the offending payload, over HTTP as in-process."""

from __future__ import annotations

import functools
import json

from twistbench.cli import run_cli
from twistbench.runs.conform import check_conformance
from twistbench.systems import build_system, make_system
from twistbench.wire.server import ContractServer


def _statuses(results):
    return {r.check: r.status for r in results}


def test_the_oracle_passes_its_own_conform():
    system, entry = make_system("oracle")
    results = check_conformance(system, gold_channel=entry.gold_channel)
    assert [r for r in results if r.status != "pass"] == []
    assert any(r.call == "resolve" and r.conversation for r in results)  # exercised, per conv


def test_a_served_system_conforms_exactly_as_in_process():
    server = ContractServer(functools.partial(build_system, "flat-rag", {}))
    server.start_in_thread()
    try:
        over_http = check_conformance(build_system(server.url))
        assert server.instances == {}  # close freed every conversation
    finally:
        server.stop()
    in_process = check_conformance(build_system("flat-rag"))
    assert _statuses(over_http) == _statuses(in_process)
    assert "fail" not in _statuses(over_http).values()
    assert _statuses(over_http)["resolve [demo-acme]"] == "declined"


def test_a_failed_check_carries_the_request_and_the_output(capsys):
    code = run_cli(["conform", "toy_systems:FaultyToy", "--json", "-S", "hang_s=0.5",
                    "--timeout", "0.2"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["ok"] is False and doc["counts"]["fail"] > 0
    fails = [c for c in doc["checks"] if c["status"] == "fail"]
    for c in fails:
        assert c["call"] in ("recall", "check_alignment") and c["request"], c
    garbage = [c for c in fails if c["detail"].startswith("invalid_output")]
    raised = [c for c in fails if not c["detail"].startswith("invalid_output")]
    assert garbage  # the demo's inputs hit FaultyToy's garbage outputs
    for c in garbage:  # what the system sent back is shown
        assert c["output"] in ('{"txt": 42}', '{"aligned": "maybe-ish"}'), c
    for c in raised:
        assert c["output"] is None  # nothing came back
    passed = [c for c in doc["checks"] if c["status"] == "pass"]
    assert all(c["request"] is None for c in passed)


def test_conform_of_an_unreachable_url_is_bad_input(capsys):
    assert run_cli(["conform", "http://127.0.0.1:9", "-S", "timeout_s=2"]) == 2
    assert "constructing system http://127.0.0.1:9" in capsys.readouterr().err
