"""The offline form: one self-contained file, and what its script downloads is what
`twist annotate agreement` reads (the script's functions run under node)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest
from annotate_helpers import manifest_of, other_choice

from twistbench.annotate.answers import read_answers


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def _form(packet) -> tuple[str, _Collect]:
    html = (packet / "r1" / "form.html").read_text(encoding="utf-8")
    parsed = _Collect()
    parsed.feed(html)
    return html, parsed


def test_self_contained(packet):
    html, parsed = _form(packet)
    assert not re.search(r"https?://", html)
    assert not [t for t, a in parsed.tags if t in ("link", "img", "iframe")]
    assert not [a for t, a in parsed.tags if t == "script" and a.get("src")]
    m = manifest_of(packet)
    codes = m["annotators"]["r1"]["order"]
    sections = [a["data-code"] for t, a in parsed.tags if t == "section" and "data-code" in a]
    assert sections == codes  # every item, in the annotator's order
    radios = [a for t, a in parsed.tags if t == "input" and a.get("type") == "radio"]
    assert {a["name"] for a in radios} == {f"a-{c}" for c in codes}
    meta = json.loads(parsed.scripts[0])
    assert meta["annotator"] == "r1" and [i["code"] for i in meta["items"]] == codes
    # the guide and the full records are inside
    assert "How to annotate" in html and "Full record of" in html


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the form's script")
def test_downloads_round_trip_through_the_reader(packet, tmp_path):
    _, parsed = _form(packet)
    meta = json.loads(parsed.scripts[0])
    m = manifest_of(packet)
    codes = m["annotators"]["r1"]["codes"]
    answers = []
    for it in meta["items"]:
        item = codes[it["code"]]
        answers.append({"seq": it["seq"], "code": it["code"],
                        "answer": other_choice(m, item) if it["seq"] % 3 == 0 else
                        next(c for c, cat in m["items"][item]["choices"].items()
                             if cat == m["items"][item]["gold"]),
                        "note": 'a note, with "quotes"\nand a line' if it["seq"] == 2 else ""})
    script = tmp_path / "form.js"
    script.write_text(parsed.scripts[1])
    runner = tmp_path / "run.js"
    runner.write_text(
        "const f = require(process.argv[2]); const fs = require('fs');\n"
        "const [meta, answers] = JSON.parse(fs.readFileSync(0, 'utf8'));\n"
        "fs.writeFileSync(process.argv[3], f.answersToJson(meta, answers));\n"
        "fs.writeFileSync(process.argv[4], f.answersToCsv(meta, answers));\n"
        "const back = f.mergeLoaded(meta, JSON.parse(f.answersToJson(meta, answers)));\n"
        "if (Object.keys(back).length !== answers.length) process.exit(3);\n"
        "try { f.mergeLoaded(meta, {packet: 'x', annotator: 'r1'}); process.exit(4); }\n"
        "catch (e) { if (!/packet x/.test(e.message)) process.exit(5); }\n")
    out_json, out_csv = tmp_path / "a.json", tmp_path / "a.csv"
    r = subprocess.run(["node", str(runner), str(script), str(out_json), str(out_csv)],
                       input=json.dumps([meta, answers]), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    from_json, from_csv = read_answers(out_json, m), read_answers(out_csv, m)
    assert from_json.choices == from_csv.choices
    assert from_json.choices == {codes[a["code"]]: a["answer"] for a in answers}
    assert from_csv.notes == {codes[answers[1]["code"]]: 'a note, with "quotes"\nand a line'}
