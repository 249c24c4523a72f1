"""The restyle pass of TWIST-LoCoMo 2.0 (itemgen/locomo_restyle.py) with the scripted model
(llm/scripted.py) behind the loopback server: what it rewrites and refuses, the files it writes,
and how the build applies them (fresh entries only; nothing at all without files)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from twistbench.datasets.keyfile import encode_key
from twistbench.datasets.locomo import load_locomo
from twistbench.errors import InputError
from twistbench.itemgen import locomo2
from twistbench.itemgen.locomo2 import KEY_NAME, build_locomo2, written_conversations
from twistbench.itemgen.locomo_authoring import authoring_path, load_conversation, strip_image
from twistbench.itemgen.locomo_plan import read_toml
from twistbench.itemgen.locomo_restyle import (
    RestyleConfig,
    bank_line_refs,
    messages,
    read_restyle,
    restyle_path,
    run_restyle,
    text_sha256,
    units_of,
)
from twistbench.itemgen.paraphrase import refusal
from twistbench.llm.loopback import Fault, LoopbackServer
from twistbench.llm.scripted import respond, respond_restyle_dropping_a_span

CONV = "conv-26"  # the pilot: always written


@pytest.fixture(scope="module")
def locomo_path():
    from conftest import shared_file

    return shared_file("locomo", "locomo10.json")


@pytest.fixture(scope="module")
def corpus(locomo_path):
    return load_locomo(locomo_path)


@pytest.fixture(scope="module")
def placed(corpus):
    return load_conversation(corpus, CONV, crisis=True)


def _pass(corpus, folder: Path, reply, cache: Path):
    with LoopbackServer(reply) as server:
        report = run_restyle(corpus, [CONV], RestyleConfig(
            base_url=server.base_url, model="scripted", cache_dir=cache), folder)
        calls = [r for r in server.requests if r.path.endswith("/chat/completions")]
    return report, calls


@pytest.fixture(scope="module")
def restyled(corpus, tmp_path_factory):
    """One pass over conv-26 with the scripted model: (report, folder, calls)."""
    root = tmp_path_factory.mktemp("restyle")
    report, calls = _pass(corpus, root / "files", respond, root / "cache")
    return report, root / "files", calls


@pytest.fixture(scope="module")
def plain_build(locomo_path):
    return build_locomo2(locomo_path, conversations=[CONV])


def test_units_are_every_authored_turn_but_the_bank_lines(placed):
    units = units_of(placed)
    refs = {u.ref for u in units}
    injected = {t.ref for t in placed.turns() if t.injected}
    bank = bank_line_refs(placed)
    assert bank and bank <= injected
    assert refs == injected - bank  # crisis turns included
    assert any(placed.by_ref[r].crisis for r in refs)
    for ref in bank:  # an arc target or a distractor: a contrast.toml line, left as written
        assert any(ref == a["target"] for t in ("reversal", "hard_negative")
                   for a in placed.raw[t]) or any(ref == d["turn"]
                                                  for d in placed.raw["distractor"])


def test_protected_spans_hold_what_the_checker_reads(placed):
    units = {u.ref: u for u in units_of(placed)}
    for p in placed.raw["pii"]:
        joined = " ".join(units[r].protected[0] if units[r].protected else ""
                          for r in p["turns"])
        spans = [s for r in p["turns"] for s in units[r].protected]
        if p["form"] == "pattern":
            assert p["value"] in spans
        if p["form"] == "spelled":  # the spelled digits, as the turn spells them
            assert any(len(s.split()) >= 3 for s in spans), (p["id"], spans, joined)
        if p["form"] == "split":
            assert all(any(part in s for s in spans) for part in p["value"].split(" ", 1))
    for c in placed.raw["chain"]:
        for st in c["states"]:
            forms = [st["value"], *st.get("variants", [])]
            for ref in st["turns"]:
                if ref in units:
                    assert any(s.lower() == f.lower() for s in units[ref].protected
                               for f in forms), (c["id"], ref)
    for x in placed.crisis_raw["crisis"]:
        got = {s.lower() for s in units[x["turn"]].protected}
        assert {k.lower() for k in x["key_phrases"]} <= got
    for ins in placed.raw["insert"]:
        for j, _ in enumerate(ins["turns"], 1):
            ref = f"{ins['id']}.{j}"
            if ref in units:
                for kw in ins.get("keywords", []):
                    if re.search(r"(?<!\w)" + re.escape(kw), units[ref].text, re.IGNORECASE):
                        assert any(kw.lower() in s.lower()
                                   for s in units[ref].protected), (ref, kw)


def test_the_prompt_shows_the_speakers_own_turns_and_the_neighbours(placed):
    unit = units_of(placed)[0]
    user = messages(unit)[1]["content"]
    assert 12 <= len(unit.examples) <= 20
    for eid, _ in unit.examples:
        assert re.match(r"^D\d+:\d+$", eid) and placed.by_ref[eid].speaker == unit.speaker
        assert f"[{eid}]" in user
    assert unit.before in user and unit.after in user and unit.text in user
    assert messages(unit) == messages(units_of(placed)[0])  # deterministic


def test_pass_rewrites_and_the_build_applies_the_files(restyled, placed, plain_build,
                                                      locomo_path):
    report, folder, calls = restyled
    (conv,) = report.conversations
    n_units = len(units_of(placed))
    assert len(calls) == n_units == len(conv.accepted) + len(conv.kept)
    assert len(conv.accepted) > 0.8 * n_units
    rf = read_restyle(restyle_path(CONV, folder))
    assert rf.provenance["accepted"] == len(conv.accepted) == len(rf.entries)
    assert rf.provenance["kept"] == len(conv.kept)
    assert rf.provenance["model"] == "scripted" and rf.provenance["endpoint_host"] == "127.0.0.1"
    payload, rep = build_locomo2(locomo_path, conversations=[CONV], restyle_folder=folder)
    crisis_refs = {r for r in rf.entries if placed.by_ref[r].crisis}
    assert rep.restyled == len(rf.entries) - len(crisis_refs) and rep.stale == []
    meta = payload["meta"]["restyle"]
    assert meta["models"] == ["scripted"] and meta["accepted"] == rep.restyled
    texts = {t["source"]: t["text"] for t in payload["turns"]}
    before = {t["source"]: t["text"] for t in plain_build[0]["turns"]}
    for ref, (sha, text) in rf.entries.items():
        if ref in crisis_refs:
            continue
        assert strip_image(texts[ref]) == text != strip_image(before[ref])
        assert sha == text_sha256(strip_image(before[ref]))
    for ref in bank_line_refs(placed):
        assert texts[ref] == before[ref]
    # the gold is the gold: only the turns' text moved
    assert payload["gold"] == plain_build[0]["gold"]


def test_rebuild_from_the_files_is_byte_identical_without_an_endpoint(restyled, locomo_path,
                                                                      corpus, tmp_path):
    _, folder, _ = restyled
    a, ra = build_locomo2(locomo_path, conversations=[CONV], restyle_folder=folder)
    b, rb = build_locomo2(locomo_path, conversations=[CONV], restyle_folder=folder)
    assert encode_key(KEY_NAME, ra.version, a) == encode_key(KEY_NAME, rb.version, b)
    # the same pass again answers from the cache: no call, the same file
    cache = folder.parent / "cache"
    again, calls = _pass(corpus, tmp_path / "again", respond, cache)
    assert calls == [] and again.calls == 0
    first = restyle_path(CONV, folder).read_text(encoding="utf-8")
    assert restyle_path(CONV, tmp_path / "again").read_text(encoding="utf-8") == first


def test_no_restyle_files_build_exactly_what_it_built_before(plain_build, locomo_path,
                                                             tmp_path):
    (tmp_path / "empty").mkdir()
    with_empty, _ = build_locomo2(locomo_path, conversations=[CONV],
                                  restyle_folder=tmp_path / "empty")
    without, _ = build_locomo2(locomo_path, conversations=[CONV],
                               restyle_folder=tmp_path / "absent")
    payload, report = plain_build
    enc = encode_key(KEY_NAME, report.version, payload)
    assert encode_key(KEY_NAME, report.version, with_empty) == enc
    assert encode_key(KEY_NAME, report.version, without) == enc
    assert "meta" not in payload and report.restyled == 0 and report.stale == []


def test_a_rewrite_that_drops_a_span_is_refused_and_listed(corpus, placed, tmp_path):
    report, _ = _pass(corpus, tmp_path / "files", respond_restyle_dropping_a_span,
                      tmp_path / "cache")
    (conv,) = report.conversations
    units = units_of(placed)
    # the scripted model drops the first occurrence of the first span: a span said once is lost
    with_spans = {u.ref for u in units if u.protected and u.text.count(u.protected[0]) == 1}
    assert with_spans and set(conv.kept) >= with_spans
    assert all(conv.kept[r][1].startswith("drops protected") for r in with_spans)
    assert set(conv.accepted) == {u.ref for u in units} - set(conv.kept)
    # a rewrite that keeps its spans but breaks a rule in place (here the dropped span leaves
    # " ," behind in d8c.2) is reverted by the conversation check
    assert any(r.startswith("breaks a rule in place: turn ") for _, r in conv.kept.values())
    rf = read_restyle(restyle_path(CONV, tmp_path / "files"))
    assert rf.provenance["kept"] == len(conv.kept) and not set(rf.entries) & with_spans
    assert "kept " in report.render() and "drops protected" in report.render()


def test_refusal_rules():
    spans = ["555-0139"]
    assert refusal("Call me at 555-0139 anytime!", "Ring me on 555-0139!", spans) is None
    assert "drops" in refusal("Call me at 555-0139 anytime!", "Ring me anytime!", spans)
    assert refusal("Hi there, how are you?", "", []) == "empty"
    assert refusal("Hi there friend!", "Hi\nthere!", []) == "more than one line"
    assert "length" in refusal("Hi there friend!", "Hi!", [])
    assert "words" in refusal("a " * 50, "b " * 95, [], max_words=90)
    assert refusal("Sounds good, see you then.", "Sounds good, see you then?", [],
                   keep_question=True) == "asks a question"
    assert refusal("Want to come?", "You could come along.", [], keep_question=True) == \
        "no longer asks its question"


def test_an_authoring_edit_makes_its_entry_stale(restyled, locomo_path, monkeypatch, placed):
    _, folder, _ = restyled
    rf = read_restyle(restyle_path(CONV, folder))
    item_refs = set(placed.roles)
    ref = next(r for r in rf.entries if r not in item_refs and not placed.by_ref[r].crisis
               and "!" in placed.by_ref[r].text)
    iid, j = ref.rsplit(".", 1)
    real_read = read_toml

    def edited(path):
        doc = real_read(path)
        if Path(path) == authoring_path(CONV):
            for ins in doc["insert"]:
                if ins["id"] == iid:
                    turn = ins["turns"][int(j) - 1]
                    turn["text"] = turn["text"].replace("!", ".", 1)
        return doc

    monkeypatch.setattr(locomo2, "read_toml", edited)
    payload, rep = build_locomo2(locomo_path, conversations=[CONV], restyle_folder=folder)
    assert rep.stale == [f"{CONV} {ref}"] and "stale restyle entries 1" in rep.render()
    assert payload["meta"]["restyle"]["stale"] == 1
    text = next(t["text"] for t in payload["turns"] if t["source"] == ref)
    assert text == placed.by_ref[ref].text.replace("!", ".", 1)  # the edit, not the restyle


def _mutated(folder: Path, tmp_path: Path, edit) -> Path:
    out = tmp_path / "bad"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    path = restyle_path(CONV, out)
    path.write_text(edit(restyle_path(CONV, folder).read_text(encoding="utf-8")),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize(("edit", "where", "field"), [
    (lambda s: s.replace('authored_sha256 = "', 'authored_sha256 = "zz', 1), "turn[0]",
     "authored_sha256"),
    (lambda s: re.sub(r'\ntext = "[^\n]*', '\ntext = ""', s, count=1), "turn[0]", "text"),
    (lambda s: s.replace('ref = "', 'ref = "not a ref', 1), "turn[0]", "ref"),
    (lambda s: re.sub(r"\naccepted = \d+", "\naccepted = 1", s), "provenance", "accepted"),
    (lambda s: re.sub(r'\nmodel = "[^"]*"', "", s), "provenance", "model"),
    (lambda s: s.replace('\ntext = "', '\ntexte = "', 1), "turn[0]", None),
    (lambda s: re.sub(r"\nkept = \d+", "\nkept = 7", s), "provenance", "kept"),
    # d5a.2 is a reversal's target in conv-26: a bank line, never restyled
    (lambda s: s.replace('ref = "d2z.1"', 'ref = "d5a.2"', 1), "turn[0]", "ref"),
])
def test_a_malformed_file_is_an_input_error_naming_file_entry_and_field(
        restyled, tmp_path, locomo_path, edit, where, field):
    _, folder, _ = restyled
    path = _mutated(folder, tmp_path, edit)
    with pytest.raises(InputError) as exc:
        build_locomo2(locomo_path, conversations=[CONV], restyle_folder=path.parent)
    assert exc.value.file == str(path) and exc.value.where == where
    assert exc.value.field == field


def test_a_file_that_is_not_toml_is_an_input_error(restyled, tmp_path):
    _, folder, _ = restyled
    path = _mutated(folder, tmp_path, lambda s: s + "\n[[turn]\n")
    with pytest.raises(InputError, match="not valid TOML") as exc:
        read_restyle(path)
    assert exc.value.file == str(path)


def test_a_failed_call_stops_the_pass_with_nothing_written(corpus, tmp_path):
    with LoopbackServer(lambda body: Fault.status_code(503, retry_after="0")) as server:
        with pytest.raises(InputError, match="endpoint .* failed on conv-26 .*HTTP 503"):
            run_restyle(corpus, [CONV], RestyleConfig(
                base_url=server.base_url, model="m", cache_dir=tmp_path / "c", max_attempts=2),
                tmp_path / "files")
    assert not (tmp_path / "files").exists()


def test_cli_restyles_then_builds_a_partial_key(tmp_path, locomo_path):
    import subprocess
    import sys

    if CONV not in written_conversations():
        pytest.skip(f"{CONV} is not written")
    import twistbench

    out, files = tmp_path / "k.json", tmp_path / "restyle"
    # the child runs in tmp_path (its response cache lands there): import this checkout's code
    env = {**os.environ, "PYTHONPATH": str(Path(twistbench.__file__).parents[1])}
    with LoopbackServer(respond) as server:
        r = subprocess.run([sys.executable, "-m", "twistbench.cli", "build", "locomo",
                            "--locomo", str(locomo_path), "--version", "2.0",
                            "--conversations", CONV, "-o", str(out), "--restyle",
                            server.base_url, "--model", "scripted", "--restyle-dir",
                            str(files)], check=False, capture_output=True, text=True,
                           timeout=300, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert "restyle pass (scripted" in r.stdout and "restyled turns" in r.stdout
    assert restyle_path(CONV, files).exists() and (tmp_path / ".twistbench-cache").exists()
    payload = json.loads(out.read_text())["payload"]
    assert payload["meta"]["restyle"]["accepted"] > 0
    r = subprocess.run([sys.executable, "-m", "twistbench.cli", "build", "locomo", "--locomo",
                        str(locomo_path), "--restyle", "http://x/v1"], check=False,
                       capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert r.returncode == 2 and "2.0" in r.stderr


def test_the_crisis_key_applies_the_crisis_turns_too(restyled, locomo_path, placed):
    _, folder, _ = restyled
    rf = read_restyle(restyle_path(CONV, folder))
    assert any(placed.by_ref[r].crisis for r in rf.entries)
    payload, rep = build_locomo2(locomo_path, include_crisis=True, conversations=[CONV],
                                 restyle_folder=folder)
    assert rep.restyled == len(rf.entries) and rep.stale == []
    texts = {t["source"]: strip_image(t["text"]) for t in payload["turns"]}
    assert all(texts[r] == text for r, (_, text) in rf.entries.items())


def test_a_restyled_line_that_breaks_a_rule_names_the_restyle_file(restyled, tmp_path,
                                                                  locomo_path):
    _, folder, _ = restyled
    path = _mutated(folder, tmp_path, lambda s: re.sub(
        r'\ntext = "[^\n]*', '\ntext = "Yeah, an pie a day!"', s, count=1))
    with pytest.raises(InputError, match="'an pie'") as exc:
        build_locomo2(locomo_path, conversations=[CONV], restyle_folder=path.parent)
    assert str(path) in exc.value.file and str(authoring_path(CONV)) in exc.value.file


def test_the_reader_shows_each_restyled_line_over_its_authored_text(restyled, locomo_path,
                                                                   capsys):
    from twistbench.itemgen.locomo_read import main

    _, folder, _ = restyled
    rf = read_restyle(restyle_path(CONV, folder))
    ref, (_, text) = next(iter(rf.entries.items()))
    args = [CONV, "--locomo", str(locomo_path), "--restyled", str(folder)]
    assert main([*args, "--check"]) == 0
    capsys.readouterr()
    assert main([*args, "--session", "2"]) == 0
    shown = capsys.readouterr().out
    lines = shown.splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith(f"~ {ref:>9} "))
    assert text.split()[0] in lines[k] and "was: " in "\n".join(lines[k + 1:k + 4])
    assert main([CONV, "--locomo", str(locomo_path), "--session", "2"]) == 0
    assert "~ " not in capsys.readouterr().out  # without --restyled: the authored text
