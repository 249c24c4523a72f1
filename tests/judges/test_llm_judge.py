"""The LLM judge against the loopback server: prompts, label mapping, every fault as a judge
error, scoring with judge errors counted (never scores), re-scoring from the cache."""

from __future__ import annotations

import json

import pytest
from llm_helpers import RecordingSleep, role_client
from twist_fixtures import answer_output, conversation, dataset, ok_record

from twistbench.contract import Capabilities
from twistbench.judges import JudgeError, QACase, judge_from_record, judge_record, make_judge
from twistbench.judges.base import classify_all, judge_qa_all
from twistbench.judges.llm import LLMJudge, states_text
from twistbench.llm import close_shared_clients
from twistbench.llm.loopback import Fault, Reply, last_user_message
from twistbench.llm.prompts import load_prompt
from twistbench.llm.scripted import respond
from twistbench.model import Answer, ChainQuery, FactState, QAItem, UpdateChain
from twistbench.tracks.c_supersession import TRACK as C_TRACK
from twistbench.tracks.locomo_qa import TRACK as QA_TRACK

Q = ChainQuery(id="c1:current", kind="current", text="Where does Caroline want to live now?")
MOVE = UpdateChain(id="c1", conversation="conv", speaker="Caroline", family="one_update",
                   states=[FactState(value="Europe", variants=["Sweden"], turns=["t1"],
                                     current=False),
                           FactState(value="Stockholm", turns=["t9"], current=True)],
                   queries=[Q])
BOTH = UpdateChain(id="c2", conversation="conv", speaker="Mel", family="coexisting",
                   states=[FactState(value="German", turns=["t2"], current=True),
                           FactState(value="Japanese", turns=["t5"], current=True)],
                   queries=[ChainQuery(id="c2:current", kind="current", text="Languages?")])


def label(value: str, history: bool = False) -> Reply:
    return Reply(json.dumps({"reasoning": "r", "label": value, "names_history": history}))


def test_states_are_marked_current_or_superseded_with_variants():
    assert states_text(MOVE) == ("1. Europe (also: Sweden) - SUPERSEDED\n"
                                 "2. Stockholm - CURRENT")
    assert states_text(BOTH) == "1. German - CURRENT\n2. Japanese - CURRENT"


@pytest.mark.parametrize("reply,outcome", [
    (label("current"), "current"), (label("current", True), "history"),
    (label("stale"), "stale"), (label("hedged"), "hedged"), (label("partial"), "partial"),
    (label("other"), "none"), (label("STALE "), "stale"),
])
def test_track_c_labels_map_onto_outcomes(loopback, reply, outcome):
    loopback.script(reply)
    judge = LLMJudge(client=role_client(loopback))
    v = judge.classify(MOVE, Q, Answer(text="Stockholm", evidence=["t9"]))
    assert v.outcome == outcome and v.cites_current and not v.cites_superseded
    assert v.judge == "llm:scripted"
    sent = loopback.requests[-1].body["messages"]
    assert sent == load_prompt("judge_track_c").render(
        question=Q.text, kind="current", states=states_text(MOVE), answer="Stockholm")


@pytest.mark.parametrize("fault,kind", [
    (label("maybe"), "malformed_reply"),
    (Reply(json.dumps({"label": "stale"})), "malformed_reply"),  # no names_history
    (Reply("stale, I think"), "malformed_json"),
    (Reply('{"reasoning": "r", "label": "sta', finish_reason="length"), "truncated"),
    (Fault.raw(200, "not json at all"), "malformed_response"),
])
def test_out_of_form_replies_are_judge_errors(loopback, fault, kind):
    loopback.script(fault)
    with pytest.raises(JudgeError) as e:
        LLMJudge(client=role_client(loopback)).classify(MOVE, Q, Answer(text="Stockholm"))
    assert e.value.kind == kind


def test_retries_then_a_verdict_and_exhausted_faults_are_errors(loopback):
    sleep = RecordingSleep()
    loopback.script(Fault.status_code(429, retry_after="3"), Fault.status_code(502),
                    label("current"))
    judge = LLMJudge(client=role_client(loopback, sleep=sleep))
    assert judge.classify(MOVE, Q, Answer(text="Stockholm")).outcome == "current"
    assert sleep.waits[0] == 3
    loopback.script(Fault.hang(2), Fault.hang(2))
    slow = LLMJudge(client=role_client(loopback, timeout_s=0.2, max_attempts=2))
    with pytest.raises(JudgeError) as e:
        slow.classify(MOVE, Q, Answer(text="Stockholm"))
    assert e.value.kind == "timeout"


def test_qa_grading_and_its_errors(loopback):
    judge = LLMJudge(client=role_client(loopback))
    loopback.script(Reply(json.dumps({"reasoning": "same date", "label": "CORRECT"})),
                    Reply(json.dumps({"reasoning": "other date", "label": "wrong"})),
                    Reply(json.dumps({"reasoning": "?", "label": "PARTIAL"})))
    case = QACase("When did she go?", "7 May 2023", "May 7th, 2023", 2)
    assert judge.judge_qa(case).correct
    assert not judge.judge_qa(case).correct
    with pytest.raises(JudgeError):
        judge.judge_qa(case)
    body = loopback.requests[0].body["messages"]
    assert body == load_prompt("judge_locomo").render(
        question="When did she go?", gold_answer="7 May 2023", generated_answer="May 7th, 2023")


