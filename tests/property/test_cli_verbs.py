"""Every `twist` verb, fed damaged files and odd option values through the console entry point:
it succeeds (0, or 1 for a failed check), or exits 2 with one line naming the file or option —
never a traceback, never an internal error (3), never a half-written output."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mutations import (
    NASTY_VALUES,
    LineDamage,
    assert_error_names_damage,
    budget,
    damaged_text_lines,
    mini_locomo,
    mutated_bytes,
    mutated_json,
    mutated_text_lines,
)

from twistbench.cli import run_cli
from twistbench.datasets.demo import demo_dataset
from twistbench.datasets.keyfile import encode_key

_n = itertools.count()
DEMO = demo_dataset()
DEMO_KEY = json.loads(encode_key(DEMO.name, DEMO.version, DEMO.model_dump(mode="json")))
CHEAP = settings(max_examples=budget(10))  # each example runs a whole command


def invoke(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_cli([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def check(code: int, err: str) -> None:
    """The promise: success, a failed check, or one line of bad input."""
    assert code in (0, 1, 2), (code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 2:
        lines = [x for x in err.splitlines() if x.strip() and not x.startswith("note:")]
        assert len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) > 12, err


def check_names_damage(code: int, err: str, damage: LineDamage, lines: list[str]) -> None:
    """`check`, and where the refusal is about one damaged JSON line, its one line names that
    record and field (`assert_error_names_damage`)."""
    check(code, err)
    if code == 2:
        assert_error_names_damage(next(x for x in err.splitlines() if x.startswith("error: ")),
                                  damage, lines)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cli")


def fresh(scratch: Path, name: str) -> Path:
    path = scratch / f"{next(_n)}-{name}"
    return path


def put(scratch: Path, name: str, data: bytes | str) -> Path:
    path = fresh(scratch, name)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo-run")
    code, _, err = invoke("run", "-d", "demo", "-s", "toy_systems:KeywordToy", "--no-progress",
                          "-o", out)
    assert code == 0, err
    return out / "keyword-toy"


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("trace") / "t"
    code, _, err = invoke("trace", "-s", "flat-rag", "-d", "demo", "-o", out)
    assert code == 0, err
    return out


@given(doc=mutated_json(DEMO_KEY))
@CHEAP
def test_run_and_validate_with_a_damaged_key(scratch, doc):
    key = put(scratch, "key.json", json.dumps(doc))
    out = fresh(scratch, "out")
    code, _, err = invoke("run", "-d", key, "-s", "oracle", "-t", "B", "--no-progress", "-o",
                          out, "--max-error-rate", "1")
    check(code, err)
    if code == 2:
        assert not out.exists() or not any(out.rglob("items.jsonl")), "half-written run"


@given(data=mutated_bytes(json.dumps(DEMO_KEY).encode()))
@settings(max_examples=budget(15))
def test_validate_with_damaged_key_bytes(scratch, data):
    key = put(scratch, "key.json", data)
    code, _, err = invoke("validate", key, "--no-progress", "-o", fresh(scratch, "v"))
    check(code, err)


@given(doc=mutated_json(mini_locomo()))
@CHEAP
def test_locomo_verbs_with_a_damaged_locomo(scratch, doc):
    locomo = put(scratch, "locomo10.json", json.dumps(doc))
    code, _, err = invoke("run", "-d", "locomo", "--locomo", locomo, "-s", "flat-rag",
                          "--no-progress", "-o", fresh(scratch, "o"), "--max-error-rate", "1")
    check(code, err)
    key = fresh(scratch, "k.json")
    code, _, err = invoke("build", "locomo", "--locomo", locomo, "-o", key)
    check(code, err)
    if code == 2:
        assert not key.exists(), "half-written key"


def _copy_run(scratch: Path, src: Path) -> Path:
    dst = fresh(scratch, "runs") / src.name
    shutil.copytree(src, dst)
    return dst


@given(data=st.data())
@CHEAP
def test_report_compare_export_with_a_damaged_run_folder(scratch, demo_run, data):
    run = _copy_run(scratch, demo_run)
    if data.draw(st.booleans()):
        man = json.loads((run / "manifest.json").read_text())
        (run / "manifest.json").write_text(json.dumps(data.draw(mutated_json(man))))
        verify = check  # one JSON document, not records by line
        verify = check
    else:
        lines = (run / "items.jsonl").read_text().splitlines()
        damaged, damage = data.draw(damaged_text_lines(lines))
        (run / "items.jsonl").write_text("\n".join(damaged))

        def verify(code: int, err: str) -> None:
            check_names_damage(code, err, damage, damaged)
    out = fresh(scratch, "report")
    code, _, err = invoke("report", run, "-o", out)
    verify(code, err)
    if code == 2:
        assert not (out / "report.md").exists(), "half-written report"
    verify(*invoke("compare", run, demo_run)[::2])
    preds = fresh(scratch, "p.jsonl")
    code, _, err = invoke("export-predictions", run, "-o", preds)
    verify(code, err)
    code, _, err = invoke("run", "-d", "demo", "-s", "toy_systems:KeywordToy", "--no-progress",
                          "-o", run.parent)  # resume over the damaged folder
    check(code, err)


PREDICTIONS = [json.dumps({"item_id": d.id, "aligned": True, "evidence": []})
               for d in DEMO.drafts]


@given(damaged=damaged_text_lines(PREDICTIONS))
@CHEAP
def test_score_predictions(scratch, damaged):
    lines, damage = damaged
    preds = put(scratch, "p.jsonl", "\n".join(lines))
    out = fresh(scratch, "o")
    code, _, err = invoke("score-predictions", preds, "-d", "demo", "-o", out)
    check_names_damage(code, err, damage, lines)
    if code == 2:
        assert not (out / "report.md").exists()


@given(data=st.data())
@CHEAP
def test_audit_with_damaged_traces(scratch, trace_dir, data):
    bad = fresh(scratch, "t")
    shutil.copytree(trace_dir, bad)
    name = data.draw(st.sampled_from(["traces.jsonl", "gold.jsonl", "lineage.jsonl"]))
    lines = (bad / name).read_text().splitlines()
    verify = check
    if data.draw(st.booleans()):
        damaged, damage = data.draw(damaged_text_lines(lines))
        (bad / name).write_text("\n".join(damaged))

        def verify(code: int, err: str) -> None:
            check_names_damage(code, err, damage, damaged)
    else:
        (bad / name).write_bytes(data.draw(mutated_bytes("\n".join(lines).encode())))
    out = fresh(scratch, "audit")
    code, _, err = invoke("audit", bad, trace_dir, "--resamples", "20", "-o", out)
    verify(code, err)


CASE = {"case_id": "c1", "run": "r", "query_id": "q", "conversation": "c", "category": "1",
        "question": "q?", "answer": "a", "anchors": ["a1"], "evidence": {"a1": "t"},
        "credited_memory_id": "m", "credited_text": "t", "credited_sources": ["a1"],
        "credited_rank": 1, "rank_bucket": "1", "source_first_hit": 1}


@given(cases=mutated_text_lines([json.dumps(CASE)]),
       labels=mutated_bytes(b"case_id,rater,label\nc1,ann,supports\nc1,bo,partial\n"))
@CHEAP
def test_audit_labels(scratch, cases, labels):
    # both files are damaged, so only `check`: the one line may rightly name the labels CSV
    out = fresh(scratch, "sem.json")
    code, _, err = invoke("audit", "labels", put(scratch, "c.jsonl", "\n".join(cases)),
                          put(scratch, "l.csv", labels), "-o", out)
    check(code, err)
    if code == 2:
        assert not out.exists()


ODD = st.sampled_from([str(v) for v in NASTY_VALUES if not isinstance(v, (list, dict))]
                      + ["nan", "inf", "-inf", "-0", "1e400", "0x10", "--", "-1", "abc"])


@given(timeout=ODD, rate=ODD, seed=ODD, cap=ODD)
@CHEAP
def test_run_option_values(scratch, timeout, rate, seed, cap):
    code, _, err = invoke("run", "-d", "demo", "-s", "oracle", "-t", "B", "--no-progress",
                          "-o", fresh(scratch, "o"), "--timeout", timeout, "--max-error-rate",
                          rate, "--seed", seed, "--max-output-bytes", cap)
    check(code, err)


@given(spec=ODD | st.sampled_from(["collections:OrderedDict", "os:getcwd", "json:loads",
                                   "builtins:object", "nope.mod:X", "/etc/passwd:X", ":",
                                   "flat-rag"]),
       key=st.sampled_from(["api_key", "colour", "k", "", "a=b", "[/]"]), value=ODD)
@CHEAP
def test_conform_and_trace_with_odd_systems_and_options(scratch, spec, key, value):
    check(*invoke("conform", spec, "-S", f"{key}={value}", "--timeout", "30")[::2])
    check(*invoke("trace", "-s", spec, "-S", f"{key}={value}", "-d", "demo", "-o",
                  fresh(scratch, "t"), "-k", "3")[::2])


@given(k=ODD, resamples=ODD, seed=ODD)
@CHEAP
def test_audit_option_values(scratch, trace_dir, k, resamples, seed):
    check(*invoke("audit", trace_dir, trace_dir, "-k", k, "--resamples", resamples, "--seed",
                  seed)[::2])


@given(what=ODD, out=ODD)
@settings(max_examples=budget(15))
def test_list_and_schema(scratch, what, out):
    check(*invoke("list", what)[::2])
    target = scratch / "schema" / out.replace("/", "_")[:40] if out.strip("/. ") else scratch
    check(*invoke("schema", "-o", target)[::2])


# -- annotation and errata (the answer-key verbs) ---------------------------------------------


@pytest.fixture(scope="module")
def demo_key(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("key") / "demo-key.json"
    path.write_text(json.dumps(DEMO_KEY))
    return path


@given(n=ODD, sample=ODD, examples=ODD, context=ODD, seed=ODD)
@CHEAP
def test_annotate_export_option_values(scratch, demo_key, n, sample, examples, context, seed):
    out = fresh(scratch, "packet")
    code, _, err = invoke("annotate", "export", demo_key, "-o", out, "-n", n, "--sample",
                          sample, "--examples", examples, "--context", context, "--seed", seed)
    check(code, err)


@given(doc=mutated_json(DEMO_KEY))
@CHEAP
def test_annotate_export_with_a_damaged_key(scratch, doc):
    key = put(scratch, "key.json", json.dumps(doc))
    check(*invoke("annotate", "export", key, "-o", fresh(scratch, "packet"))[::2])


@given(item=ODD | st.sampled_from([d.id for d in DEMO.drafts]),
       action=st.sampled_from(["drop", "relabel", "burn", ""]),
       label=ODD | st.sampled_from(["aligned", "contradicting", "hard_negative"]),
       reason=ODD)
@CHEAP
def test_errata_verbs(scratch, demo_key, item, action, label, reason):
    folder = fresh(scratch, "errata")
    folder.mkdir()
    key = folder / "demo-key.json"
    key.write_bytes(demo_key.read_bytes())
    check(*invoke("errata", "add", key, "--item", item, "--reason", reason, "--action", action,
                  "--label", label, "--evidence", "demo-acme:1:1")[::2])
    check(*invoke("errata", "list", key)[::2])
    check(*invoke("errata", "apply", key, "-o", folder / "next.json")[::2])


@given(answers=mutated_bytes(b'{"answers": []}'), kappa=ODD)
@settings(max_examples=budget(10))
def test_annotate_agreement_and_adjudicate(scratch, demo_key, answers, kappa):
    packet = fresh(scratch, "packet")
    code, _, err = invoke("annotate", "export", demo_key, "-o", packet, "--seed", "1")
    assert code == 0, err
    a1 = put(scratch, "a1.json", answers)
    check(*invoke("annotate", "agreement", a1, a1, "-p", packet, "--min-kappa", kappa)[::2])
    queue = put(scratch, "queue.jsonl", answers)
    decisions = put(scratch, "queue.csv", answers)
    check(*invoke("annotate", "adjudicate", demo_key, queue, decisions, "-o",
                  fresh(scratch, "next.json"))[::2])


# -- audit native and build cs ----------------------------------------------------------------

# One conversation, lexical only, one density, 20 resamples: each example traces 3 questions over
# 6 turns, a fraction of a second. (Dense would load a sentence model; the matrix is the same
# code for both retrievers.)
NATIVE_SMALL = ["--retriever", "lexical", "--max-facts", "1", "--resamples", "20", "-k", "5",
                "--conversation", "conv-1"]


def _native_output_is_whole(out: Path) -> None:
    """Exit 2 leaves no audit behind: the audit is written only after every trace succeeded."""
    assert not (out / "audit" / "audit.json").exists(), "half-written native audit"


@given(doc=mutated_json(mini_locomo(1)))
@CHEAP
def test_audit_native_with_a_damaged_locomo(scratch, doc):
    locomo = put(scratch, "locomo10.json", json.dumps(doc))
    out = fresh(scratch, "native")
    code, _, err = invoke("audit", "native", "--locomo", locomo, "-o", out, *NATIVE_SMALL)
    check(code, err)
    if code == 2:
        _native_output_is_whole(out)


NATIVE_VALID = {"--retriever": "lexical", "--max-facts": "1", "-k": "5",
                "--conversation": "conv-1", "--resamples": "20", "--seed": "1"}


@given(damaged=st.lists(st.sampled_from(sorted(NATIVE_VALID)), min_size=1, max_size=2,
                        unique=True),
       value=ODD | st.sampled_from(["dense-ish", "conv-2", "0"]), data=st.data())
@CHEAP
def test_audit_native_option_values(scratch, damaged, value, data):
    # one or two options damaged, the rest valid: were all damaged at once, the first check
    # would refuse every example and the later checks would never run
    options = dict(NATIVE_VALID)
    for flag in damaged:
        options[flag] = value if flag == damaged[0] else data.draw(ODD)
    locomo = put(scratch, "locomo10.json", json.dumps(mini_locomo(1)))
    out = fresh(scratch, "native")
    code, _, err = invoke("audit", "native", "--locomo", locomo, "-o", out,
                          *itertools.chain.from_iterable(options.items()))
    check(code, err)
    if code == 2:
        _native_output_is_whole(out)


ODD_PATHS = st.sampled_from(["", ".", "/", "/proc/version/x.json", "/dev/null", "exists-as-dir",
                             "under-a-file/key.json", "a" * 300 + ".json", "[/].json",
                             "\x1b[2J.json", "ok.json"])


@given(damaged=st.lists(st.sampled_from(["version", "seed", "out", "paraphrase", "model"]),
                        max_size=2, unique=True),
       version=ODD | st.sampled_from(["2.0", "1.0", "3.0", "2"]), seed=ODD | st.just("7"),
       out=ODD_PATHS, paraphrase=st.sampled_from(["http://127.0.0.1:9/v1", "[/]", ""]),
       model=st.sampled_from(["m", "", "[/]"]))
@CHEAP
def test_build_cs_option_values(scratch, monkeypatch, damaged, version, seed, out, paraphrase,
                                model):
    """The options of `twist build cs`, none, one or two of them odd (all at once, the first
    check would refuse every example). A whole build takes minutes, so the builders are
    replaced by a recorder: what is asserted is that every option is checked before a builder
    runs (one line, exit 2) and that a builder is only ever called with checked values. The
    builds themselves are tested in tests/itemgen/test_cs2_key.py and test_gates.py."""
    from twistbench.itemgen import cs2, cs_workspace

    calls: list[dict] = []

    class Passed:
        passes = True

    def build_2(**kw):
        calls.append(kw)
        return "0" * 64

    def build_1(**kw):
        calls.append(kw)
        return "0" * 64, Passed()

    monkeypatch.setattr(cs2, "run_build", build_2)
    monkeypatch.setattr(cs_workspace, "run_build_cs", build_1)
    folder = fresh(scratch, "cs")
    folder.mkdir()
    (folder / "exists-as-dir").mkdir()
    (folder / "under-a-file").write_text("x")
    target = out if out.startswith("/") or not out else str(folder / out)
    args = ["build", "cs", "--version", version if "version" in damaged else "2.0",
            "--seed", seed if "seed" in damaged else "7",
            "-o", target if "out" in damaged else str(folder / "ok.json")]
    if "paraphrase" in damaged:
        args += ["--paraphrase", paraphrase]
    if "model" in damaged:
        args += ["--model", model]
    code, _, err = invoke(*args)
    check(code, err)
    if code == 2:
        assert not calls, "a builder ran with options the command then refused"
    for kw in calls:
        assert isinstance(kw["seed"], int) and kw["seed"] >= 0, kw
        # the key writer creates missing folders; the nearest existing one must be a folder
        written = Path(kw["out"])
        nearest = next(p for p in written.parents if p.exists())
        assert not written.is_dir() and nearest.is_dir(), kw
        assert kw.get("paraphrase") is None or ("version" in damaged and version == "1.0"), kw
