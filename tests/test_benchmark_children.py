"""The child processes of the benchmarks and scripts import the twistbench of their own tree.

benchmarks/working_tree.py builds a child's environment: this tree's `src/` first on
PYTHONPATH as an absolute path, so that a child running in another folder does not fall back
to the installed twistbench (another checkout's code, measured silently). Checked here: the
environment it builds, a real child in another folder importing this tree's code from it, the
stop when the parent itself imported another twistbench, and that every benchmark and script
that starts a Python child passes such an environment."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT_FOLDERS = (ROOT / "benchmarks", ROOT / "scripts")


def _working_tree() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("working_tree",
                                                  ROOT / "benchmarks" / "working_tree.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tree_src_goes_first_and_every_entry_becomes_absolute(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wt = _working_tree()
    assert wt.SRC == ROOT / "src"
    monkeypatch.chdir(tmp_path)  # the relative entries are resolved against the parent's cwd
    other = tmp_path / "elsewhere"
    base = {"PYTHONPATH": os.pathsep.join(["lib", "", str(other), "lib", str(wt.SRC)]),
            "KEPT": "1"}
    env = wt.child_env(base=base, TWIST_EXTRA="x")
    assert env["PYTHONPATH"].split(os.pathsep) == [str(wt.SRC), str(tmp_path / "lib"),
                                                   str(other)]
    assert env["KEPT"] == "1" and env["TWIST_EXTRA"] == "x"
    assert base["PYTHONPATH"].startswith("lib")  # the caller's mapping is left as it was
    ref = tmp_path / "ref" / "src"  # another code (a reference commit's): first instead
    assert wt.child_env(ref, base={})["PYTHONPATH"] == str(ref)


def test_a_child_in_another_folder_imports_this_tree_with_a_relative_pythonpath(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The defect: PYTHONPATH=src inherited by a child that runs in another folder."""
    wt = _working_tree()
    monkeypatch.chdir(ROOT)
    env = wt.child_env(base={**os.environ, "PYTHONPATH": "src"})
    found = subprocess.run([sys.executable, "-c", "import twistbench; print(twistbench.__file__)"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert Path(found.stdout.strip()) == wt.SRC / "twistbench" / "__init__.py"


def test_a_parent_that_imported_another_twistbench_is_stopped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wt = _working_tree()
    elsewhere = types.ModuleType("twistbench")
    elsewhere.__file__ = str(tmp_path / "other" / "src" / "twistbench" / "__init__.py")
    monkeypatch.setitem(sys.modules, "twistbench", elsewhere)
    with pytest.raises(SystemExit, match="imported twistbench from .*other.*PYTHONPATH="):
        wt.child_env()
    with pytest.raises(SystemExit, match="other"):
        wt.require_tree_code()
    wt.child_env(tmp_path / "other" / "src")  # that code's own children: no conflict


SUBPROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}


def _python_children_without_env(tree: ast.AST) -> list[int]:
    """Lines of subprocess calls that pass no env= although their command may be Python: any
    command but a literal list naming another program first ("git", "tar")."""
    lines = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "subprocess"
                and node.func.attr in SUBPROCESS_CALLS):
            continue
        if any(kw.arg == "env" for kw in node.keywords):
            continue
        cmd = node.args[0] if node.args else None
        other_program = (isinstance(cmd, ast.List) and cmd.elts
                         and isinstance(cmd.elts[0], ast.Constant)
                         and isinstance(cmd.elts[0].value, str))
        if not other_program:
            lines.append(node.lineno)
    return lines


def test_every_benchmark_and_script_that_starts_a_child_uses_working_tree() -> None:
    scripts = sorted(p for folder in SCRIPT_FOLDERS for p in folder.glob("*.py"))
    assert len(scripts) > 10
    starters, problems = [], []
    for path in scripts:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.Import) for alias in node.names}
        imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)}
        if not imported & {"subprocess", "multiprocessing"}:
            continue
        starters.append(path.name)
        if "working_tree" not in imported:
            problems.append(f"{path.name}: starts a child, does not import working_tree")
        problems += [f"{path.name}:{line}: a child started without env=child_env(...)"
                     for line in _python_children_without_env(tree)]
    assert "bench_rescore_memory.py" in starters and "e2e_llm_roles.py" in starters
    assert problems == []
