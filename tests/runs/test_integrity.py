"""A run folder belongs to one run at a time, a resume never mixes inputs, one system cannot
change another's data, and a conversation that was never fully ingested is not scored."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import shared_file
from toy_systems import KeywordToy

from twistbench.contract import BaseSystem, Capabilities
from twistbench.datasets.demo import demo_dataset
from twistbench.errors import InputError
from twistbench.records import read_records
from twistbench.runs.lock import LOCK_NAME, RunLock
from twistbench.runs.runner import RunSettings, run_system
from twistbench.tracks import score_run

QUIET = RunSettings(progress=False)
TESTS = Path(__file__).resolve().parents[1]


def strip(recs):
    return [r.model_dump(exclude={"latency_s"}) for r in recs]


# -- the lock ---------------------------------------------------------------------------------


def _holder(folder: Path) -> subprocess.Popen:
    """A process that takes the folder's lock, says so, and waits to be killed."""
    code = ("import sys; from twistbench.runs.lock import RunLock; "
            f"l = RunLock({str(folder)!r}).acquire(); print('locked', flush=True); "
            "sys.stdin.read()")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stdin=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    return p


def test_a_held_lock_is_refused_naming_its_owner_and_a_dead_one_is_taken_over(tmp_path):
    holder = _holder(tmp_path)
    try:
        with pytest.raises(InputError) as info:
            RunLock(tmp_path).acquire()
        assert f"pid {holder.pid}" in str(info.value) and info.value.field == "lock"
    finally:
        holder.kill()  # kill -9: no chance to clean up
        holder.wait()
    assert (tmp_path / LOCK_NAME).exists()  # left behind by the dead run
    with RunLock(tmp_path) as lock:
        assert lock.note and f"pid {holder.pid}" in lock.note and "gone" in lock.note
        owner = json.loads((tmp_path / LOCK_NAME).read_text())
        assert owner["pid"] == os.getpid() and owner["host"] and owner["started"]
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_second_twist_run_on_a_locked_folder_exits_2_with_one_line(tmp_path):
    folder = tmp_path / "out" / "keyword-toy"
    holder = _holder(folder)
    try:
        env = dict(os.environ, PYTHONPATH=str(TESTS))
        r = subprocess.run([sys.executable, "-m", "twistbench.cli", "run", "-d", "demo", "-s",
                            "toy_systems:KeywordToy", "--no-progress", "-o",
                            str(tmp_path / "out")], capture_output=True, text=True, env=env,
                           timeout=300)
    finally:
        holder.kill()
        holder.wait()
    assert r.returncode == 2, r.stderr
    errors = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and f"pid {holder.pid}" in errors[0] and "in use" in errors[0]
    assert not (folder / "items.jsonl").exists()  # nothing was written


def test_the_lock_is_released_after_a_run_and_a_rerun_resumes(tmp_path):
    run_system(demo_dataset(), KeywordToy(), tmp_path / "r", settings=QUIET)
    assert not (tmp_path / "r" / LOCK_NAME).exists()
    out = run_system(demo_dataset(), KeywordToy(), tmp_path / "r", settings=QUIET)
    assert out.new_items == 0 and not out.notes


# -- inputs in the fingerprint ----------------------------------------------------------------


def test_resuming_over_a_different_locomo_file_is_refused(tmp_path):
    from twistbench.datasets.twist_b import load_twist_b

    key = shared_file("twist-b", "track_b_v1.0_test.jsonl")
    locomo = shared_file("locomo", "locomo10.json")
    other = tmp_path / "locomo10.json"
    other.write_bytes(locomo.read_bytes() + b"\n")  # same content to a parser, other file
    settings = RunSettings(progress=False, tracks=["B"], conversations=["conv-26"])
    run_system(load_twist_b(key, locomo), KeywordToy(), tmp_path / "r", settings=settings)
    with pytest.raises(InputError) as info:
        run_system(load_twist_b(key, other), KeywordToy(), tmp_path / "r", settings=settings)
    assert info.value.field == "dataset.inputs.locomo10.json"
    man = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert set(man["config"]["dataset"]["inputs"]) == {"key", "locomo10.json"}


# -- one system cannot change the data of the next --------------------------------------------


class Mutator(KeywordToy):
    """Vandalises everything it is given."""

    name = "mutator"

    def ingest(self, events):
        for e in events:
            e.text = "VANDALISED " + e.text
            e.meta["vandalised"] = True
            e.__dict__["speaker"] = "nobody"  # even around pydantic
        events.clear()
        return None