def _by_answer(body):
    """Replies by content, so that concurrent requests get their own reply."""
    text = last_user_message(body)
    if "FAIL" in text:
        return Fault.status_code(400, message="scripted refusal")  # not retried
    return respond(body)


def test_batches_keep_their_order_and_put_errors_in_place(loopback):
    loopback.reply = _by_answer
    judge = LLMJudge(client=role_client(loopback, max_concurrency=4))
    cases = [(MOVE, Q, Answer(text=t)) for t in
             ("Stockholm", "FAIL", "Europe", "It used to be Europe, now Stockholm",
              "Paris", "Either Europe or Stockholm")]
    got = classify_all(judge, cases)
    assert [g.kind if isinstance(g, JudgeError) else g.outcome for g in got] == [
        "current", "http", "stale", "history", "none", "hedged"]
    qa = judge_qa_all(judge, [QACase("q", "7 May 2023", "7 May 2023", 2),
                              QACase("q", "7 May 2023", "FAIL", 2),
                              QACase("q", "7 May 2023", "8 May 2023", 2)])
    assert [q.correct if not isinstance(q, JudgeError) else q.kind for q in qa] == [
        True, "http", False]


# -- scoring with an LLM judge --------------------------------------------------------------


def _qa_dataset():
    conv = conversation("conv", [[("Caroline", "I went to the support group on 7 May 2023.")],
                                 [("Caroline", "I'd love to live in Europe.")],
                                 [("Caroline", "Stockholm is where I want to live now.")]])
    qas = [QAItem(id=f"q{i}", conversation="conv", question=f"When? {i}", answer="7 May 2023",
                  category=2, evidence=[]) for i in range(4)]
    qas.append(QAItem(id="q5", conversation="conv", question="Adversarial?", category=5))
    chains = [MOVE.model_copy(update={"states": [
        FactState(value="Europe", turns=["conv:2:0"], current=False),
        FactState(value="Stockholm", turns=["conv:3:0"], current=True)]})]
    return dataset([conv], qa=qas, update_chains=chains)


def _records():
    answers = {"q0": "7 May 2023", "q1": "FAIL", "q2": "8 May 2023", "q3": "on 7 May 2023",
               "q5": "Not mentioned"}
    recs = [ok_record(f"locomo:{q}", "locomo", "cat2", "conv", answer_output(a))
            for q, a in answers.items()]
    recs.append(ok_record("C:c1:c1:current", "C", "current", "conv", answer_output("FAIL")))
    return recs


def test_scores_count_judge_errors_and_never_score_them(loopback, tmp_path):
    loopback.reply = _by_answer
    ds = _qa_dataset()
    caps = Capabilities(recall=True)
    judge = LLMJudge(client=role_client(loopback, cache_path=tmp_path / "c.sqlite3"))
    qa = QA_TRACK.score(ds, _records(), caps, judge=judge)
    j = qa.metrics["j"]
    assert (j.k, j.n) == (2, 3)  # q0 and q3 correct, q2 wrong; q1's judgement failed
    assert qa.errors == {"judge": 1} and qa.details["judge_errors"] == 1
    assert qa.metrics["f1"].n == 4  # F1 needs no judge: every answer is scored
    c = C_TRACK.score(ds, _records(), caps, judge=judge)
    assert c.errors == {"judge": 1} and c.metrics["current_rate"].n == 0


def test_rescoring_reads_the_cache_without_a_call_and_offline(loopback, tmp_path, monkeypatch):
    loopback.reply = _by_answer
    cache = tmp_path / "c.sqlite3"
    ds, caps = _qa_dataset(), Capabilities(recall=True)
    with role_client(loopback, cache_path=cache) as client:
        first = QA_TRACK.score(ds, _records(), caps, judge=LLMJudge(client=client))
    calls = loopback.hits
    with role_client(loopback, cache_path=cache) as client:
        again = QA_TRACK.score(ds, _records(), caps, judge=LLMJudge(client=client))
        usage = client.usage_summary()
    # the failed judgement (a 400) was never stored: it alone is asked again, and fails again
    assert again == first and loopback.hits == calls + 1
    assert usage["cache"]["hits"] == 3 and usage["errors"] == {"http": 1}
    # no endpoint at all: the run's judge is rebuilt cache-only from the manifest's record
    for var in ("TWIST_LLM_BASE_URL", "OPENAI_BASE_URL", "TWIST_JUDGE_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TWIST_LLM_CACHE", str(cache))
    offline = judge_from_record({"name": "llm", "version": LLMJudge.version,
                                 "model": "scripted"})
    assert offline.client.config.offline
    before = loopback.hits
    third = QA_TRACK.score(ds, _records(), caps, judge=offline)
    assert third.metrics["j"] == first.metrics["j"] and loopback.hits == before
    assert third.errors == {"judge": 1}  # the miss is an error: no endpoint to ask
    close_shared_clients()


def test_make_judge_llm_records_model_and_prompts(llm_env):
    rec = judge_record(make_judge("llm"))
    assert rec["name"] == "llm" and rec["model"] == "scripted"
    assert rec["prompts"] == {"judge_locomo": load_prompt("judge_locomo").sha256,
                              "judge_track_c": load_prompt("judge_track_c").sha256}
    assert judge_record(make_judge("llm", model="other"))["model"] == "other"
