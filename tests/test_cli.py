"""The `twist` command as a user runs it: subprocesses, exit codes, kill -9 and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from twistbench.datasets.demo import demo_dataset

TESTS = Path(__file__).resolve().parent


def twist(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "twistbench.cli", *args], capture_output=True,
                          text=True, env=_env(env), timeout=300, **kw)


def _env(extra: dict | None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    env.pop("TOY_LOG", None)
    env.update(extra or {})
    return env


def items(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "items.jsonl").read_text().splitlines() if x.strip()]


def without_timing(recs: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "latency_s"} for r in recs]


TOY = ["-d", "demo", "-s", "toy_systems:KeywordToy", "--no-progress"]


def test_run_report_and_rescore_identically(tmp_path):
    out = tmp_path / "runs"
    r = twist("run", *TOY, "-o", str(out))
    assert r.returncode == 0, r.stderr
    saved = json.loads((out / "report.json").read_text())
    again = twist("report", str(out), "--format", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == saved


def test_kill_minus_nine_then_resume_equals_an_uninterrupted_run(tmp_path):
    ref = tmp_path / "ref"
    r = twist("run", *TOY, "-S", "delay=0.15", "-o", str(ref))
    assert r.returncode == 0, r.stderr
    reference = items(ref / "keyword-toy")

    out = tmp_path / "killed"
    folder = out / "keyword-toy"
    proc = subprocess.Popen([sys.executable, "-m", "twistbench.cli", "run", *TOY, "-S",
                             "delay=0.15",
                             "-o", str(out)], env=_env(None), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    n_ingest = sum(len(c.sessions()) for c in demo_dataset().conversations)
    deadline = time.time() + 120
    while time.time() < deadline:
        if (folder / "items.jsonl").exists() and len(items(folder)) >= n_ingest + 3:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = items(folder)
    assert n_ingest + 3 <= len(partial) < len(reference), "the kill did not land midway"
    finished = {r["item_id"] for r in partial}

    log = tmp_path / "calls.jsonl"
    r = twist("run", *TOY, "-S", "delay=0.15", "-o", str(out), env={"TOY_LOG": str(log)})
    assert r.returncode == 0, r.stderr
    assert without_timing(items(folder)) == without_timing(reference)

    # No finished item was sent to the system again (ingest replays state; it is not an item).
    from toy_systems import KeywordToy

    from twistbench.tracks import TRACKS

    ds = demo_dataset()
    requests = {t.item_id: json.dumps(t.request) for tr in TRACKS.values()
                if tr.not_applicable(KeywordToy.capabilities, ds) is None
                for c in ds.conversations for t in tr.tasks(ds, c.id, KeywordToy.capabilities)}
    asked = [json.loads(x)["arg"] for x in log.read_text().splitlines()]
    asked = [a for a in asked if a and not a.startswith("demo-")]  # queries and drafts only
    for item_id in finished & set(requests):
        for a in asked:
            assert json.dumps(a)[1:-1] not in requests[item_id], f"{item_id} was asked again"


def test_faults_are_counted_and_fail_the_run(tmp_path):
    out = tmp_path / "runs"
    r = twist("run", "-d", "demo", "-s", "toy_systems:FaultyToy", "-S", "hang_s=2", "--timeout",
              "0.3", "--no-progress", "-o", str(out))
    assert r.returncode == 1
    assert "error rate" in r.stderr
    recs = items(out / "faulty-toy")
    errs = [x for x in recs if x["error"]]
    assert errs and all(x["output"] is None for x in errs)
    ok = twist("run", "-d", "demo", "-s", "toy_systems:FaultyToy", "-S", "hang_s=2", "--timeout",
               "0.3", "--no-progress", "-o", str(out), "--max-error-rate", "1")
    assert ok.returncode == 0, ok.stderr


def test_secrets_in_options_and_environment_never_reach_the_run_folder(tmp_path):
    out = tmp_path / "runs"
    r = twist("run", *TOY, "-S", "api_key=sk-test-SECRET-123", "-o", str(out),
              env={"OPENAI_API_KEY": "sk-env-SECRET-456"})
    assert r.returncode == 0, r.stderr
    for f in out.rglob("*"):
        if f.is_file():
            data = f.read_bytes()  # report plots are binary: compare bytes
            assert b"SECRET-123" not in data and b"SECRET-456" not in data, f


@pytest.mark.parametrize("args, needle", [
    (["run", "-d", "no-such-dataset"], "unknown dataset"),
    (["run", "-d", "demo", "-s", "no_such_module:X"], "no_such_module"),
    (["run", "-d", "demo", "-s", "toy_systems:KeywordToy", "-S", "colour=blue"], "colour"),
    (["run", "-d", "demo", "-s", "toy_systems:KeywordToy", "-t", "Z"], "unknown track"),
])
def test_bad_input_exits_2_with_a_clear_message_and_writes_nothing(tmp_path, args, needle):
    out = tmp_path / "runs"
    r = twist(*args, "-o", str(out))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert needle in r.stderr
    assert not any(p.is_file() for p in out.rglob("*")) if out.exists() else True


def test_malformed_key_file_names_record_and_field(tmp_path):
    from twistbench.datasets.keyfile import write_key

    doc = json.loads(demo_dataset().model_dump_json())
    doc["drafts"][1]["label"] = "maybe"
    key = tmp_path / "bad.json"
    write_key(key, "bad", "bad-1", doc)
    r = twist("run", "-d", str(key), "-s", "toy_systems:KeywordToy", "-o", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "bad.json" in r.stderr and "drafts.1.label" in r.stderr


def test_corrupt_run_file_is_a_clear_error(tmp_path):
    out = tmp_path / "runs"
    assert twist("run", *TOY, "-o", str(out)).returncode == 0
    f = out / "keyword-toy" / "items.jsonl"
    lines = f.read_text().splitlines()
    lines[2] = "{broken"
    f.write_text("\n".join(lines) + "\n")
    r = twist("report", str(out))
    assert r.returncode == 2 and "line 3" in r.stderr and "items.jsonl" in r.stderr


def test_conform_passes_a_good_system_and_fails_a_broken_one():
    r = twist("conform", "toy_systems:KeywordToy")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 failed" in r.stdout
    r = twist("conform", "toy_systems:FaultyToy", "-S", "hang_s=1", "--timeout", "0.3")
    assert r.returncode == 1 and "fail" in r.stdout


def test_trace_then_audit_from_the_command_line(tmp_path):
    for name in ("flat-rag", "fact-rag"):
        r = twist("trace", "-s", name, "-d", "demo", "-o", str(tmp_path / name))
        assert r.returncode == 0, r.stderr
        assert (tmp_path / name / "traces.jsonl").exists()
    r = twist("audit", str(tmp_path / "flat-rag"), str(tmp_path / "fact-rag"), "-o",
              str(tmp_path / "audit"), "--resamples", "100", "--profile")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "audit" / "audit.json").read_text())
    assert doc  # the JSON report exists and parses
    assert "Raw" in r.stdout and "Canonical" in r.stdout
    # --profile: one stderr line per stage, the report on stdout untouched
    stages = [ln for ln in r.stderr.splitlines() if ln.startswith("profile: ")]
    assert any(ln.startswith("profile: bootstrap: 100 resamples") for ln in stages)
    assert stages[-1].startswith("profile: render + print the report: ")
    assert all(ln.endswith(" s") for ln in stages) and "profile:" not in r.stdout
    bad = twist("audit", str(tmp_path / "nothing-here.jsonl"))
    assert bad.returncode == 2 and "nothing-here.jsonl" in bad.stderr


def test_every_command_option_and_argument_has_help_text():
    import click
    import typer.main

    from twistbench.cli import app

    missing = []

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
            return
        if not cmd.help:
            missing.append(" ".join(path))
        for p in cmd.params:
            if not getattr(p, "help", None):
                missing.append(f"{' '.join(path)} {p.name}")

    walk(typer.main.get_command(app), ["twist"])
    assert not missing, missing


def test_version():
    import twistbench

    r = twist("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"twistbench {twistbench.__version__}"


def test_both_builds_take_the_key_version_as_version_and_locomo_keeps_key_as_its_old_name():
    for corpus in ("cs", "locomo"):
        r = twist("build", corpus, "--help", env={"COLUMNS": "200"})
        assert r.returncode == 0 and "--version" in r.stdout, r.stdout
    assert "--key is its old name" in " ".join(r.stdout.split())


def test_labels_name_folders_and_rows_and_a_root_accumulates_in_run_order(tmp_path):
    out = tmp_path / "runs"
    r = twist("run", "-d", "demo", "-s", "toy_systems:KeywordToy", "-s", "toy_systems:KeywordToy",
              "--no-progress", "-o", str(out))
    assert r.returncode == 2 and "--label" in r.stderr  # one folder for two runs: refused
    r = twist("run", "-d", "demo", "-s", "toy_systems:KeywordToy", "--label", "kw strict",
              "--label", "extra", "--no-progress", "-o", str(out))
    assert r.returncode == 2 and "2 label(s) for 1 system(s)" in r.stderr
    r = twist("run", "-d", "demo", "-s", "toy_systems:KeywordToy", "-s", "flat-rag", "--label",
              "a", "--label", "a", "--no-progress", "-o", str(out))
    assert r.returncode == 2 and "label 'a' given twice" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = twist("run", "-d", "demo", "-s", "toy_systems:KeywordToy", "-s", "flat-rag", "--label",
              "kw a", "--label", "kw-a", "--no-progress", "-o", str(out))
    assert r.returncode == 2 and "share the run folder kw-a" in r.stderr  # before any run
    assert not out.exists() or not any(out.iterdir())  # nothing half-written
    r = twist("run", "-d", "demo", "-s", "toy_systems:KeywordToy", "--label", "zeta kw",
              "-t", "B", "--no-progress", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "zeta-kw" / "manifest.json").exists()  # the folder follows the label
    r = twist("run", "-d", "demo", "-s", "toy_systems:KeywordToy", "-t", "B", "--no-progress",
              "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "keyword-toy" / "manifest.json").exists()  # named like its row, not its spec
    # the second invocation's report still has the first one's run, first (run order, not
    # alphabetical)
    md = (out / "report.md").read_text()
    rows = [line.split("|")[1].strip() for line in md.splitlines()
            if line.startswith("| ") and not line.startswith("| System")]
    assert rows[:2] == ["zeta kw", "keyword-toy"]
    assert "intervals and every metric" in r.stdout and "report.html" in r.stdout
    # the profile fits 80 columns (lines naming long paths are paths)
    assert all(len(line) <= 80 for line in r.stdout.splitlines() if " -> " not in line)
    rep = twist("report", str(out), "--html", str(tmp_path / "r.html"), "--format", "json")
    assert rep.returncode == 0, rep.stderr
    data = json.loads(rep.stdout)
    assert [row["system"] for row in data["profiles"][0]["rows"]] == ["zeta kw", "keyword-toy"]
    assert (tmp_path / "r.html").read_text().count("<script type='application/json'") == 1
    named = twist("report", str(out / "keyword-toy"), str(out / "zeta-kw"), "--label", "a",
                  "--label", "b", "--format", "json")
    assert [row["system"] for row in json.loads(named.stdout)["profiles"][0]["rows"]] == [
        "a", "b"]  # the order given, with the names given
    # one label for two runs: refused in one line, not shown as "a (keyword-toy)", "a (zeta-kw)"
    same = twist("report", str(out / "keyword-toy"), str(out / "zeta-kw"), "--label", "a",
                 "--label", "a", "-o", str(tmp_path / "rep"), "--html", str(tmp_path / "s.html"))
    assert same.returncode == 2 and "label 'a' given twice" in same.stderr
    assert len(same.stderr.strip().splitlines()) == 1 and same.stdout == ""
    assert not (tmp_path / "rep").exists() and not (tmp_path / "s.html").exists()


def test_validate_shortcuts_prints_the_table_writes_json_and_exits_1_on_a_failing_gate(tmp_path):
    from synth_key import synthetic_key

    from twistbench.datasets.keyfile import write_key

    ds = synthetic_key("B.text")
    key = tmp_path / "planted.json"
    write_key(key, ds.name, ds.version, json.loads(ds.model_dump_json(exclude={"key_sha256"})))
    out = tmp_path / "gates.json"
    r = twist("validate", str(key), "--shortcuts", "--json", str(out), "--no-progress")
    assert r.returncode == 1, r.stderr
    assert "Shortcut audit" in r.stdout and "B.text" in r.stdout and "FAIL" in r.stdout
    rep = json.loads(out.read_text())
    failed = [c["id"] for c in rep["checks"] if c["passed"] is False]
    assert failed == ["B.text"]
    assert not (tmp_path / "runs").exists()  # --shortcuts runs no reference system


def test_validate_shortcuts_passes_when_nothing_can_be_gated(tmp_path):
    out = tmp_path / "demo.json"
    r = twist("validate", "demo", "--shortcuts", "--json", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["dataset"] == "demo"


def test_a_missing_validate_extra_is_one_line_exit_2_and_nothing_written(tmp_path):
    # scikit-learn hidden from the import system, as when the `validate` extra is not installed
    out = tmp_path / "k.json"
    code = ("import sys; sys.modules['sklearn'] = None; from twistbench.cli import main; "
            f"sys.argv = ['twist', 'build', 'cs', '-o', {str(out)!r}]; main()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=_env(None), timeout=300)
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: the shortcut audit needs scikit-learn: pip install "
                                "'twistbench[validate]'")
    assert list(tmp_path.iterdir()) == []
