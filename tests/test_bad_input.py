"""The bad inputs of issue 13, as a user types them: each gives exit code 2 and one line naming
the file (or option), the record and the field — never a traceback, never a half-written
output. Run in-process through the console entry point (cli.run_cli)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
from conftest import SHARED_DATA

from twistbench.cli import run_cli
from twistbench.datasets.demo import demo_dataset

DEEP = "[" * 200_000 + "]" * 200_000
LOCOMO = SHARED_DATA / "locomo" / "locomo10.json"
needs_locomo = pytest.mark.skipif(not LOCOMO.exists(), reason=f"needs {LOCOMO}")


def invoke(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_cli([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def assert_one_line(code: int, err: str, *needles: str) -> str:
    """Exit 2 and exactly one error line (notes about the data may precede it)."""
    errors = [x for x in err.splitlines() if x.strip() and not x.startswith("note:")]
    assert code == 2, err
    assert len(errors) == 1, err
    assert "Traceback" not in err
    for n in needles:
        assert n in errors[0], (n, errors[0])
    return errors[0]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("bad")


@pytest.fixture(scope="module")
def demo_run(work) -> Path:
    code, _, err = invoke("run", "-d", "demo", "-s", "toy_systems:KeywordToy", "--no-progress",
                          "-o", work / "demo")
    assert code == 0, err
    return work / "demo" / "keyword-toy"


def copy_run(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


# -- keys -------------------------------------------------------------------------------------


@pytest.mark.parametrize("payload", ["[]", '"x"', "null", "3"])
def test_a_key_whose_payload_is_not_an_object(tmp_path, payload):
    key = tmp_path / "k.json"
    key.write_text(json.dumps({"format": "twist-key/1", "name": "n", "version": "v",
                               "payload": json.loads(payload)}))
    code, _, err = invoke("run", "-d", key, "--no-progress", "-o", tmp_path / "o")
    assert_one_line(code, err, str(key), "payload")
    assert not (tmp_path / "o").exists()  # nothing written


@pytest.mark.parametrize("top", ["[]", '"x"', "null"])
def test_a_key_whose_top_level_is_not_an_object(tmp_path, top):
    key = tmp_path / "k.json"
    key.write_text(top)
    code, _, err = invoke("validate", key, "--no-progress", "-o", tmp_path / "o")
    assert_one_line(code, err, str(key), "format")


def test_json_nested_200k_deep(tmp_path):
    key = tmp_path / "deep.json"
    key.write_text(DEEP)
    code, _, err = invoke("run", "-d", key, "--no-progress", "-o", tmp_path / "o")
    assert_one_line(code, err, str(key), "nested too deeply")


# -- LoCoMo -----------------------------------------------------------------------------------


def _qa_int(d):
    d[0]["qa"] = 5


def _category_list(d):
    d[0]["qa"][0]["category"] = [1]


def _duplicate_dia_id(d):
    s = d[0]["conversation"]["session_1"]
    s[1]["dia_id"] = s[0]["dia_id"]


def _empty_speaker(d):
    d[0]["conversation"]["session_1"][0]["speaker"] = ""


def _empty_dia_id(d):
    d[0]["conversation"]["session_1"][0]["dia_id"] = ""


def _duplicate_sample_id(d):
    d[1]["sample_id"] = d[0]["sample_id"]


def _turn_not_object(d):
    d[0]["conversation"]["session_1"][0] = "hello"


def _evidence_int(d):
    d[0]["qa"][0]["evidence"] = 7


@pytest.fixture(scope="module")
def locomo_two():
    if not LOCOMO.exists():
        pytest.skip(f"needs {LOCOMO}")
    return json.loads(LOCOMO.read_text())[:2]


@needs_locomo
@pytest.mark.parametrize("mutate, field", [
    (_qa_int, "'qa'"), (_category_list, "'category'"), (_duplicate_dia_id, "'dia_id'"),
    (_empty_speaker, "'speaker'"), (_empty_dia_id, "'dia_id'"),
    (_duplicate_sample_id, "'sample_id'"), (_turn_not_object, "session_1[0]"),
    (_evidence_int, "'evidence'")])
def test_malformed_locomo(tmp_path, locomo_two, mutate, field):
    data = json.loads(json.dumps(locomo_two))
    mutate(data)
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(data))
    code, _, err = invoke("run", "-d", "locomo", "--locomo", path, "-s", "flat-rag",
                          "--no-progress", "-o", tmp_path / "o")
    assert_one_line(code, err, str(path), field)


@needs_locomo
def test_duplicate_sample_id_in_build_locomo(tmp_path, locomo_two):
    data = json.loads(json.dumps(locomo_two))
    _duplicate_sample_id(data)
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(data))
    code, _, err = invoke("build", "locomo", "--locomo", path, "-o", tmp_path / "k.json")
    assert_one_line(code, err, "'sample_id'")
    assert not (tmp_path / "k.json").exists()


# -- systems ----------------------------------------------------------------------------------


def test_a_class_that_is_not_a_system(tmp_path):
    code, _, err = invoke("run", "-d", "demo", "-s", "collections:OrderedDict", "--no-progress",
                          "-o", tmp_path / "o")
    assert_one_line(code, err, "collections:OrderedDict", "'system'")


def test_a_constructor_that_raises(tmp_path):
    plugin = tmp_path / "plug.py"
    plugin.write_text("class P:\n    def __init__(self):\n        raise RuntimeError('nope')\n")
    code, _, err = invoke("run", "-d", "demo", "-s", f"{plugin}:P", "--no-progress", "-o",
                          tmp_path / "o")
    assert_one_line(code, err, "RuntimeError: nope")


# -- output paths -----------------------------------------------------------------------------


OUTPUT_CASES = [
    ["run", "-d", "demo", "-s", "oracle", "--no-progress", "-o", "{dir}"],
    ["trace", "-s", "flat-rag", "-d", "demo", "-o", "{dir}"],
    ["validate", "demo", "--no-progress", "-o", "{dir}"],
    ["report", "{run}", "-o", "{dir}"],
    ["audit", "{trace}", "{trace}", "--resamples", "10", "-o", "{dir}"],
    ["schema", "-o", "{file}"],
    ["build", "cs", "-o", "{file}"],
    ["export-predictions", "{run}", "-o", "{file}"],
    ["score-predictions", "{preds}", "-d", "demo", "-o", "{dir}"],
    ["audit", "labels", "{cases}", "{labels}", "-o", "{file}"],
    ["annotate", "export", "demo", "-o", "{dir}/packet"],
]


@pytest.fixture(scope="module")
def trace_dir(work):
    code, _, err = invoke("trace", "-s", "flat-rag", "-d", "demo", "-o", work / "trace")
    assert code == 0, err
    return work / "trace"


@pytest.fixture(scope="module")
def cases_file(work):
    case = {"case_id": "c1", "run": "r", "query_id": "q", "conversation": "c", "category": "1",
            "question": "q?", "answer": "a", "anchors": ["a1"], "evidence": {"a1": "t"},
            "credited_memory_id": "m", "credited_text": "t", "credited_sources": ["a1"],
            "credited_rank": 1, "rank_bucket": "1", "source_first_hit": 1}
    path = work / "contested_cases.jsonl"
    path.write_text(json.dumps(case) + "\n")
    return path


@pytest.mark.parametrize("case", OUTPUT_CASES, ids=lambda c: " ".join(c[:2]))
@pytest.mark.parametrize("where", ["an existing file", "below a file", "a name too long"])
def test_output_paths_that_cannot_be_written(tmp_path, demo_run, trace_dir, cases_file, case,
                                            where):
    blocker = tmp_path / "blocker"
    blocker.write_text("I am a file")
    target = {"an existing file": blocker, "below a file": blocker / "sub",
              "a name too long": tmp_path / ("a" * 300)}[where]  # the OS refuses to look it up
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,rater,label\nc1,ann,supports\n")
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"item_id": "demo-d1", "aligned": true, "evidence": []}\n')
    fill = {"dir": target, "file": tmp_path if where == "an existing file" else target,
            "run": demo_run, "trace": trace_dir, "cases": cases_file, "labels": labels,
            "preds": preds}
    args = [str(a).format(**fill) for a in case]
    code, _, err = invoke(*args)
    assert_one_line(code, err, "'out'")
    assert blocker.read_text() == "I am a file"


# Bad input found by a verb that writes into -o (a folder or a file): exit 2, one error line,
# and neither the -o path nor a folder on the way to it created (not even an empty one).
# {new}: the -o path, below a folder that does not exist yet; {run}: a good saved run.
TOY = ["-d", "demo", "-s", "toy_systems:KeywordToy", "--no-progress"]
NOTHING_WRITTEN_CASES = {
    # the run folder (and a manifest) used to be written before these were checked
    "run --conversation": (["run", *TOY, "--conversation", "nope", "-o", "{new}"],
                           "unknown conversation(s) ['nope']"),
    "run --track": (["run", *TOY, "--track", "Z", "-o", "{new}"], "unknown track(s) Z"),
    # the first system used to run (a whole run folder) before the second was found unknown
    "run, second system unknown": (["run", *TOY, "-s", "nosuch", "-o", "{new}"],
                                   "unknown system 'nosuch'"),
    "run --isolate process, second system unknown": (
        ["run", *TOY, "-s", "nosuch", "--isolate", "process", "-o", "{new}"],
        "unknown system 'nosuch'"),
    "run, unknown dataset": (["run", "-d", "nosuch", "-o", "{new}"], "unknown dataset"),
    # two specs of one class (one name, one folder): used to be found after the first ran
    "run, two systems sharing a folder": (
        ["run", *TOY, "-s", str(Path(__file__).parent / "toy_systems.py") + ":KeywordToy",
         "-o", "{new}"], "would share the run folder"),
    # -o used to be written in full before --html was found to collide with it
    "report --html = -o": (["report", "{run}", "-o", "{new}", "--html", "{new}"],
                           "collides with what --out writes"),
    "report --html below a file -o writes": (
        ["report", "{run}", "-o", "{new}", "--html", "{new}/report.md/page.html"],
        "collides with what --out writes"),
    "report --html = a file -o writes": (
        ["report", "{run}", "-o", "{new}", "--html", "{new}/profile.png"],
        "collides with what --out writes"),
    "report, not a run folder": (["report", "{new}.missing", "-o", "{new}"], "no run folder"),
    "trace --conversation": (["trace", "-d", "demo", "-s", "flat-rag", "--conversation", "nope",
                              "-o", "{new}"], "unknown conversation(s) ['nope']"),
    "trace, unknown system": (["trace", "-d", "demo", "-s", "nosuch", "-o", "{new}"],
                              "unknown system 'nosuch'"),
    "audit traces, no traces": (["audit", "traces", "{new}.missing", "-o", "{new}"],
                                "no such trace file or folder"),
    "audit native, no LoCoMo file": (["audit", "native", "--locomo", "{new}.json", "-o",
                                      "{new}"], "cannot read the LoCoMo file"),
    "validate, unknown dataset": (["validate", "nosuch", "-o", "{new}"], "unknown dataset"),
    "annotate export --track": (["annotate", "export", "demo", "-t", "Z", "-o", "{new}"],
                                "unknown track 'Z'"),
    "judge calibrate, unknown dataset": (["judge", "calibrate", "-d", "nosuch", "-o", "{new}"],
                                         "unknown dataset"),
    "build cs --seed": (["build", "cs", "--seed", "-1", "-o", "{new}/key.json"],
                        "expected at least 0"),
    # used to write an empty predictions file and exit 0
    "export-predictions, not a run folder": (
        ["export-predictions", "{new}.missing", "-o", "{new}/p.jsonl"], "no items.jsonl here"),
}


@pytest.mark.parametrize("case", list(NOTHING_WRITTEN_CASES))
def test_bad_input_creates_no_output_folder(tmp_path, demo_run, case):
    args, words = NOTHING_WRITTEN_CASES[case]
    new = tmp_path / "made" / "out"  # "made" does not exist: nothing may create it
    code, _, err = invoke(*[a.format(new=new, run=demo_run) for a in args])
    assert_one_line(code, err, words)
    assert list(tmp_path.iterdir()) == [], "left behind"


def test_a_failed_block_removes_only_the_empty_folders_it_created(tmp_path):
    """The safety net under the verbs: folders created for -o are removed when the command
    fails and they are empty; a folder that existed, or one holding a file, stays."""
    from twistbench.cli import _no_empty_folders_left

    old = tmp_path / "old"
    old.mkdir()
    empty, kept = tmp_path / "a" / "b", old / "c" / "d"
    with pytest.raises(KeyError), _no_empty_folders_left(empty, kept, None):
        (empty / "sub").mkdir(parents=True)
        kept.mkdir(parents=True)
        (kept / "written.txt").write_text("x")
        raise KeyError("late bad input")
    assert not (tmp_path / "a").exists() and (kept / "written.txt").exists()
    with _no_empty_folders_left(empty):  # success: nothing removed
        empty.mkdir(parents=True)
    assert empty.is_dir()


# -- run folders ------------------------------------------------------------------------------


@pytest.mark.parametrize("field, value", [("dataset", "x"), ("system", 5), ("tracks", []),
                                          ("config", "c"), ("judge", 3),
                                          ("schema_version", 1)])
def test_a_manifest_with_a_wrong_typed_value(tmp_path, demo_run, field, value):
    run = copy_run(demo_run, tmp_path / "r")
    man = json.loads((run / "manifest.json").read_text())
    man[field] = value
    (run / "manifest.json").write_text(json.dumps(man))
    code, _, err = invoke("report", run)
    assert_one_line(code, err, "manifest.json", f"'{field}'")


@pytest.mark.parametrize("bad", [{}, {"aligned": "yes"}, {"aligned": True, "evidence": "D1:1"}])
@pytest.mark.parametrize("verb", ["report", "resume"])
def test_a_record_of_the_right_json_but_the_wrong_shape(tmp_path, demo_run, bad, verb):
    run = copy_run(demo_run, tmp_path / "out" / "keyword-toy")
    lines = (run / "items.jsonl").read_text().splitlines()
    i = next(n for n, x in enumerate(lines) if json.loads(x)["track"] == "B")
    rec = json.loads(lines[i])
    rec["output"] = bad
    lines[i] = json.dumps(rec)
    (run / "items.jsonl").write_text("\n".join(lines) + "\n")
    if verb == "report":
        code, _, err = invoke("report", run)
    else:
        code, _, err = invoke("run", "-d", "demo", "-s", "toy_systems:KeywordToy",
                              "--no-progress", "-o", tmp_path / "out")
    assert_one_line(code, err, str(run / "items.jsonl"), rec["item_id"], "output")


@pytest.mark.parametrize("name", ["items.jsonl", "manifest.json"])
def test_deep_json_in_a_run_folder(tmp_path, demo_run, name):
    run = copy_run(demo_run, tmp_path / "r")
    (run / name).write_text(DEEP + "\n" + (run / name).read_text())
    code, _, err = invoke("report", run)
    assert_one_line(code, err, name, "nested too deeply")


# -- traces, gold, rater files ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["traces.jsonl", "gold.jsonl", "lineage.jsonl"])
@pytest.mark.parametrize("content", [b"\xff\xfe not utf-8\n", DEEP.encode() + b"\n"],
                         ids=["non-utf8", "deep"])
def test_trace_gold_and_lineage_files(tmp_path, trace_dir, name, content):
    bad = copy_run(trace_dir, tmp_path / "t")
    (bad / name).write_bytes(content)
    code, _, err = invoke("audit", bad, trace_dir, "--resamples", "10")
    assert_one_line(code, err, name, "line 1")


@pytest.mark.parametrize("body", [b"case_id,rater,label\n\xff\xfe,ann,supported\n"],
                         ids=["non-utf8"])
def test_a_rater_file_that_is_not_utf8(tmp_path, cases_file, body):
    labels = tmp_path / "r.csv"
    labels.write_bytes(body)
    code, _, err = invoke("audit", "labels", cases_file, labels)
    assert_one_line(code, err, str(labels), "UTF-8")


def test_a_200kb_csv_field_is_read(tmp_path, cases_file):
    labels = tmp_path / "r.csv"
    labels.write_text("case_id,rater,label,note\nc1,ann,supports," + "x" * 200_000 + "\n")
    code, out, err = invoke("audit", "labels", cases_file, labels)
    assert code == 0, err


def test_deep_and_non_utf8_predictions(tmp_path):
    for content in (DEEP.encode(), b"\xff\n"):
        preds = tmp_path / "p.jsonl"
        preds.write_bytes(content)
        code, _, err = invoke("score-predictions", preds, "-d", "demo")
        assert_one_line(code, err, str(preds), "line 1")


def test_a_prediction_for_an_unknown_draft_names_its_line(tmp_path):
    draft = demo_dataset().drafts[0].id
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"item_id": draft, "aligned": True, "evidence": []}) + "\n\n"
                     + json.dumps({"item_id": "conv-x:v9", "aligned": False}) + "\n")
    code, _, err = invoke("score-predictions", preds, "-d", "demo", "-o", tmp_path / "o")
    line = assert_one_line(code, err, str(preds), "line 3", "item_id", "'conv-x:v9'",
                           "a draft id of key")
    assert draft in line  # what was expected: an id the key has
    assert not (tmp_path / "o").exists()  # nothing written


# -- numeric options --------------------------------------------------------------------------


RUN = ["run", "-d", "demo", "-s", "oracle", "--no-progress", "-o"]


@pytest.mark.parametrize("args, flag", [
    (["--timeout", "nan"], "--timeout"), (["--timeout", "inf"], "--timeout"),
    (["--timeout", "0"], "--timeout"), (["--timeout", "-1"], "--timeout"),
    (["--ingest-timeout", "nan"], "--ingest-timeout"),
    (["--max-error-rate", "nan"], "--max-error-rate"),
    (["--max-error-rate", "-1"], "--max-error-rate"),
    (["--max-error-rate", "1.5"], "--max-error-rate"), (["--seed", "-3"], "--seed"),
    (["--max-output-bytes", "0"], "--max-output-bytes"), (["--timeout", "abc"], "--timeout"),
    (["--isolate", "fork"], "--isolate")])
def test_numeric_options_of_run(tmp_path, args, flag):
    code, _, err = invoke(*RUN, tmp_path / "o", *args)
    assert_one_line(code, err, flag)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, flag", [
    (["trace", "-s", "flat-rag", "-d", "demo", "-o", "{o}", "-k", "-5"], "-k"),
    (["trace", "-s", "flat-rag", "-d", "demo", "-o", "{o}", "--timeout", "nan"], "--timeout"),
    (["conform", "flat-rag", "--timeout", "0"], "--timeout"),
    (["audit", "{o}", "{o}", "--resamples", "0"], "--resamples"),
    (["audit", "{o}", "{o}", "--seed", "-1"], "--seed"),
    (["audit", "{o}", "{o}", "-k", "0"], "-k"),
    # 10**30: an array numpy cannot allocate, a k the trace files give back as a float
    (["audit", "{o}", "{o}", "--resamples", str(10**30)], "--resamples"),
    (["trace", "-s", "flat-rag", "-d", "demo", "-o", "{o}", "-k", str(10**30)], "-k"),
    (["audit", "native", "--locomo", "{o}/l.json", "-o", "{o}", "--resamples", str(10**30)],
     "--resamples"),
    (["audit", "native", "--locomo", "{o}/l.json", "-o", "{o}", "-k", str(10**30)], "-k"),
    (["audit", "native", "--locomo", "{o}/l.json", "-o", "{o}", "--retriever", "bm26"],
     "--retriever"),
    (["build", "cs", "--seed", "-1", "-o", "{o}/k.json"], "--seed"),
    # the 2.0 LoCoMo key is written, not drawn: a seed would be silently ignored
    (["build", "locomo", "--locomo", "{o}/none.json", "--version", "2.0", "--seed", "1", "-o",
      "{o}/k.json"], "--seed"),
    (["build", "cs", "--version", "3.0", "-o", "{o}/k.json"], "--version"),
    (["build", "locomo", "--locomo", "{o}/none.json", "--version", "3.0", "-o", "{o}/k.json"],
     "--version"),
    # --key is --version's old name: the same option, the same one-line refusal
    (["build", "locomo", "--locomo", "{o}/none.json", "--key", "3.0", "-o", "{o}/k.json"],
     "--version: unknown TWIST-LoCoMo version '3.0'"),
    (["build", "locomo", "--locomo", "{o}/none.json", "--key", "1.0", "--conversations",
      "conv-26", "-o", "{o}/k.json"], "(expected --version 2.0)"),
    (["build", "cs", "--paraphrase", "http://localhost:1/v1", "-o", "{o}/k.json"], "--paraphrase"),
    (["annotate", "export", "demo", "-o", "{o}", "-n", str(10**30)], "--annotators"),
    (["annotate", "export", "demo", "-o", "{o}", "--context", "-1"], "--context"),
    (["annotate", "export", "demo", "-o", "{o}", "--examples", "-1"], "--examples"),
    (["annotate", "agreement", "{o}", "-p", "{o}", "--min-kappa", "nan"], "--min-kappa")])
def test_numeric_options_of_other_verbs(tmp_path, args, flag):
    code, _, err = invoke(*[a.format(o=tmp_path / "o") for a in args])
    assert_one_line(code, err, flag)
