import ast
import json
from pathlib import Path

import pytest

from twistbench.contract import BaseSystem, Capabilities, GoldReader, MemorySystem
from twistbench.errors import InputError
from twistbench.systems import DEFAULT_SYSTEMS, REGISTRY, coerce_options, make_system


class Typed(BaseSystem):
    """A system with one option of each coercible type."""

    name = "typed"
    capabilities = Capabilities(recall=True)

    def __init__(self, n: int = 1, x: float = 0.5, flag: bool = False, label: str = "a",
                 tags: list[str] | None = None, table: dict | None = None,
                 maybe: int | None = None) -> None:
        self.kw = dict(n=n, x=x, flag=flag, label=label, tags=tags, table=table, maybe=maybe)


class NotASystem:
    def __init__(self) -> None:
        pass


def test_registry_has_the_four_reference_systems():
    assert set(REGISTRY) == {"flat-rag", "fact-rag", "oracle", "heuristic"}
    assert set(DEFAULT_SYSTEMS) == set(REGISTRY)
    assert [n for n, e in REGISTRY.items() if e.gold_channel] == ["oracle"]
    assert all(e.description for e in REGISTRY.values())


EXPECTED_CAPS = {
    "flat-rag": dict(recall=True, check_alignment=True, retrieve=True, lineage=True),
    "fact-rag": dict(recall=True, check_alignment=True, retrieve=True, lineage=True),
    "heuristic": dict(online_tensions=True, batch_tensions=True, check_alignment=True,
                      recall=True, resolve=True, safety=True, retrieve=True, lineage=True),
    "oracle": {k: True for k in Capabilities().as_dict()},
}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_builtins_declare_capabilities_truthfully(name):
    system, entry = make_system(name, {})
    assert isinstance(system, MemorySystem)
    assert system.name == name == entry.name
    want = {k: False for k in Capabilities().as_dict()} | EXPECTED_CAPS[name]
    assert system.capabilities.as_dict() == want
    json.dumps(system.config())  # goes into the manifest
    assert isinstance(system, GoldReader) == (name == "oracle")


def test_options_are_coerced_to_annotations():
    sysobj, entry = make_system("test_registry:Typed", {
        "n": "3", "x": "0.25", "flag": "yes", "label": "b", "tags": '["p", "q"]',
        "table": '{"a": 1}', "maybe": "none"})
    assert sysobj.kw == dict(n=3, x=0.25, flag=True, label="b", tags=["p", "q"],
                             table={"a": 1}, maybe=None)
    assert not entry.gold_channel and entry.description.startswith("A system with one option")
    assert make_system("test_registry:Typed", {"maybe": "7"})[0].kw["maybe"] == 7


def test_builtin_options_coerced():
    s, _ = make_system("fact-rag", {"max_facts": "8", "retriever": "lexical", "match_ratio": "0.8"})
    assert (s.max_facts, s.retriever_name, s.match_ratio) == (8, "lexical", 0.8)


def test_unknown_option_names_the_accepted_ones():
    with pytest.raises(InputError) as e:
        make_system("flat-rag", {"topk": "3"})
    msg = str(e.value)
    assert "topk" in msg and "answer_turns" in msg and "retriever" in msg
    assert e.value.field == "topk"


@pytest.mark.parametrize("opts,field", [({"n": "three"}, "n"), ({"flag": "maybe"}, "flag"),
                                        ({"tags": '{"a": 1}'}, "tags"), ({"x": "fast"}, "x")])
def test_bad_values_are_input_errors(opts, field):
    with pytest.raises(InputError) as e:
        make_system("test_registry:Typed", opts)
    assert e.value.field == field


def test_bad_value_in_constructor_is_input_error():
    with pytest.raises(InputError, match="retriever"):
        make_system("flat-rag", {"retriever": "sparse"})


@pytest.mark.parametrize("spec", ["no-such-system", "no_such_module_xyz:Cls",
                                  "test_registry:Missing", "test_registry:NotASystem"])
def test_bad_specs(spec):
    with pytest.raises(InputError):
        make_system(spec, {})


def test_var_kwargs_constructor_accepts_any_option():
    class Loose(BaseSystem):
        name = "loose"

        def __init__(self, **kw):
            self.kw = kw

    assert coerce_options(Loose, {"anything": "1"}, "loose") == {"anything": "1"}


def test_toy_system_from_tests_dir():
    s, entry = make_system("toy_systems:KeywordToy", {"delay": "0.5"})
    assert s.delay == 0.5 and entry.name == "toy_systems:KeywordToy"


SYSTEMS_DIR = Path(__file__).resolve().parents[2] / "src" / "twistbench" / "systems"


@pytest.mark.parametrize("path", sorted(SYSTEMS_DIR.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(SYSTEMS_DIR)))
def test_systems_never_import_tracks_or_build(path):
    """A system must not see gold or the generator's templates: no import of tracks/ or itemgen/."""
    tree = ast.parse(path.read_text())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    bad = [n for n in names if n.startswith(("twistbench.tracks", "twistbench.itemgen",
                                              "twistbench.judges"))]
    assert not bad, bad
