"""LongMemEval-S and BEAM through the dataset registry: `twist list`, `twist run` (LoCoMo-style
QA) and `twist trace` (with --conversation), on tiny files in each release format written here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_cli import items, twist


def _lme_instance(qid: str, answer_turn: str, answer: str, question: str) -> dict:
    return {
        "question_id": qid, "question_type": "single-session-user", "question": question,
        "answer": answer, "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": [f"s_{qid}_0", f"answer_{qid}_1"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "Can you suggest a quick pasta recipe for tonight?"},
             {"role": "assistant", "content": "Try aglio e olio: garlic, olive oil, chili."}],
            [{"role": "user", "content": answer_turn, "has_answer": True},
             {"role": "assistant", "content": "That sounds like a good plan.",
              "has_answer": False}],
        ],
        "answer_session_ids": [f"answer_{qid}_1"],
    }


def _longmemeval(tmp_path: Path) -> Path:
    data = [
        _lme_instance("q1", "I graduated with a degree in Business Administration last year.",
                      "Business Administration", "What degree did I graduate with?"),
        _lme_instance("q2", "My sister Maya is moving to Lisbon in the autumn.",
                      "Lisbon", "Where is my sister Maya moving?"),
        {**_lme_instance("q3_abs", "I play the cello on weekends.", "You did not mention it",
                         "Which violin teacher did I hire?")},
    ]
    p = tmp_path / "longmemeval_s.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def _beam(tmp_path: Path) -> Path:
    chat = [{"batch_number": 1, "turns": [[
        {"role": "user", "id": 0, "time_anchor": "March-15-2024",
         "content": "My first sprint ends on March 29."},
        {"role": "assistant", "id": 1, "content": "Then the review meeting fits on the 28th."},
        {"role": "user", "id": 2, "content": "The dashboard API now answers in about 250ms."},
    ]]}]
    questions = {
        "information_extraction": [{"question": "When does my first sprint end?",
                                    "answer": "March 29", "source_chat_ids": [0]}],
        "knowledge_update": [{"question": "How fast is the dashboard API now?",
                              "answer": "about 250ms", "source_chat_ids": {"updated_info": [2]}}],
        "abstention": [{"question": "What is my manager's name?",
                        "ideal_response": "That was never mentioned."}],
    }
    for tier, cid in (("1M", "1"), ("1M", "2"), ("100K", "1")):
        d = tmp_path / "beam" / "chats" / tier / cid
        (d / "probing_questions").mkdir(parents=True)
        (d / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
        (d / "probing_questions" / "probing_questions.json").write_text(json.dumps(questions),
                                                                         encoding="utf-8")
    return tmp_path / "beam"


def _assert_qa_titled(console: str, out: Path, corpus: str) -> None:
    """The QA section is titled by the run's corpus in the console table, report.md, report.html
    and report.json, and LoCoMo is named nowhere as its title."""
    md = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    js = (out / "report.json").read_text(encoding="utf-8")
    assert console.splitlines()[1].split() == [corpus], console
    assert f"| System | {corpus}: F1 ↑ / evidence recall ↑ |" in md
    assert f"**locomo** — {corpus} QA" in md
    assert f"aria-label='{corpus} QA'" in html and f"<th>{corpus}<div" in html
    assert "LoCoMo QA" not in md + html + console and "<th>LoCoMo<" not in html
    assert f'"title": "{corpus} QA"' in js and "LoCoMo QA" not in js
    # the item browser: its QA track (filter chip, lead noun, the profile's `items →` link) and
    # the explanation of each score name the corpus and its plain F1, not LoCoMo's official one
    island = re.search(r"<script type='application/json' id='items-[^']*'>(.*?)</script>", html)
    assert island is not None
    items = json.loads(island.group(1))
    assert items["tracks"] == [corpus] and items["lead"] == {corpus: "Question"}
    assert {it["t"] for it in items["items"]} == {corpus}
    assert {r["w"] for it in items["items"] for r in it["r"]} == {
        "plain token F1 against the gold answer"}
    assert f"#items?track={corpus}&amp;" in html and "LoCoMo" not in island.group(1)


def test_list_names_both_corpora_and_what_they_need() -> None:
    r = twist("list", "datasets")
    assert r.returncode == 0, r.stderr
    lines = {ln.split("│")[1].strip(): ln for ln in r.stdout.splitlines()
             if ln.count("│") >= 3 and ln.split("│")[1].strip()}
    assert "--data" in lines["longmemeval"] and "--data" in lines["beam"]


def test_longmemeval_run_and_trace(tmp_path: Path) -> None:
    data = _longmemeval(tmp_path)
    out = tmp_path / "runs"
    r = twist("run", "-d", "longmemeval", "--data", str(data), "-s", "flat-rag",
              "-S", "retriever=lexical", "-o", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    recs = items(out / "flat-rag")
    qa = [x for x in recs if x["track"] == "locomo"]
    # the abstention question is skipped (no evidence location), the other two are scored;
    # its haystack, holding no scored question, is not even ingested
    assert sorted(x["item_id"] for x in qa) == ["locomo:q1", "locomo:q2"]
    assert {x["conversation"] for x in recs} == {"q1", "q2"}
    assert all(x["error"] is None for x in recs)
    # flat-rag answers with the best turn verbatim: the evidence turn carries the answer
    assert all(x["scores"]["evidence_recall"] == 1.0 and x["scores"]["f1"] > 0 for x in qa)
    manifest = json.loads((out / "flat-rag" / "manifest.json").read_text())
    assert manifest["config"]["dataset"]["name"] == "longmemeval"
    assert len(manifest["config"]["dataset"]["sha256"]) == 64
    assert "LoCoMo" in r.stdout
    # the QA note names the corpus scored, not LoCoMo (whose QA format the track shares)
    assert ("note: QA (LongMemEval-S): 2 questions scored, 1 without an evidence location left "
            "out (key longmemeval_s)") in r.stderr and "LoCoMo" not in r.stderr
    # a saved run re-scores: the manifest says how to load the corpus again (--data included)
    rep = twist("report", str(out))
    assert rep.returncode == 0, rep.stderr
    _assert_qa_titled(rep.stdout, out, "LongMemEval-S")

    tr = tmp_path / "trace"
    r = twist("trace", "-s", "flat-rag", "-S", "retriever=lexical", "-d", "longmemeval",
              "--data", str(data), "--conversation", "q2", "-o", str(tr), "-k", "3")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in (tr / "traces.jsonl").read_text().splitlines()]
    assert [x["query_id"] for x in lines] == ["q2"]
    assert lines[0]["results"][0]["id"] == "answer_q2_1_1"  # the evidence turn ranks first
    bad = twist("trace", "-s", "flat-rag", "-d", "longmemeval", "--data", str(data),
                "--conversation", "nope", "-o", str(tmp_path / "t2"))
    assert bad.returncode == 2 and "nope" in bad.stderr


def test_beam_run_and_trace(tmp_path: Path) -> None:
    data = _beam(tmp_path)
    out = tmp_path / "runs"
    r = twist("run", "-d", "beam", "--data", str(data), "--tier", "1M", "-s", "flat-rag",
              "-S", "retriever=lexical", "-o", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    rep = twist("report", str(out))
    assert rep.returncode == 0, rep.stderr
    _assert_qa_titled(rep.stdout, out, "BEAM")
    qa = [x for x in items(out / "flat-rag") if x["track"] == "locomo"]
    assert len(qa) == 4  # 2 conversations x 2 questions with evidence; abstention skipped
    assert ("note: QA (BEAM): 4 questions scored, 2 without an evidence location left out "
            "(key 1M)") in r.stderr and "LoCoMo" not in r.stderr
    assert {x["conversation"] for x in qa} == {"chats/1M/1", "chats/1M/2"}
    assert all(x["error"] is None and x["scores"]["evidence_recall"] == 1.0 for x in qa)
    tr = tmp_path / "trace"
    r = twist("trace", "-s", "flat-rag", "-S", "retriever=lexical", "-d", "beam", "--data",
              str(data), "--tier", "1M", "--conversation", "chats/1M/2", "-o", str(tr),
              "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "2/2 queries traced" in r.stdout
    gold = [json.loads(x) for x in (tr / "gold.jsonl").read_text().splitlines()]
    assert {g["query_id"] for g in gold} == {"chats/1M/2:information_extraction:0",
                                             "chats/1M/2:knowledge_update:0"}
    audit = twist("audit", str(tr), "--resamples", "50")
    assert audit.returncode == 0, audit.stderr
