"""The layering of ARCHITECTURE.md, checked on the import graph built from the source (ast).

Every import counts, wherever it sits: module level, inside a function, under TYPE_CHECKING. A
component is a top-level module or package of twistbench (`model`, `datasets`, `tracks`...).
The checks are written against a graph given as data, so the synthetic graphs below show that
each one can fail.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "twistbench"
ROOT = "twistbench"

# What each component may import (besides itself). ARCHITECTURE.md says the same in prose; a new
# component must be added here, with its place in the layers.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "model": set(),
    "sanitize": set(),
    "stats": {"defaults"},
    "sqlite_wal": set(),
    "defaults": set(),
    "contract": {"model"},
    "wire": {"model", "contract", "sanitize"},
    "plugins": {"errors"},
    "records": {"errors", "model"},
    "datasets": {"errors", "model"},
    "retrieval": {"errors", "model", "sqlite_wal"},
    "llm": {"errors", "model", "sqlite_wal"},
    "answerers": {"errors", "model", "plugins", "llm", "defaults"},
    "judges": {"errors", "model", "plugins", "stats", "llm", "defaults"},
    "tracks": {"errors", "model", "contract", "records", "stats", "judges"},
    "systems": {"errors", "model", "contract", "plugins", "retrieval", "llm", "answerers", "wire",
                "sanitize"},
    "report": {"errors", "model", "contract", "records", "stats", "datasets", "judges",
               "tracks", "sanitize"},
    "runs": {ROOT, "errors", "model", "contract", "records", "datasets", "llm", "answerers",
             "judges", "tracks", "sanitize", "wire", "defaults"},
    "audit": {"errors", "model", "contract", "records", "stats", "datasets", "retrieval", "llm",
              "runs", "sanitize"},
    "itemgen": {"errors", "model", "datasets", "judges", "llm"},
    "annotate": {"errors", "model", "stats", "datasets", "defaults"},
    "validation": {"errors", "model", "contract", "records", "stats", "datasets", "retrieval",
                   "llm", "answerers", "judges", "tracks", "systems", "report", "runs", "audit",
                   "itemgen", "sanitize"},
    "cli": {ROOT, "errors", "model", "contract", "records", "stats", "datasets", "retrieval",
            "llm", "answerers", "judges", "tracks", "systems", "report", "runs", "audit",
            "itemgen", "validation", "plugins", "annotate", "sanitize", "wire", "defaults"},
}
SCORING = ("tracks", "judges", "report")


@dataclass(frozen=True)
class Import:
    source: str  # importing module, e.g. "twistbench.tracks.base"
    target: str  # imported module of ours
    line: int
    in_function: bool


def module_name(path: Path, package_dir: Path = SRC) -> str:
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules(package_dir: Path = SRC) -> dict[str, Path]:
    return {module_name(p, package_dir): p for p in sorted(package_dir.rglob("*.py"))}


def _resolve(name: str, known: Iterable[str]) -> str | None:
    """The longest known module that `name` (a module or module.attribute) lies in."""
    known = set(known)
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, known: set[str]) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_func: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_func.update(id(sub) for sub in ast.walk(node)
                           if isinstance(sub, (ast.Import, ast.ImportFrom)))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[Import] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            names = [f"{base}.{a.name}" for a in node.names] or [base]
        for name in names:
            if name.split(".")[0] != ROOT:
                continue
            target = _resolve(name, known)
            if target and target != module:
                out.append(Import(module, target, node.lineno, id(node) in in_func))
    return out


def import_graph() -> tuple[dict[str, set[str]], list[Import]]:
    mods = modules()
    known = set(mods)
    edges = [imp for m, p in mods.items() for imp in imports_of(m, p, known)]
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for imp in edges:
        graph[imp.source].add(imp.target)
    return graph, edges


def component(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def component_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for src, targets in graph.items():
        c = component(src)
        out.setdefault(c, set())
        for t in targets:
            if component(t) != c:
                out[c].add(component(t))
    return out


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node, or a node importing itself
    (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    nodes = set(graph) | {t for ts in graph.values() for t in ts}
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                scc = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    scc.append(n)
                    if n == node:
                        break
                if len(scc) > 1 or node in graph.get(node, ()):
                    found.append(sorted(scc))
    return found


def reachable(graph: Mapping[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        n = todo.pop()
        for t in graph.get(n, ()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def layer_violations(comp_graph: Mapping[str, set[str]],
                     allowed: Mapping[str, set[str]]) -> list[str]:
    out = []
    for comp, targets in sorted(comp_graph.items()):
        if comp == ROOT:
            continue
        if comp not in allowed:
            out.append(f"{comp}: not placed in the layers (ALLOWED / ARCHITECTURE.md)")
            continue
        for t in sorted(targets - allowed[comp]):
            out.append(f"{comp} imports {t}")
    return out


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, set[str]], list[Import]]:
    return import_graph()


# --- the checks on the real source -----------------------------------------------------------


def test_the_graph_is_built_from_the_source(graph):
    g, edges = graph
    assert "twistbench.cli" in g and "twistbench.datasets.registry" in g
    assert "twistbench.model" in g["twistbench.datasets.registry"]
    assert any(e.in_function for e in edges)  # in-function imports are seen


def test_no_import_cycle_between_modules(graph):
    assert cycles(graph[0]) == []


def test_no_import_cycle_between_packages(graph):
    assert cycles(component_graph(graph[0])) == []


def test_every_component_imports_only_what_its_layer_allows(graph):
    assert layer_violations(component_graph(graph[0]), ALLOWED) == []


def test_nothing_imports_the_cli(graph):
    assert [e for e in graph[1] if e.target == "twistbench.cli"] == []


def test_scoring_never_reaches_the_runner(graph):
    comps = component_graph(graph[0])
    for scoring in SCORING:
        assert "runs" not in reachable(comps, scoring) | {scoring}, scoring


def test_datasets_import_only_model_and_errors(graph):
    bad = [e for e in graph[1] if component(e.source) == "datasets"
           and component(e.target) not in ("datasets", "model", "errors")]
    assert bad == []


def test_model_and_errors_import_nothing_of_ours_and_contract_only_model(graph):
    g = graph[0]
    assert g["twistbench.model"] == set() and g["twistbench.errors"] == set()
    assert g["twistbench.contract"] <= {"twistbench.model"}


def test_item_generators_load_only_for_build_and_validate(graph):
    users = {e for e in graph[1] if component(e.target) == "itemgen"
             and component(e.source) != "itemgen"}
    assert {component(e.source) for e in users} <= {"cli", "validation"}
    # in the CLI only inside the `twist build` verbs, never when the CLI module loads
    assert all(e.in_function for e in users if component(e.source) == "cli")


def uncommented_lazy_imports(mods: Mapping[str, Path]) -> list[str]:
    """In-function imports without a comment on their line or on the line above them (an import
    directly below a commented one shares its comment)."""
    missing = []
    for mod, path in mods.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            imps = sorted((s for s in ast.walk(node)
                           if isinstance(s, (ast.Import, ast.ImportFrom))),
                          key=lambda s: s.lineno)
            ends = {s.end_lineno: s for s in imps}
            for imp in imps:
                if "#" in lines[imp.lineno - 1]:
                    continue
                above = imp.lineno - 1
                while above in ends:  # part of an import block: look above the block
                    above = ends[above].lineno - 1
                if above >= 1 and lines[above - 1].strip().startswith("#"):
                    continue
                missing.append(f"{mod}:{imp.lineno}")
    return missing


def test_every_in_function_import_says_why():
    """An import inside a function is a lazy import of a heavy dependency, and says so."""
    assert uncommented_lazy_imports(modules()) == []


# --- the checks can fail: synthetic graphs -----------------------------------------------------


def test_a_synthetic_cycle_is_found():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]
    assert cycles({"a": {"a"}}) == [["a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_a_cycle_hidden_in_a_function_is_a_cycle(tmp_path):
    pkg = tmp_path / "twistbench"
    (pkg / "tracks").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "runs.py").write_text("from twistbench.tracks import base\n")
    (pkg / "tracks" / "__init__.py").write_text("")
    (pkg / "tracks" / "base.py").write_text(
        "def f():\n    from twistbench.runs import g  # lazy\n    return g\n")
    mods = modules(pkg)
    edges = [imp for m, p in mods.items() for imp in imports_of(m, p, set(mods))]
    g = {m: {e.target for e in edges if e.source == m} for m in mods}
    assert cycles(g) == [["twistbench.runs", "twistbench.tracks.base"]]
    assert cycles(component_graph(g)) == [["runs", "tracks"]]
    assert layer_violations(component_graph(g), ALLOWED) == ["tracks imports runs"]
    assert "runs" in reachable(component_graph(g), "tracks")


def test_an_uncommented_lazy_import_is_reported(tmp_path):
    pkg = tmp_path / "twistbench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text("def f():\n    import json\n\n    # lazy: a reason\n"
                              "    import csv\n    import zlib\n    return json, csv, zlib\n")
    assert uncommented_lazy_imports(modules(pkg)) == ["twistbench.m:2"]


def test_a_component_outside_the_layers_is_reported():
    assert layer_violations({"newthing": {"model"}}, ALLOWED) == [
        "newthing: not placed in the layers (ALLOWED / ARCHITECTURE.md)"]

