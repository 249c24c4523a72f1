"""Systems and judges resolve through one table plus entry points, module:Class and
file.py:Class."""

from importlib import metadata

import pytest

from twistbench import plugins
from twistbench.contract import MemorySystem
from twistbench.errors import InputError
from twistbench.judges import DEFAULT_JUDGE, make_judge
from twistbench.judges.structural import StructuralJudge
from twistbench.systems import available_systems, make_system

SYSTEM_FILE = '''
from twistbench.contract import BaseSystem, Capabilities
from twistbench.model import Answer


class FileStore(BaseSystem):
    """A store defined in a plain file."""

    name = "file-store"
    capabilities = Capabilities(recall=True)

    def __init__(self, depth: int = 1) -> None:
        self.depth = depth

    def recall(self, query):
        return Answer(text="")
'''

JUDGE_FILE = '''
from twistbench.judges.base import JudgeVerdict


class AlwaysNone:
    name = "always-none"
    version = "7"

    def classify(self, chain, query, answer):
        return JudgeVerdict("none", [], [], False, False, "fixed", judge=self.name)
'''


def _fake_entry_points(monkeypatch, *eps):
    def fake(group=None):
        return [ep for ep in eps if ep.group == group]

    monkeypatch.setattr(plugins.metadata, "entry_points", fake)


def test_system_from_a_file_path(tmp_path):
    path = tmp_path / "my_store.py"
    path.write_text(SYSTEM_FILE)
    system, entry = make_system(f"{path}:FileStore", {"depth": "3"})
    assert isinstance(system, MemorySystem) and system.depth == 3
    assert entry.name == f"{path}:FileStore"
    assert entry.description == "A store defined in a plain file."
    assert not entry.gold_channel


def test_a_missing_file_or_class_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        make_system(f"{tmp_path / 'absent.py'}:X", {})
    path = tmp_path / "broken.py"
    path.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(InputError, match="boom"):
        make_system(f"{path}:X", {})


def test_system_registered_as_an_entry_point(monkeypatch):
    ep = metadata.EntryPoint(name="keyword-toy", value="toy_systems:KeywordToy",
                             group="twistbench.systems")
    _fake_entry_points(monkeypatch, ep)
    assert "keyword-toy" in available_systems()
    system, entry = make_system("keyword-toy", {})
    assert type(system).__name__ == "KeywordToy" and not entry.gold_channel


def test_an_entry_point_never_shadows_a_builtin(monkeypatch):
    ep = metadata.EntryPoint(name="oracle", value="toy_systems:KeywordToy",
                             group="twistbench.systems")
    _fake_entry_points(monkeypatch, ep)
    system, entry = make_system("oracle", {})
    assert type(system).__name__ == "Oracle" and entry.gold_channel


def test_default_judge_names_itself():
    judge = make_judge(DEFAULT_JUDGE)
    assert isinstance(judge, StructuralJudge) and judge.name == "structural"
    assert judge.version == StructuralJudge.version


def test_judge_from_a_file_and_from_an_entry_point(tmp_path, monkeypatch):
    path = tmp_path / "my_judge.py"
    path.write_text(JUDGE_FILE)
    judge = make_judge(f"{path}:AlwaysNone")
    assert (judge.name, judge.version) == ("always-none", "7")
    ep = metadata.EntryPoint(name="always-none", value=f"{path}:AlwaysNone",
                             group="twistbench.judges")
    monkeypatch.setattr(plugins.metadata, "entry_points",
                        lambda group=None: [ep] if group == "twistbench.judges" else [])
    with pytest.raises(InputError):  # an entry point that does not load is the user's input
        make_judge("always-none")


@pytest.mark.parametrize("spec", ["no-such-judge", "twistbench.model:Answer"])
def test_unknown_or_wrong_judge_is_an_input_error(spec):
    with pytest.raises(InputError):
        make_judge(spec)
