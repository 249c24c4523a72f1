"""The audit's temporary folder (.twist-audit-* beside its output): a killed audit's is removed
by the next audit there, and said on the console; a live audit's is kept (audit/scratch.py).

The folders are made by real child processes through scratch_folder, one killed (SIGKILL: no
clean-up runs) and one still running; the next audit goes through `audit` and `twist audit`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_stream import _files

import twistbench
from twistbench.audit import core
from twistbench.audit.scratch import OWNER, PREFIX, UNOWNED_AGE_S, remove_dead
from twistbench.errors import InputError

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the live check is flock(2): POSIX")

SRC = Path(twistbench.__file__).resolve().parent.parent
HOLD = ("import sys; from twistbench.audit.scratch import scratch_folder\n"
        "with scratch_folder(sys.argv[1]) as folder:\n"
        "    print(folder, flush=True)\n"
        "    sys.stdin.readline()\n")


def _holder(out_dir: Path) -> tuple[subprocess.Popen, Path]:
    """A child process holding a scratch folder beside `out_dir` until its stdin closes."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get(
        "PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(out_dir)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    folder = Path(proc.stdout.readline().strip())
    assert folder.parent == out_dir.parent and (folder / OWNER).is_file(), folder
    return proc, folder


def _killed(out_dir: Path) -> tuple[int, Path]:
    """The folder a killed audit leaves: (its pid, the folder)."""
    proc, folder = _holder(out_dir)
    _kill(proc)
    (folder / "0.txt").write_text("q1 Q0 m1 1 60 run\n")  # a half-written TREC run
    return proc.pid, folder


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL: no clean-up of its own runs (its pipes closed here)."""
    proc.kill()
    proc.communicate()


def _unowned(parent: Path, name: str, age_s: float) -> Path:
    """A folder without owner.json (an audit of an earlier version) last changed age_s ago."""
    folder = parent / name
    folder.mkdir()
    (folder / "0.txt").write_text("x\n")
    then = time.time() - age_s
    for p in (folder / "0.txt", folder):
        os.utime(p, (then, then))
    return folder


def test_the_next_audit_removes_what_a_killed_one_left_and_keeps_a_live_ones(
        tmp_path: Path) -> None:
    inputs, work = tmp_path / "inputs", tmp_path / "work"
    inputs.mkdir()
    work.mkdir()
    tp, lp, gp = _files(inputs)
    out = work / "audit"
    live, kept = _holder(out)  # first: a holder starting removes the dead folders there too
    try:
        pid, dead = _killed(out)
        old = _unowned(work, PREFIX + "old", UNOWNED_AGE_S + 3600)
        young = _unowned(work, PREFIX + "young", 60)  # may be a live audit of an older version
        others = [work / "twist-audit-x", work / ".twist-auditx"]  # not this exact prefix
        for o in others:
            o.mkdir()
        (work / (PREFIX + "file")).write_text("not a folder\n")
        garbled = work / (PREFIX + "garbled")  # unlocked: dead, whatever the file says
        garbled.mkdir()
        (garbled / OWNER).write_text("{not json\n")
        odd = work / (PREFIX + "odd")  # owner.json a folder: no lock to judge by, kept
        (odd / OWNER).mkdir(parents=True)
        elsewhere = _unowned(tmp_path, PREFIX + "target", UNOWNED_AGE_S + 3600)
        (work / (PREFIX + "link")).symlink_to(elsewhere, target_is_directory=True)

        notes: list[str] = []
        res = core.audit([tp], lp, gp, out, names=["a"], n_resamples=20, on_note=notes.append)

        assert not dead.exists() and not old.exists() and not garbled.exists()
        assert kept.is_dir() and (kept / OWNER).is_file() and young.is_dir() and odd.is_dir()
        assert all(o.is_dir() for o in others) and (work / (PREFIX + "file")).is_file()
        assert elsewhere.is_dir() and (work / (PREFIX + "link")).is_symlink()  # not followed
        assert len(notes) == 3, notes
        by_folder = {n.split(",")[0]: n for n in notes}
        assert "an audit whose owner file is unreadable" in by_folder[f"removed {garbled}"]
        assert f"pid {pid} on host" in by_folder[f"removed {dead}"]
        assert "which ended without removing it" in by_folder[f"removed {dead}"]
        assert "no owner recorded, nothing changed in it for 25 h" in by_folder[f"removed {old}"]
        # the audit itself: written whole, its own folder gone, no owner file among the outputs
        assert res.files and (out / "audit.json").is_file() and (out / "trec/a/run.txt").is_file()
        assert not list(out.rglob(OWNER + "*"))
        assert sorted(p.name for p in work.glob(PREFIX + "*")) == sorted(
            [kept.name, young.name, odd.name, PREFIX + "file", PREFIX + "link"])
    finally:
        _kill(live)
    # killed too now: the next look removes it, and only it
    lines = remove_dead(work)
    assert len(lines) == 1 and lines[0].startswith(f"removed {kept}, "), lines
    assert f"pid {live.pid} on host" in lines[0]
    assert not kept.exists() and young.is_dir()


def test_an_audit_that_ends_normally_or_on_bad_input_leaves_no_folder(tmp_path: Path) -> None:
    tp, lp, gp = _files(tmp_path)
    notes: list[str] = []
    core.audit([tp], lp, gp, tmp_path / "ok", names=["a"], n_resamples=20, on_note=notes.append)
    with pytest.raises(InputError, match="unknown run"):  # found after the folder was made
        core.audit([tp], lp, gp, tmp_path / "bad", names=["a"], n_resamples=20,
                   groups={"g": ["a", "nope"]}, on_note=notes.append)
    assert not (tmp_path / "bad").exists()  # nothing half-written
    assert not list(tmp_path.glob(PREFIX + "*")) and notes == []


def test_twist_audit_says_what_it_removed(tmp_path: Path) -> None:
    tp, lp, gp = _files(tmp_path)
    out = tmp_path / "audit"
    pid, dead = _killed(out)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get(
        "PYTHONPATH", "")]), "COLUMNS": "400"}
    r = subprocess.run([sys.executable, "-m", "twistbench.cli", "audit", str(tp), "--lineage",
                        str(lp), "--gold", str(gp), "-o", str(out), "--resamples", "20"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    notes = [ln for ln in r.stderr.splitlines() if ln.startswith("note: ")]
    assert len(notes) == 1 and notes[0].startswith(f"note: removed {dead}, ")
    assert f"pid {pid} on host" in notes[0] and not dead.exists()
    assert (out / "audit.json").is_file() and not list(tmp_path.glob(PREFIX + "*"))
