"""Every loader, fed damaged inputs: it returns its records or raises an InputError that names
the file — never any other exception. Examples are derandomized and bounded (conftest.py)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mutations import (
    assert_error_names_damage,
    budget,
    damaged_text_lines,
    mini_locomo,
    mutated_bytes,
    mutated_json,
    mutated_text_lines,
)

from twistbench.audit.contested import read_cases, read_labels
from twistbench.audit.traces import read_gold, read_lineage, read_traces
from twistbench.datasets.demo import demo_dataset
from twistbench.datasets.errata import read_errata
from twistbench.datasets.keyfile import encode_key
from twistbench.datasets.locomo import locomo_dataset
from twistbench.datasets.longmemeval import load_longmemeval
from twistbench.datasets.registry import load_dataset_key
from twistbench.datasets.twist_b import load_twist_b, read_twist_b
from twistbench.errors import InputError
from twistbench.records import read_manifest, read_records
from twistbench.report.runs import score_folder
from twistbench.runs.runner import RunSettings, run_system
from twistbench.tracks.b_alignment import read_predictions

_counter = itertools.count()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("prop")


def write(folder: Path, name: str, data: bytes | str) -> Path:
    """A fresh file per example (hypothesis runs many examples in one test function)."""
    path = folder / f"{next(_counter)}-{name}"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def loads_or_input_error(fn, path: Path) -> None:
    try:
        fn(path)
    except InputError as exc:
        _names_the_file(exc, path)


def _names_the_file(exc: InputError, path: Path) -> None:
    assert str(exc).strip() and exc.file, exc
    assert str(path) in exc.file or exc.file.startswith("-") or exc.file == "items.jsonl" \
        or Path(exc.file).parent == path.parent or Path(exc.file) == path, exc


def loads_or_names_damage(fn, scratch: Path, name: str, damaged: tuple) -> None:
    """`loads_or_input_error` for a JSON-lines file with one damaged line: the error also names
    that line (or its record) and the damaged field."""
    lines, damage = damaged
    path = write(scratch, name, "\n".join(lines))
    try:
        fn(path)
    except InputError as exc:
        _names_the_file(exc, path)
        assert_error_names_damage(str(exc), damage, lines)


DEMO = demo_dataset()
DEMO_KEY = json.loads(encode_key(DEMO.name, DEMO.version, DEMO.model_dump(mode="json")))


@given(doc=mutated_json(DEMO_KEY))
def test_key_files(scratch, doc):
    loads_or_input_error(load_dataset_key, write(scratch, "key.json", json.dumps(doc)))


@given(data=mutated_bytes(json.dumps(DEMO_KEY).encode()))
def test_key_files_bytes(scratch, data):
    loads_or_input_error(load_dataset_key, write(scratch, "key.json", data))


LOCOMO = mini_locomo()


@given(doc=mutated_json(LOCOMO))
def test_locomo(scratch, doc):
    loads_or_input_error(locomo_dataset, write(scratch, "locomo10.json", json.dumps(doc)))


@given(data=mutated_bytes(json.dumps(LOCOMO).encode()))
def test_locomo_bytes(scratch, data):
    loads_or_input_error(locomo_dataset, write(scratch, "locomo10.json", data))


TWIST_B = [json.dumps({"id": f"conv-1:b{i}", "conv": "conv-1", "speaker": "Ann",
                       "type": t, "family": "f", "draft": f"Draft {i}", "evidence": ["D1:1"],
                       "rationale": "r"})
           for i, t in enumerate(["contradicting", "aligned", "hard_negative"])]


@given(lines=mutated_text_lines(TWIST_B))
def test_twist_b_key(scratch, lines):
    key = write(scratch, "b.jsonl", "\n".join(lines) + "\n")
    loads_or_input_error(read_twist_b, key)
    locomo = write(scratch, "locomo10.json", json.dumps(LOCOMO))
    try:
        load_twist_b(key, locomo)
    except InputError as exc:
        assert exc.file in (str(key), str(locomo))


PREDICTIONS = [json.dumps({"item_id": d.id, "aligned": d.label != "contradicting",
                           "evidence": list(d.evidence)}) for d in DEMO.drafts]


@given(damaged=damaged_text_lines(PREDICTIONS))
def test_predictions(scratch, damaged):
    loads_or_names_damage(read_predictions, scratch, "p.jsonl", damaged)


ERRATA = [{"question_id": "locomo_0_qa0", "correct_answer": "Porto",
           "correct_evidence": ["D1:2"]}]


@given(doc=mutated_json(ERRATA))
def test_errata(scratch, doc):
    loads_or_input_error(read_errata, write(scratch, "errors.json", json.dumps(doc)))


LONGMEMEVAL = [{"question_id": "q1", "question_type": "single-session-user",
                "question": "Where?", "answer": "Lisbon", "question_date": "2023/05/20 (Sat) 02:21",
                "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
                "haystack_sessions": [[{"role": "user", "content": "I live in Lisbon.",
                                        "has_answer": True}]],
                "answer_session_ids": ["s1"]}]


@given(doc=mutated_json(LONGMEMEVAL))
def test_longmemeval(scratch, doc):
    loads_or_input_error(load_longmemeval, write(scratch, "lme.json", json.dumps(doc)))


# -- run folders ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    out = run_system(DEMO, None, tmp_path_factory.mktemp("run") / "r",
                     settings=RunSettings(progress=False), spec="oracle",
                     factory=_oracle, gold_channel=True, dataset_source={"name": "demo"})
    return out.folder


def _oracle():
    from twistbench.systems import build_system

    return build_system("oracle")


def _folder_with(scratch: Path, src: Path, name: str, data: str) -> Path:
    dst = scratch / f"run-{next(_counter)}"
    dst.mkdir()
    for f in ("manifest.json", "items.jsonl"):
        (dst / f).write_bytes((src / f).read_bytes())
    (dst / name).write_text(data)
    return dst


def _rescore(folder: Path) -> None:
    read_manifest(folder)
    read_records(folder)
    score_folder(folder, dataset=DEMO)


@given(data=st.data())
def test_manifests(scratch, demo_run, data):
    man = json.loads((demo_run / "manifest.json").read_text())
    doc = data.draw(mutated_json(man))
    folder = _folder_with(scratch, demo_run, "manifest.json", json.dumps(doc))
    try:
        _rescore(folder)
    except InputError as exc:
        assert str(folder) in exc.file


@given(data=st.data())
def test_item_records(scratch, demo_run, data):
    lines = (demo_run / "items.jsonl").read_text().splitlines()
    damaged = data.draw(mutated_text_lines(lines))
    folder = _folder_with(scratch, demo_run, "items.jsonl", "\n".join(damaged) + "\n")
    try:
        _rescore(folder)
    except InputError as exc:
        assert str(folder) in exc.file


# -- TIAP inputs ------------------------------------------------------------------------------


TRACES = [json.dumps({"query_id": f"q{i}", "k": 3,
                      "results": [{"id": f"m{j}", "score": 1.0 - j / 10} for j in range(3)]})
          for i in range(3)]
TREC = [f"q{i} Q0 m{j} {j + 1} {1.0 - j / 10} run" for i in range(2) for j in range(3)]
GOLD = [json.dumps({"query_id": f"q{i}", "conversation": "c", "anchors": ["t1"],
                    "category": "1", "question": "?", "answer": "a"}) for i in range(3)]
LINEAGE = [json.dumps({"memory_id": f"m{j}", "conversation": "c", "sources": ["t1"],
                       "raw": True, "canonical": False}) for j in range(3)]


@pytest.mark.parametrize(("reader", "name", "lines"), [
    (read_traces, "traces.jsonl", TRACES), (read_traces, "run.trec", TREC),
    (read_gold, "gold.jsonl", GOLD), (read_lineage, "lineage.jsonl", LINEAGE)])
def test_the_undamaged_inputs_load(scratch, reader, name, lines):
    # a damage can only be blamed on its line when every other line is valid
    reader(write(scratch, name, "\n".join(lines)))


@given(damaged=damaged_text_lines(TRACES))
def test_jsonl_traces(scratch, damaged):
    loads_or_names_damage(read_traces, scratch, "traces.jsonl", damaged)


@given(damaged=damaged_text_lines(TREC))
def test_trec_runs(scratch, damaged):
    loads_or_names_damage(read_traces, scratch, "run.trec", damaged)


@given(data=mutated_bytes("\n".join(TRACES).encode()))
def test_trace_bytes(scratch, data):
    loads_or_input_error(read_traces, write(scratch, "traces.jsonl", data))


@given(damaged=damaged_text_lines(GOLD))
def test_gold(scratch, damaged):
    loads_or_names_damage(read_gold, scratch, "gold.jsonl", damaged)


@given(damaged=damaged_text_lines(LINEAGE))
def test_lineage(scratch, damaged):
    loads_or_names_damage(read_lineage, scratch, "lineage.jsonl", damaged)


CASE = {"case_id": "c1", "run": "r", "query_id": "q", "conversation": "c", "category": "1",
        "question": "q?", "answer": "a", "anchors": ["a1"], "evidence": {"a1": "t"},
        "credited_memory_id": "m", "credited_text": "t", "credited_sources": ["a1"],
        "credited_rank": 1, "rank_bucket": "1", "source_first_hit": 1}


@given(damaged=damaged_text_lines([json.dumps(CASE)]))
def test_contested_cases(scratch, damaged):
    loads_or_names_damage(read_cases, scratch, "cases.jsonl", damaged)


RATERS = "case_id,rater,label,note\nc1,ann,supports,fine\nc1,bo,partial,\n"


@given(data=mutated_bytes(RATERS.encode()) | st.text(max_size=200).map(str.encode))
@settings(max_examples=budget(60))
def test_rater_csv(scratch, data):
    loads_or_input_error(lambda p: read_labels(p, known_cases={"c1"}),
                         write(scratch, "labels.csv", data))
