"""The non-Python example server (examples/node-memory) passes `twist conform`."""

from __future__ import annotations

from node_server import node_server

from twistbench.runs.conform import check_conformance
from twistbench.systems import make_system


def test_the_node_example_passes_conform():
    with node_server() as url:
        system, _ = make_system(url)
        results = check_conformance(system)
    assert system.name == "node-memory"
    statuses = {r.check: r.status for r in results}
    assert "fail" not in statuses.values(), [r for r in results if r.status == "fail"]
    assert statuses["recall [demo-acme]"] == "pass"
    assert statuses["check_alignment [demo-acme]"] == "declined"
    assert statuses["close [demo-boreal]"] == "pass"
