"""Start-up of the `twist` command: what every verb pays before it does anything.

Each figure is the wall time of a fresh child process (this interpreter, PYTHONPATH set to the
source folder measured, absolute: working_tree.child_env), --repeats times, median and fastest:
  python -c pass                      the reference: the interpreter alone, same process setup;
  python -c "import twistbench.cli"   loading the CLI module (typer, rich, what it imports);
  twist --help                        the console script beside this interpreter (else
                                      `python -m twistbench.cli --help`), the whole command line
                                      built and printed.
Then the ratio of each median to the reference's, and the top-level packages outside the
standard library that `import twistbench.cli` loads (a child's sys.modules).

--src DIR measures another copy of the source (e.g. an older commit exported with
`git archive COMMIT src | tar -x -C /tmp/old`), so a before and an after run side by side:
`--src src --src /tmp/old/src`. The children run one after another, alternating between the
copies, so machine load falls on both alike.

Run: PYTHONPATH=src .venv/bin/python benchmarks/bench_startup.py [--repeats 9] [--src DIR]...
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from working_tree import SRC, child_env

# the top-level packages outside the standard library that `import twistbench.cli` loads
LOADED = ("import sys, twistbench.cli; print(' '.join(sorted({m.split('.')[0] for m in "
          "sys.modules} - set(sys.stdlib_module_names) - {'__main__'})))")


def commands() -> dict[str, list[str]]:
    script = Path(sys.executable).with_name("twist")
    help_cmd = [str(script), "--help"] if script.exists() else [
        sys.executable, "-m", "twistbench.cli", "--help"]
    return {"python -c pass (reference)": [sys.executable, "-c", "pass"],
            "import twistbench.cli": [sys.executable, "-c", "import twistbench.cli"],
            "twist --help": help_cmd}


def env_for(src: Path) -> dict[str, str]:
    """The measured source alone on PYTHONPATH (absolute): nothing inherited in the search."""
    return child_env(src, base={**os.environ, "PYTHONPATH": ""})


def wall(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--src", type=Path, action="append",
                    help="a source folder to measure (repeatable; default: this checkout's src)")
    args = ap.parse_args()
    sources = args.src or [SRC]
    cmds = commands()
    times: dict[tuple[Path, str], list[float]] = {(s, c): [] for s in sources for c in cmds}
    for src in sources:  # warm the file cache and the .pyc files first
        for cmd in cmds.values():
            wall(cmd, env_for(src))
    for _ in range(args.repeats):
        for src in sources:
            for name, cmd in cmds.items():
                times[(src, name)].append(wall(cmd, env_for(src)))
    print(f"{args.repeats} runs each, load average now {os.getloadavg()[0]:.2f}")
    for src in sources:
        print(f"\nsource {src}")
        reference = statistics.median(times[(src, next(iter(cmds)))])
        for name in cmds:
            runs = times[(src, name)]
            med = statistics.median(runs)
            print(f"  {name:28} median {med * 1000:7.1f} ms  fastest {min(runs) * 1000:7.1f} ms"
                  f"  x{med / reference:5.2f} of the reference")
        loaded = subprocess.run([sys.executable, "-c", LOADED], env=env_for(src), check=True,
                                capture_output=True, text=True).stdout.split()
        print(f"  import twistbench.cli loads {len(loaded)} packages beyond the standard "
              f"library: {' '.join(loaded)}")


if __name__ == "__main__":
    main()
