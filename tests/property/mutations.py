"""Hypothesis strategies that damage valid inputs the way a hostile user (or a bad disk) would:
a node of a JSON document replaced, deleted, duplicated or retyped; bytes cut, flipped or
inserted; text that is rich markup, terminal escapes or deeply nested. Also small valid inputs
to start from (a LoCoMo-shaped file, a key, a run folder)."""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

# TWIST_PROPERTY_SCALE multiplies every example budget (CI: 1; a longer local hunt: 10).
SCALE = float(os.environ.get("TWIST_PROPERTY_SCALE", "1"))


def budget(n: int) -> int:
    """n examples at scale 1."""
    return max(1, int(n * SCALE))


NASTY_VALUES = [None, True, False, 0, -1, 1, 10**30, -(10**30), 1e308, 0.5, "", " ", "x",
                "[/]", "[bold red]x", "\x1b[2J\x07", "é\u202eabc", "a" * 5000, "D1:1", [], {},
                [None], {"": None}, ["D1:1", 3], "null", "1:56 pm on 8 May, 2023"]

JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6),
                      st.floats(allow_nan=False, allow_infinity=False),
                      st.text(max_size=12), st.sampled_from(NASTY_VALUES).map(copy.deepcopy))
JSON_VALUE = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                          max_leaves=8)


def _paths(doc: Any, prefix: tuple = (), depth: int = 10) -> list[tuple]:
    """Every node's path, down to `depth` levels (a planted 300-deep list is one target, not
    300)."""
    out = [prefix]
    if depth == 0:
        return out
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,), depth - 1)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, prefix + (i,), depth - 1)
    return out


def _get(doc: Any, path: tuple) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _damage_json(draw: Any, doc: Any, max_mutations: int) -> tuple[Any, list[tuple]]:
    """`doc` with 1..max_mutations damages, and the path of every node each damage touched
    (for a key duplicated under a new name, the new key's path; () for the whole document)."""
    doc = copy.deepcopy(doc)
    touched: list[tuple] = []
    for _ in range(draw(st.integers(1, max_mutations))):
        path = draw(st.sampled_from(_paths(doc)))
        action = draw(st.sampled_from(["replace", "delete", "duplicate", "nasty", "deep"]))
        if action == "deep":
            value: Any = json.loads("[" * 300 + "]" * 300)
        elif action == "nasty":
            value = copy.deepcopy(draw(st.sampled_from(NASTY_VALUES)))  # never share state
        else:
            value = draw(JSON_VALUE)
        if not path:
            doc = value
            touched.append(())
            continue
        parent, key = _get(doc, path[:-1]), path[-1]
        if action == "delete":
            del parent[key]
        elif action == "duplicate" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif action == "duplicate" and isinstance(parent, dict):
            new_key = draw(st.text(max_size=6))
            parent[new_key] = copy.deepcopy(parent[key])
            path = path[:-1] + (new_key,)
        else:
            parent[key] = value
        touched.append(path)
    return doc, touched


@st.composite
def mutated_json(draw: Any, doc: Any, max_mutations: int = 3) -> Any:
    """`doc` with 1..max_mutations damages, each at a random node."""
    return _damage_json(draw, doc, max_mutations)[0]


@st.composite
def mutated_bytes(draw: Any, data: bytes) -> bytes:
    """`data` cut short, with a slice replaced by random (often invalid UTF-8) bytes, or with
    bytes inserted."""
    action = draw(st.sampled_from(["cut", "replace", "insert"]))
    n = len(data)
    i = draw(st.integers(0, max(n - 1, 0)))
    if action == "cut":
        return data[:i]
    junk = draw(st.binary(min_size=1, max_size=16) | st.sampled_from([b"\xff\xfe", b"\x00",
                                                                       b"\n", b'"', b"\\"]))
    if action == "replace":
        j = draw(st.integers(i, min(n, i + 16)))
        return data[:i] + junk + data[j:]
    return data[:i] + junk + data[i:]


@dataclass(frozen=True)
class LineDamage:
    """What `damaged_text_lines` did to a JSON-lines file, so a test can ask the error to name it.

    kind: "json" (the line's JSON damaged in place), "junk" (the line replaced by random text),
    "drop" or "duplicate". line: the 1-based number of the damaged line in the damaged file.
    original: the line before the damage. fields: for "json" damage of an object, the top-level
    keys every damage touched; None when a damage replaced the whole record (there is no field to
    name then, only the record) or the line was not an object."""

    kind: str
    line: int
    original: str
    fields: frozenset[str] | None = None