def test_a_mutating_system_does_not_change_what_the_next_system_sees(tmp_path):
    ds = demo_dataset()
    before = ds.model_dump()
    run_system(ds, Mutator(), tmp_path / "m", settings=QUIET)
    assert ds.model_dump() == before
    after_mutator = run_system(ds, KeywordToy(), tmp_path / "k", settings=QUIET)
    clean = run_system(demo_dataset(), KeywordToy(), tmp_path / "c", settings=QUIET)
    assert strip(read_records(after_mutator.folder)) == strip(read_records(clean.folder))


# -- ingest failures count against their conversation -----------------------------------------


class IngestFails(KeywordToy):
    name = "ingest-fails"

    def __init__(self, fail_in: str = ""):
        super().__init__()
        self.fail_in = fail_in
        self.conv = ""

    def reset(self, conversation_id):
        self.conv = conversation_id
        super().reset(conversation_id)

    def ingest(self, events):
        if not self.fail_in or self.conv == self.fail_in:
            raise OSError("store unreachable")
        return super().ingest(events)


@pytest.mark.parametrize("fail_in", ["", "demo-acme"])
def test_items_of_a_conversation_whose_ingest_failed_are_errors_in_the_cell(tmp_path, fail_in):
    ds = demo_dataset()
    out = run_system(ds, IngestFails(fail_in), tmp_path / "r", settings=QUIET)
    recs = read_records(out.folder)
    scores = score_run(ds, recs, IngestFails.capabilities)
    b = scores.tracks["B"]
    failed = {c.id for c in ds.conversations if not fail_in or c.id == fail_in}
    b_failed = sum(1 for d in ds.drafts if d.conversation in failed)
    assert sum(b.errors.values()) == b_failed > 0
    if not fail_in:  # nothing left to score: no value, and the cell says why
        assert b.metrics["balanced_accuracy"].value is None
    n_scored = b.metrics["contradiction_recall"].n + b.metrics["aligned_specificity"].n + \
        b.metrics["hard_negative_specificity"].n
    assert n_scored == len(ds.drafts) - b_failed
    assert scores.ingest_errors == sum(1 for r in recs if r.track == "ingest" and r.error)


def test_peak_memory_is_in_the_manifest(tmp_path):
    out = run_system(demo_dataset(), KeywordToy(), tmp_path / "r", settings=QUIET)
    res = json.loads((out.folder / "manifest.json").read_text())["resources"]
    assert res["peak_rss_mb"] > 10


class Named(BaseSystem):
    """A name full of rich markup and terminal escapes."""

    name = "[/][bold red]x\x1b[2J\x07"
    capabilities = Capabilities(recall=True)

    def recall(self, query):
        return {"text": "[/] \x1b[31m"}


def test_a_hostile_name_is_printed_as_text(tmp_path, capsys):
    from twistbench import cli

    code = cli.run_cli(["run", "-d", "demo", "-s", f"{__file__}:Named", "--no-progress",
                        "-o", str(tmp_path / "o")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "\x1b" not in captured.out + captured.err and "\x07" not in captured.out
    assert "\\x1b[2J" in captured.out  # shown, not executed


class RetrieveFails(BaseSystem):
    name = "retrieve-fails"
    capabilities = Capabilities(retrieve=True, lineage=True)

    def retrieve(self, query, k):
        raise ConnectionError("index offline")

    def lineage(self):
        return []


def test_twist_trace_exits_1_when_every_query_failed(tmp_path, capsys):
    from twistbench import cli

    code = cli.run_cli(["trace", "-s", f"{__file__}:RetrieveFails", "-d", "demo", "-o",
                        str(tmp_path / "t")])
    err = capsys.readouterr().err
    assert code == 1 and "every one of the" in err and "exception" in err
    ok = cli.run_cli(["trace", "-s", "flat-rag", "-d", "demo", "-o", str(tmp_path / "ok")])
    assert ok == 0


def test_twist_report_refuses_a_folder_with_duplicate_item_ids(tmp_path, capsys):
    from twistbench import cli

    out = run_system(demo_dataset(), KeywordToy(), tmp_path / "r", settings=QUIET,
                     dataset_source={"name": "demo"})
    items = out.folder / "items.jsonl"
    first = items.read_text().splitlines()[5]
    items.write_text(items.read_text() + first + "\n")  # a second writer's copy
    code = cli.run_cli(["report", str(out.folder)])
    errors = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error:")]
    assert code == 2 and len(errors) == 1
    assert json.loads(first)["item_id"] in errors[0] and "records 6, " in errors[0]


def test_isolate_process_from_the_command_line(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(TESTS))
    r = subprocess.run([sys.executable, "-m", "twistbench.cli", "run", "-d", "demo", "-s",
                        "toy_systems:KeywordToy", "--isolate", "process", "--no-progress", "-o",
                        str(tmp_path / "o")], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    man = json.loads((tmp_path / "o" / "keyword-toy" / "manifest.json").read_text())
    assert man["limits"]["isolate"] == "process" and man["counts"]["errors"] == 0
