"""The twistbench a benchmark's child processes import: the code of the tree this file is in.

A child started with the parent's environment inherits PYTHONPATH as written, and the Run lines
say `PYTHONPATH=src` (relative): a child that runs in another folder then misses it and imports
the installed twistbench, which may be another checkout's code, and the benchmark silently
measures that. `child_env()` gives a child `src/` as an absolute path, first on PYTHONPATH, and
the inherited entries made absolute against this process's folder, so the child imports what
the parent meant whatever its cwd (a console script such as `twist` reads PYTHONPATH too).
A multiprocessing "spawn" child copies the parent's sys.path, so it imports what the parent
did: `require_tree_code()` checks that this is the tree's code.

Used by the benchmarks that start a child (`from working_tree import child_env`: a script's
folder is first on sys.path); tests/test_benchmark_children.py checks that every benchmark and
script starting one does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def pythonpath_with(src: Path, inherited: str | None) -> str:
    """PYTHONPATH with `src` (absolute) first, then the inherited entries, each absolute
    (resolved against this process's cwd), empty entries and repeats dropped."""
    entries = [str(Path(src).resolve())]
    for entry in (inherited or "").split(os.pathsep):
        if entry and str(Path(entry).resolve()) not in entries:
            entries.append(str(Path(entry).resolve()))
    return os.pathsep.join(entries)


def imported_from() -> Path | None:
    """The `src/` folder this process's twistbench was imported from (None: not imported)."""
    module = sys.modules.get("twistbench")
    if module is None or module.__file__ is None:
        return None
    return Path(module.__file__).resolve().parent.parent


def require_tree_code() -> None:
    """Stop when this process imported a twistbench other than this tree's: its figures would
    mix two codes (its own and its children's), or measure another tree's."""
    found = imported_from()
    if found is not None and found != SRC:
        raise SystemExit(f"this benchmark imported twistbench from {found}, not from this tree's "
                         f"{SRC}: run it with PYTHONPATH={SRC}")


def child_env(src: Path = SRC, base: Mapping[str, str] | None = None,
              **extra: str) -> dict[str, str]:
    """The environment of a child that must import the twistbench of `src` (default: this
    tree's): `base` (default os.environ) and `extra`, PYTHONPATH as pythonpath_with() makes it.
    For this tree's code, a parent that itself imported another twistbench is stopped first
    (require_tree_code)."""
    if Path(src).resolve() == SRC:
        require_tree_code()
    env = {**(os.environ if base is None else base), **extra}
    env["PYTHONPATH"] = pythonpath_with(src, env.get("PYTHONPATH"))
    return env