def damaged_text_lines(lines: list[str]) -> st.SearchStrategy[tuple[list[str], LineDamage]]:
    """JSON lines with one line replaced by a damaged version of itself, or by junk, dropped or
    duplicated; and what was done (LineDamage)."""
    @st.composite
    def strat(draw: Any) -> tuple[list[str], LineDamage]:
        out = list(lines)
        i = draw(st.integers(0, len(out) - 1))
        original = out[i]
        choice = draw(st.sampled_from(["json", "junk", "drop", "duplicate"]))
        fields = None
        if choice == "json":
            try:
                record = json.loads(out[i])
            except ValueError:
                out[i] = draw(st.text(max_size=40))
                return out, LineDamage("junk", i + 1, original)
            damaged, touched = _damage_json(draw, record, 3)
            out[i] = json.dumps(damaged)
            if isinstance(record, dict) and isinstance(damaged, dict) and all(touched):
                fields = frozenset(str(p[0]) for p in touched)
        elif choice == "junk":
            out[i] = draw(st.text(max_size=60))
        elif choice == "drop":
            del out[i]
        else:
            out.insert(i, out[i])
        return out, LineDamage(choice, i + 1, original, fields)
    return strat()


def assert_error_names_damage(message: str, damage: LineDamage, lines: list[str]) -> None:
    """The error refusing `lines` names the damaged record (its line number, or its id where a
    reader refuses records by id) and, where the damage was to fields of an object, one of them.

    Not asked of every damage: a dropped line leaves no record to name (the error is about what
    is missing); a duplicated line is two records and either may be named; a blank junk line is
    skipped by the readers, and junk with a line break in it is several lines; a damage that
    replaced the whole record (or a line that was not an object) has a record but no field; a
    key duplicated under the empty name has no name to print."""
    if damage.kind not in ("json", "junk"):
        return
    junk = lines[damage.line - 1]
    if damage.kind == "junk" and (not junk.strip() or len(junk.splitlines()) != 1):
        return  # blank (skipped), or text with line breaks: it is more than one line then
    ids = _record_ids(damage.original)
    assert re.search(rf"\bline {damage.line}\b", message) or any(i in message for i in ids), (
        f"the error does not name line {damage.line} ({damage.kind} damage)", message)
    if damage.fields and "" not in damage.fields:
        # a key with control characters is printed escaped (never sent raw to the terminal)
        named = any(f in message or repr(f)[1:-1] in message for f in damage.fields)
        assert "field" in message and named, (
            f"the error does not name the damaged field (one of {sorted(damage.fields)})",
            message)


def _record_ids(line: str) -> list[str]:
    """The ids a reader may name a record by (item_id, query_id, case_id...)."""
    try:
        record = json.loads(line)
    except ValueError:
        return []
    if not isinstance(record, dict):
        return []
    return [v for k, v in record.items() if k.endswith("id") and isinstance(v, str) and v]


def mutated_text_lines(lines: list[str]) -> st.SearchStrategy[list[str]]:
    """JSON lines with one line replaced by a damaged version of itself, or by junk."""
    return damaged_text_lines(lines).map(lambda damaged: damaged[0])


def mini_locomo(samples: int = 2) -> list[dict[str, Any]]:
    """A small, valid LoCoMo-shaped document (two conversations, two sessions each)."""
    out = []
    for s in range(samples):
        conv: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Bo"}
        for n in (1, 2):
            conv[f"session_{n}_date_time"] = f"1:5{n} pm on {8 + n} May, 2023"
            conv[f"session_{n}"] = [
                {"speaker": "Ann" if t % 2 == 0 else "Bo", "dia_id": f"D{n}:{t + 1}",
                 "text": f"Turn {t + 1} of session {n}: I moved to Lisbon in {2020 + t}."}
                for t in range(3)]
        qa = [{"question": "Where did Ann move?", "answer": "Lisbon", "evidence": ["D1:1"],
               "category": 1},
              {"question": "When?", "answer": 2020, "evidence": ["D1:1", "D2:3"], "category": 2},
              {"question": "Does Bo like cats?", "adversarial_answer": "yes", "evidence": [],
               "category": 5}]
        out.append({"sample_id": f"conv-{s + 1}", "conversation": conv, "qa": qa})
    return out
