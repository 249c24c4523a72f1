"""What every `twist` verb pays before it runs: the modules loading the CLI brings in.

A behaviour, not a time (benchmarks/bench_startup.py measures the time): a fresh child's
sys.modules after `import twistbench.cli`, after `twist --help`, and after a verb, which shows
that the check sees the layers a verb imports when it runs.
"""

from __future__ import annotations

import json
import subprocess
import sys

# Heavy or verb-specific dependencies: each loads when a verb needs it (numpy, pydantic and the
# HTTP client with most verbs; the others lazily in the modules that use them).
NOT_AT_START_UP = ("numpy", "pydantic", "httpx", "orjson", "sqlite3", "multiprocessing",
                   "matplotlib", "sklearn", "onnxruntime", "tokenizers", "pyarrow", "bm25s",
                   "presidio_analyzer", "spacy", "nltk")
# What the CLI module needs to build the command line: option defaults, the secret redactor,
# the paths of the committed keys, InputError.
OURS_AT_START_UP = {"twistbench", "twistbench.cli", "twistbench.defaults", "twistbench.errors",
                    "twistbench.sanitize", "twistbench.datasets", "twistbench.datasets.paths"}


def modules_after(code: str) -> set[str]:
    """sys.modules of a fresh interpreter after running `code` (its stdout is discarded)."""
    probe = (f"import contextlib, io, json, sys\nwith contextlib.redirect_stdout(io.StringIO()):"
             f"\n    {code}\nprint(json.dumps(sorted(sys.modules)))")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout.splitlines()[-1]))


def heavy(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules} & set(NOT_AT_START_UP)


def ours(modules: set[str]) -> set[str]:
    return {m for m in modules if m == "twistbench" or m.startswith("twistbench.")}


def test_importing_the_cli_loads_no_verb_layer_and_no_heavy_dependency():
    loaded = modules_after("import twistbench.cli")
    assert heavy(loaded) == set()
    assert ours(loaded) == OURS_AT_START_UP


def test_help_builds_every_command_without_them():
    loaded = modules_after("from twistbench.cli import run_cli; assert run_cli(['--help']) == 0")
    assert heavy(loaded) == set()
    assert ours(loaded) == OURS_AT_START_UP


def test_a_verb_loads_its_layers_when_it_runs():
    # `twist list` reads the dataset, system and track tables: they, and pydantic under them,
    # come in with the verb (the probe above would see a module-level import the same way)
    loaded = modules_after("from twistbench.cli import run_cli; assert run_cli(['list']) == 0")
    assert {"twistbench.datasets.registry", "twistbench.systems",
            "twistbench.tracks"} <= ours(loaded)
    assert "pydantic" in heavy(loaded)
