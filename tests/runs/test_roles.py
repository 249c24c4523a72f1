"""The roles in a run: a system that returns memories is answered by the run's answerer (the
answerer is in the fingerprint), an answerer that fails is the item's error, the judge's decoy
calibration travels in the manifest into the report, and LLM calls are counted per run."""

from __future__ import annotations

import json

import pytest
from toy_systems import MemoryToy

from twistbench.answerers import make_answerer
from twistbench.datasets.demo import demo_dataset
from twistbench.errors import InputError
from twistbench.judges.calibration import calibrate, store_calibration, twist_decoys
from twistbench.judges.structural import StructuralJudge
from twistbench.llm.loopback import Reply
from twistbench.llm.scripted import respond
from twistbench.records import read_records
from twistbench.report.runs import report_runs
from twistbench.runs.runner import RunSettings, run_system

DS = demo_dataset()
QUIET = RunSettings(progress=False, timeout_s=10)


@pytest.mark.parametrize("shape", ["model", "dict", "list"])
def test_memories_are_answered_by_the_extractive_answerer(tmp_path, shape):
    out = run_system(DS, MemoryToy(shape), tmp_path / "r", settings=QUIET,
                     options={"shape": shape}, dataset_source={"name": "demo"})
    assert out.errors == 0
    recalls = [r for r in read_records(tmp_path / "r") if r.output and "answer" in r.output
               and r.output["answer"] is not None]
    assert recalls and all(r.output["answer"]["answered_by"] == "extractive" for r in recalls)
    answered = [r for r in recalls if r.output["answer"]["retrieved"]]
    assert answered
    for r in answered:  # the answer cites the sources of a retrieved memory
        sources = {s for m in r.output["answer"]["retrieved"] for s in m["sources"]}
        assert set(r.output["answer"]["evidence"]) <= sources
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["answerer"]["name"] == "extractive"
    assert manifest["config"]["answerer"] == manifest["answerer"]
    assert manifest["counts"]["answered_from_memories"] == len(recalls)
    report = report_runs([tmp_path / "r"])
    assert (f"answerer extractive (offline, no model): wrote {len(recalls)} of {len(recalls)}"
            in report.markdown)


def test_the_answerer_is_part_of_the_runs_identity(tmp_path, llm_env):
    run_system(DS, MemoryToy(), tmp_path / "r", settings=QUIET, dataset_source={"name": "demo"})
    with pytest.raises(InputError) as e:
        run_system(DS, MemoryToy(), tmp_path / "r", settings=QUIET,
                   dataset_source={"name": "demo"}, answerer=make_answerer("llm"))
    assert e.value.field.startswith("answerer")


def test_an_llm_answerer_that_fails_makes_item_errors_never_answers(tmp_path, llm_env):
    llm_env.reply = lambda body: Reply("no JSON here")
    out = run_system(DS, MemoryToy(), tmp_path / "r", settings=QUIET,
                     dataset_source={"name": "demo"}, answerer=make_answerer("llm"))
    failed = [r for r in read_records(tmp_path / "r") if r.error]
    assert out.errors == len(failed) > 0
    assert {r.error.kind for r in failed} == {"answerer_error"}
    assert all("malformed_json" in r.error.message for r in failed)
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    (usage,) = manifest["llm_usage"]
    assert usage["errors"] == {"malformed_json": usage["requests"]}


def test_an_llm_answerer_run_counts_its_calls_and_reruns_from_the_cache(tmp_path, llm_env):
    llm_env.reply = respond
    for folder in ("one", "two"):
        run_system(DS, MemoryToy(), tmp_path / folder, settings=QUIET,
                   dataset_source={"name": "demo"}, answerer=make_answerer("llm"))
    one = json.loads((tmp_path / "one" / "manifest.json").read_text())["llm_usage"][0]
    two = json.loads((tmp_path / "two" / "manifest.json").read_text())["llm_usage"][0]
    assert one["network_calls"] == one["requests"] > 0 and one["cache"]["hits"] == 0
    assert two["network_calls"] == 0 and two["cache"]["hits"] == one["requests"]
    # token counts are counts, not credentials: the manifest keeps them
    assert isinstance(one["tokens"]["prompt"], int) and one["tokens"]["prompt"] > 0
    assert isinstance(json.loads((tmp_path / "one" / "manifest.json").read_text())[
        "answerer"]["max_tokens"], int)
    assert json.loads((tmp_path / "two" / "manifest.json").read_text())["answerer"]["model"] \
        == "scripted"


