"""`twist build` runs the shortcut audit on the key it is about to write: a failing key is not
written unless --allow-failing-gates, and then its failures are recorded (in the key's metadata
from version 2.0, beside a 1.0 key so that its released bytes stay reproducible)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from twistbench.cli import app
from twistbench.datasets.twist_cs import load_cs_dataset
from twistbench.datasets.twist_locomo import load_locomo_dataset
from twistbench.itemgen import cs2
from twistbench.itemgen import cs_workspace as cs
from twistbench.itemgen import locomo_inject as li
from twistbench.itemgen.gate import KeyGate
from twistbench.validation import shortcuts
from twistbench.validation.features import injected_turns
from twistbench.validation.report import GateReport, ShortcutCheck

REPO = Path(__file__).resolve().parents[2]


def canned(passed: bool):
    """A stand-in for run_gates (the wiring is under test here, not the battery): one check."""
    calls = []

    def run_gates(dataset, **kw):
        calls.append(dataset)
        check = ShortcutCheck(id="B.text", title="t", metric="balanced accuracy (folded)",
                              value=0.98 if not passed else 0.5, gate="<= 0.60", threshold=0.6,
                              passed=passed, best="logistic regression on word 1-2-grams")
        return GateReport(dataset=dataset.name, version=dataset.version, key_sha256="",
                          split="leave one conversation out", seed=0, checks=[check])

    run_gates.calls = calls
    return run_gates


def test_cs_build_refuses_a_failing_key_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(shortcuts, "run_gates", canned(False))
    out = tmp_path / "k.json"
    with pytest.raises(shortcuts.GatesFailed, match="B.text 0.980"):
        cs.run_build_cs(out=out, gate=shortcuts.BuildGate())
    assert list(tmp_path.iterdir()) == []


def test_cli_build_exits_1_and_names_the_failing_gate(tmp_path, monkeypatch):
    monkeypatch.setattr(shortcuts, "run_gates", canned(False))
    r = CliRunner().invoke(app, ["build", "cs", "--out", str(tmp_path / "k.json")])
    assert r.exit_code == 1
    assert "not written" in r.output and "B.text" in r.output
    assert list(tmp_path.iterdir()) == []


def test_a_2_0_key_records_its_gates_in_its_metadata(tmp_path, monkeypatch):
    gates = canned(False)
    monkeypatch.setattr(shortcuts, "run_gates", gates)
    monkeypatch.setattr(cs, "VERSION", "twist-cs-2.0")
    out = tmp_path / "k.json"
    cs.run_build_cs(out=out, gate=shortcuts.BuildGate(allow_failing=True))
    ds = load_cs_dataset(out)
    assert ds.version == "twist-cs-2.0" and gates.calls[0].version == "twist-cs-2.0"
    assert ds.meta["gates"]["failures"] == ["B.text"]
    assert ds.meta["gates"]["checks"]["B.text"] == {
        "value": 0.98, "gate": "<= 0.60", "passed": False,
        "best": "logistic regression on word 1-2-grams"}
    assert not shortcuts.gates_sidecar(out).exists()


@pytest.mark.slow
def test_cs_1_0_build_with_failing_gates_allowed_reproduces_the_released_bytes(tmp_path):
    # The real battery on the real key: TWIST-CS 1.0 fails several gates (issue 11), so the
    # build writes only with --allow-failing-gates, byte for byte the committed key, and the
    # results go beside it.
    out = tmp_path / "twist-cs-1.0.json"
    r = subprocess.run([sys.executable, "-m", "twistbench.cli", "build", "cs", "--version", "1.0",
                        "--out", str(out), "--allow-failing-gates"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == (REPO / "data" / "twist-cs-1.0.json").read_bytes()
    side = json.loads(shortcuts.gates_sidecar(out).read_text())
    failed = {c["id"] for c in side["checks"] if c["passed"] is False}
    assert {"B.text", "find.items", "D.masking", "surface.duplicates"} <= failed
    assert "Shortcut audit" in r.stdout


@pytest.mark.slow
def test_cs_2_0_build_passes_every_gate_and_reproduces_the_committed_bytes(tmp_path):
    # The real battery on TWIST-CS 2.0 (the default of `twist build cs`): every gate passes, so
    # it is written without --allow-failing-gates, byte for byte the committed key (its meta
    # holds the results just measured), and nothing goes beside it.
    out = tmp_path / "twist-cs-2.0.json"
    r = subprocess.run([sys.executable, "-m", "twistbench.cli", "build", "cs", "--out", str(out)],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == (REPO / "data" / "twist-cs-2.0.json").read_bytes()
    assert not shortcuts.gates_sidecar(out).exists()
    assert "Shortcut audit" in r.stdout and "differ from the record" not in r.stdout


def test_cs_2_0_build_refuses_a_failing_key_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(shortcuts, "run_gates", canned(False))
    with pytest.raises(shortcuts.GatesFailed, match="B.text 0.980"):
        cs2.run_build(out=tmp_path / "k.json", gate=shortcuts.BuildGate())
    assert list(tmp_path.iterdir()) == []


def test_locomo_build_refuses_then_reproduces_1_0_bytes_then_records_2_0(
        tmp_path, monkeypatch, locomo_path):
    gates = canned(False)
    monkeypatch.setattr(shortcuts, "run_gates", gates)
    out = tmp_path / "twist-locomo-1.0.json"
    with pytest.raises(shortcuts.GatesFailed):
        li.write_locomo_key(out, locomo_path, gate=shortcuts.BuildGate())
    assert list(tmp_path.iterdir()) == []
    # the audited dataset is the key applied to LoCoMo: injected turns flagged, gold in place
    audited = gates.calls[0]
    assert audited.counts()["drafts"] == 200
    assert sum(e.meta.get("injected") is True for c in audited.conversations
               for e in c.events) == 688
    gate = shortcuts.BuildGate(allow_failing=True)
    li.write_locomo_key(out, locomo_path, gate=gate)
    assert out.read_bytes() == (REPO / "data" / "twist-locomo-1.0.json").read_bytes()
    assert gate.report.failures()[0].id == "B.text"
    assert json.loads(shortcuts.gates_sidecar(out).read_text())["version"] == "twist-locomo-1.0"


def test_locomo_2_0_build_goes_through_the_same_gate_and_records_it(
        tmp_path, monkeypatch, locomo_path):
    from twistbench.itemgen import locomo2

    gates = canned(False)
    monkeypatch.setattr(shortcuts, "run_gates", gates)
    out = tmp_path / "twist-locomo-2.0.json"
    with pytest.raises(shortcuts.GatesFailed):
        locomo2.write_locomo2_key(out, locomo_path, gate=shortcuts.BuildGate())
    assert list(tmp_path.iterdir()) == []
    # the audited dataset is the 2.0 key applied to LoCoMo: which turns are ours is in
    # Dataset.meta only (no event says so), and the audit reads it from there
    audited = gates.calls[0]
    assert audited.version == "twist-locomo-2.0"
    assert not any("injected" in e.meta for c in audited.conversations for e in c.events)
    ours = injected_turns(audited)
    assert len(ours) == sum(len(v) for v in audited.meta["injected_turns"].values()) > 0
    locomo2.write_locomo2_key(out, locomo_path, gate=shortcuts.BuildGate(allow_failing=True))
    ds = load_locomo_dataset(locomo_path, key_path=out)
    assert ds.version == "twist-locomo-2.0" and ds.meta["gates"]["failures"] == ["B.text"]
    assert not shortcuts.gates_sidecar(out).exists()
    # a partial key (one conversation) is not gated: leave-one-conversation-out needs the rest
    part = tmp_path / "part.json"
    locomo2.write_locomo2_key(part, locomo_path, conversations=["conv-26"],
                              gate=shortcuts.BuildGate())
    assert len(gates.calls) == 2 and "meta" not in json.loads(part.read_text())["payload"]


def test_a_passing_key_is_written_without_asking(tmp_path, monkeypatch):
    monkeypatch.setattr(shortcuts, "run_gates", canned(True))
    out = tmp_path / "k.json"
    digest, _ = cs.run_build_cs(out=out, gate=shortcuts.BuildGate())
    assert out.exists() and shortcuts.gates_sidecar(out).exists()
    assert digest == (REPO / "data" / "twist-cs-1.0.json.sha256").read_text().split()[0]


def test_the_shortcut_audit_is_a_key_gate_and_a_build_without_one_writes_no_sidecar(
        tmp_path, monkeypatch):
    # itemgen may not import validation (ARCHITECTURE.md): the CLI hands it the audit
    gates = canned(False)
    monkeypatch.setattr(shortcuts, "run_gates", gates)
    assert isinstance(shortcuts.BuildGate(), KeyGate)
    out = tmp_path / "k.json"
    cs.run_build_cs(out=out)
    assert gates.calls == [] and sorted(p.name for p in tmp_path.iterdir()) == [
        "k.json", "k.json.sha256"]
