"""A built-in system gives the same item records in-process and through `twist serve` + the
HTTP client: the contract carries everything the tracks need, and nothing changes on the way."""

from __future__ import annotations

import functools
import json

import pytest

from twistbench.datasets.registry import DEFAULT_DATASET, load_dataset
from twistbench.records import read_records
from twistbench.runs.runner import RunSettings, run_system
from twistbench.systems import build_system, serve_system
from twistbench.wire import CONTRACT_VERSION
from twistbench.wire.server import ContractServer

# What each system's capabilities let run (tracks A and D need tensions and governance).
TRACKS_RUN = {"flat-rag": {"ingest", "B", "C"}, "fact-rag": {"ingest", "B", "C"},
              "heuristic": {"ingest", "A", "B", "C", "D"},
              "oracle": {"ingest", "A", "B", "C", "D"}}


def _one_conversation_per_item_type(ds):
    return sorted({getattr(ds, f)[0].conversation for f in ds.ITEM_FIELDS if getattr(ds, f)})


def _records(folder):
    # Latency is the only field that may differ: the HTTP round trip takes time.
    return {r.item_id: {k: v for k, v in r.model_dump(mode="json").items() if k != "latency_s"}
            for r in read_records(folder)}


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["flat-rag", "fact-rag", "heuristic", "oracle"])
def test_identical_item_records_in_process_and_over_http(spec, tmp_path):
    ds = load_dataset(DEFAULT_DATASET)
    settings = RunSettings(conversations=_one_conversation_per_item_type(ds), progress=False)
    gold = spec == "oracle"  # in-process the runner opens its gold channel; served, the server
    run_system(ds, build_system(spec), tmp_path / "local", spec=spec, settings=settings,
               gold_channel=gold)
    server = serve_system(spec, {}, gold=ds if gold else None)
    server.start_in_thread()
    try:
        remote = build_system(server.url)
        run_system(ds, remote, tmp_path / "http", spec=server.url, settings=settings,
                   factory=functools.partial(build_system, server.url, {}))
        assert server.instances == {}  # every conversation was closed
    finally:
        server.stop()
    local, over_http = _records(tmp_path / "local"), _records(tmp_path / "http")
    assert set(local) == set(over_http)
    assert sum(r["error"] is None for r in local.values()) > 50
    assert {r["track"] for r in local.values()} == TRACKS_RUN[spec]
    different = [i for i in local if local[i] != over_http[i]]
    assert different == [], json.dumps([local[different[0]], over_http[different[0]]])[:2000]


def test_a_server_that_goes_away_makes_errors_never_scores(tmp_path):
    from twistbench.datasets.demo import demo_dataset

    server = ContractServer(functools.partial(build_system, "flat-rag", {"retriever": "lexical"}))
    server.start_in_thread()
    remote = build_system(server.url)
    server.stop()  # the client was built; every call from now on finds no server
    outcome = run_system(demo_dataset(), remote, tmp_path / "gone", spec=server.url,
                         settings=RunSettings(progress=False))
    records = read_records(tmp_path / "gone")
    assert records and outcome.errors == len(records)
    for r in records:
        assert r.error is not None and r.scores == {}, r
    manifest = json.loads((tmp_path / "gone" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["system"]["contract"] == CONTRACT_VERSION
    assert manifest["system"]["config"]["url"] == server.url


@pytest.mark.parametrize("shape", ["model", "dict", "list"])
def test_a_served_memory_layer_is_answered_by_the_runs_answerer_as_in_process(shape, tmp_path):
    # recall may return memories over the wire as in process; the harness's answerer answers
    # them on the client side, so the item records (answer, retrieved, answered_by) are the same.
    from twistbench.datasets.demo import demo_dataset

    ds = demo_dataset()
    spec = "toy_systems:MemoryToy"
    settings = RunSettings(progress=False)
    run_system(ds, build_system(spec, {"shape": shape}), tmp_path / "local", spec=spec,
               settings=settings)
    server = serve_system(spec, {"shape": shape})
    server.start_in_thread()
    try:
        run_system(ds, build_system(server.url), tmp_path / "http", spec=server.url,
                   settings=settings, factory=functools.partial(build_system, server.url, {}))
    finally:
        server.stop()
    local, over_http = _records(tmp_path / "local"), _records(tmp_path / "http")
    answered = [r for r in local.values() if (r["output"] or {}).get("answer", {}).get("retrieved")]
    assert answered, "the toy retrieved memories for some question"
    assert all(r["error"] is None for r in over_http.values())
    assert {i: r["output"] for i, r in local.items()} == \
        {i: r["output"] for i, r in over_http.items()}