def test_judge_calibration_goes_into_the_manifest_and_beside_the_judged_column(
        tmp_path, monkeypatch):
    monkeypatch.setenv("TWIST_CALIBRATION_DIR", str(tmp_path / "cal"))
    judge = f"structural v{StructuralJudge.version}"
    run_system(DS, MemoryToy(), tmp_path / "before", settings=QUIET,
               dataset_source={"name": "demo"})
    before = report_runs([tmp_path / "before"])
    assert f"judge {judge}: not calibrated" in before.markdown
    # the demo's chains give no plausible wrong value and there are no LoCoMo decoys: every
    # rate is 1.0, yet the calibration is incomplete and never shown as passing
    rec = calibrate(StructuralJudge(), [], twist_decoys(DS.update_chains)[0])
    store_calibration(rec)
    run_system(DS, MemoryToy(), tmp_path / "after", settings=QUIET,
               dataset_source={"name": "demo"})
    manifest = json.loads((tmp_path / "after" / "manifest.json").read_text())
    cal = manifest["judge"]["calibration"]
    assert cal["styles"]["stale_as_current"]["rejection_rate"] == 1.0
    assert set(cal["styles"]["hedged"]) >= {"rejection_rate", "n", "interval", "passed"}
    assert cal["passed"] is False and "plausible_wrong" in cal["missing"]
    assert "calibration" not in manifest["config"]["judge"]  # not fingerprinted
    report = report_runs([tmp_path / "after"])
    head = report.markdown.splitlines()[2]
    assert (f"C: current ↑ / stale ↓ (judge {judge}: decoys rejected >= 1.000, INCOMPLETE "
            "calibration, not passing (not calibrated on: specific_but_wrong, "
            "vague_but_topical, locomo_gold, plausible_wrong)") in head
    assert (f"Judge of C: {judge} — decoys rejected: hedged 1.000 (n 2); stale_as_current "
            "1.000 (n 2) — INCOMPLETE calibration") in report.markdown
    assert "passes calibration" not in report.markdown
    # the row's judge carries the same structure into the report's JSON
    row = report.data["profiles"][0]["rows"][0]
    assert row["judge"]["calibration"]["passed"] is False
    # a run from before the calibration finds it in the store when re-scored
    assert "decoys rejected >= 1.000" in report_runs([tmp_path / "before"]).markdown
    # a manifest (an older harness's) that claims a pass its styles do not back is re-derived
    manifest["judge"]["calibration"] = {**cal, "passed": True, "failing": [], "missing": [],
                                        "required": None}
    (tmp_path / "after" / "manifest.json").write_text(json.dumps(manifest))
    again = report_runs([tmp_path / "after"])
    assert "passes calibration" not in again.markdown
    assert "INCOMPLETE calibration" in again.markdown.splitlines()[2]


def test_the_progress_line_shows_calls_cache_hits_errors_and_tokens(tmp_path, llm_env):
    from twistbench.answerers.llm import LLMAnswerer
    from twistbench.llm import usage_snapshot
    from twistbench.model import Memory
    from twistbench.runs.runner import _calls_line

    llm_env.reply = respond
    mark = usage_snapshot()
    assert _calls_line(mark, 0) == ""
    answerer = LLMAnswerer()
    mems = [Memory(id="m1", text="Dana's rollout covers 120 seats.", sources=["t1"])]
    answerer.answer("How many seats?", mems)
    answerer.client.flush()  # the cache write happens in the background: wait for it
    answerer.answer("How many seats?", mems)
    answerer.answer("How many seats?", mems)
    line = _calls_line(mark, 2)
    assert line.startswith("LLM 1 calls · 2 cached · 0 errors · ") and "k tokens" in line
    assert line.endswith("· 2 item errors")
