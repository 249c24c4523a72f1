import time

import pytest

from twistbench.contract import BaseSystem, Capabilities
from twistbench.model import Answer
from twistbench.records import SystemCallError
from twistbench.runs.guard import GuardedSystem


class Sys(BaseSystem):
    capabilities = Capabilities(recall=True, batch_tensions=True)

    def __init__(self, behaviour):
        self.behaviour = behaviour

    def recall(self, query):
        return self.behaviour(query)

    def flag_tensions(self):
        return self.behaviour("flag")


def test_valid_dict_and_model_outputs_are_accepted():
    g = GuardedSystem(Sys(lambda q: {"text": "x", "evidence": ["e1"], "extra": 1}), 2)
    assert g.recall("q") == Answer(text="x", evidence=["e1"])
    g = GuardedSystem(Sys(lambda q: Answer(text="y")), 2)
    assert g.recall("q").text == "y"


@pytest.mark.parametrize("value", [None, 42, {"evidence": []}, {"text": 3, "evidence": "e1"},
                                   [{"text": "x"}]])
def test_malformed_output_is_invalid_output(value):
    g = GuardedSystem(Sys(lambda q: value), 2)
    with pytest.raises(SystemCallError) as info:
        g.recall("q")
    assert info.value.kind == "invalid_output" and info.value.call == "recall"


def test_exception_is_recorded_with_its_type():
    def boom(q):
        raise KeyError("nope")

    with pytest.raises(SystemCallError) as info:
        GuardedSystem(Sys(boom), 2).recall("q")
    assert info.value.kind == "exception" and "KeyError" in info.value.message


def test_hang_times_out_and_next_call_still_works():
    calls = []

    def maybe_hang(q):
        calls.append(q)
        if q == "hang":
            time.sleep(2)
        return {"text": q}

    g = GuardedSystem(Sys(maybe_hang), 0.2)
    with pytest.raises(SystemCallError) as info:
        g.recall("hang")
    assert info.value.kind == "timeout"
    assert g.recall("after").text == "after"  # a fresh worker serves the next call


def test_list_outputs_are_validated_item_by_item():
    g = GuardedSystem(Sys(lambda q: [{"id": "t1", "claim_evidence": ["a"], "new_evidence": ["b"]}]),
                      2)
    assert g.flag_tensions()[0].id == "t1"
    g = GuardedSystem(Sys(lambda q: [{"id": "t1", "claim_evidence": [], "new_evidence": ["b"]}]), 2)
    with pytest.raises(SystemCallError):
        g.flag_tensions()
    g = GuardedSystem(Sys(lambda q: {"id": "t1"}), 2)
    with pytest.raises(SystemCallError):
        g.flag_tensions()
