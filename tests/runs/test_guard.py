from collections.abc import Mapping
from datetime import datetime

import pytest
import toy_systems
from toy_systems import hang

from twistbench.contract import BaseSystem, Capabilities
from twistbench.model import Answer, Event
from twistbench.records import SystemCallError
from twistbench.runs.guard import GuardedSystem
from twistbench.sanitize import Redactor


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


def test_hang_times_out_and_next_call_still_works(hangs):
    def maybe_hang(q):
        if q == "hang":
            hang(600)
        return {"text": q}

    g = GuardedSystem(Sys(maybe_hang), 30)
    with pytest.raises(SystemCallError) as info:
        g.recall("hang")
    assert info.value.kind == "timeout" and g.timeouts == 1
    assert g.recall("after").text == "after"  # a fresh worker serves the next call


def test_a_real_timeout_fires():
    # One test in real time: the hanging call gets a short limit, nothing else depends on speed.
    toy_systems.RELEASE.clear()
    g = GuardedSystem(Sys(lambda q: hang(5)), 0.2)
    with pytest.raises(SystemCallError) as info:
        g.recall("q")
    assert info.value.kind == "timeout" and "0.2 s" in info.value.message
    toy_systems.RELEASE.set()


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")


class Exploding(Mapping):
    def __getitem__(self, key):
        raise RuntimeError("boom")

    def __iter__(self):
        raise RuntimeError("boom")

    def __len__(self):
        return 2


class DumpRaises(Answer):
    def model_dump(self, *a, **kw):
        raise RuntimeError("no dump")


class WeirdStr(str):
    def __eq__(self, other):
        raise RuntimeError("no compare")

    __hash__ = str.__hash__


def test_an_exception_whose_str_raises_is_an_error_with_a_message():
    def boom(q):
        raise Unprintable()

    with pytest.raises(SystemCallError) as info:
        GuardedSystem(Sys(boom), 30).recall("q")
    assert info.value.kind == "exception" and "Unprintable" in info.value.message
    assert "unprintable" in info.value.message


@pytest.mark.parametrize("value", [Exploding(), DumpRaises(text="x"), [Exploding()],
                                   {"text": float("nan"), "evidence": []}, {"text": b"\xff"}])
def test_outputs_that_raise_when_read_are_invalid_output(value):
    with pytest.raises(SystemCallError) as info:
        GuardedSystem(Sys(lambda q: value), 30).recall("q")
    assert info.value.kind == "invalid_output" and info.value.call == "recall"


def test_outputs_are_plain_data_after_the_guard():
    out = GuardedSystem(Sys(lambda q: {"text": WeirdStr("x"), "evidence": [WeirdStr("e")]}),
                        30).recall("q")
    assert type(out.text) is str and type(out.evidence[0]) is str and out.text == "x"


def test_an_output_over_the_cap_is_an_error_and_not_returned():
    g = GuardedSystem(Sys(lambda q: {"text": "y" * 5000}), 30, max_output_bytes=1000)
    with pytest.raises(SystemCallError) as info:
        g.recall("q")
    assert info.value.kind == "invalid_output" and "over the limit of 1,000" in info.value.message
    assert GuardedSystem(Sys(lambda q: {"text": "y" * 500}), 30,
                         max_output_bytes=1000).recall("q").text == "y" * 500


def test_error_messages_are_redacted_before_they_are_cut():
    secret = "sk-live-" + "Q" * 40
    def boom(q):
        raise ValueError("x" * 1990 + secret)

    g = GuardedSystem(Sys(boom), 30, redactor=Redactor({"api_key": secret}, {}))
    with pytest.raises(SystemCallError) as info:
        g.recall("q")
    assert "sk-live" not in info.value.message and "QQQQ" not in info.value.message


def test_invalid_output_messages_do_not_echo_the_output():
    secret = "sk-live-" + "Z" * 40
    g = GuardedSystem(Sys(lambda q: {"text": 3, "evidence": secret}), 30)
    with pytest.raises(SystemCallError) as info:
        g.recall("q")
    assert "ZZZZ" not in info.value.message and "evidence" in info.value.message


class Mutator(BaseSystem):
    capabilities = Capabilities()

    def ingest(self, events):
        events[0].text = "overwritten"
        events[0].meta["planted"] = True
        events.clear()
        return None


def test_a_system_gets_copies_of_the_events():
    ev = Event(id="e1", conversation="c", session=1, timestamp=datetime(2024, 1, 1),
               speaker="A", text="original", meta={"k": 1})
    events = [ev]
    GuardedSystem(Mutator(), 30).ingest(events)
    assert events == [ev] and ev.text == "original" and ev.meta == {"k": 1}


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
