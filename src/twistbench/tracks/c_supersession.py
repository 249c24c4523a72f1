"""Track C: belief supersession (whitepaper §3, Track C).

Driving: each update chain has current, history and (optionally) post-resolution queries.
- current / history: one recall(query) after full ingest ("C:<chain>:<query>", PHASE_QUERY).
- post_resolution (PHASE_POST_RESOLUTION; only for systems that declare resolve and a tension
  mode): pick the system's own tension for the chain from the tensions it emitted (the one whose
  evidence overlaps the chain's state turns; see `pick_tension`), call resolve(id), then ask the
  query. A chain for which the system emitted no such tension is its own outcome ("no_tension"),
  counted and shown, never scored as current or stale.

Scoring goes through the run's `Judge` (judges/; the structural judge by default):
- current-answer rate: current queries whose answer is "current" or "history" (it gives the
  current value and marks it as current) / current queries;
- stale-answer rate: current queries answered "stale" / current queries on chains that have a
  superseded state (coexisting chains cannot be stale);
- hedged rate: "hedged" / current queries — shown beside the pair, never counted as current;
- history retention: history queries answered "history" (both states, change marked); for a
  coexisting chain, answered with every current value ("current");
- resolution responsiveness: stale rate of the current query before minus stale rate of the
  post-resolution query after, over the chains where a tension was resolved and both answers
  exist (paired; cluster-bootstrap interval).
A judgement the judge cannot make (an LLM judge's failed call) is counted in errors["judge"]
and the item left out of every rate, like a failed system call.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from twistbench.contract import Capabilities
from twistbench.judges.base import (
    Judge,
    JudgeError,
    JudgeVerdict,
    caught,
    classify_all,
    judgement_record,
)
from twistbench.judges.structural import StructuralJudge
from twistbench.model import Answer, ChainQuery, Dataset, UpdateChain
from twistbench.records import ItemRecord
from twistbench.stats import difference_metric, proportion
from twistbench.tracks.base import (
    PHASE_POST_RESOLUTION,
    PHASE_QUERY,
    ConversationState,
    EmittedTension,
    HeadlinePair,
    ItemOutcome,
    SystemView,
    Task,
    TrackResult,
)

KEY = "C"
TITLE = "Belief supersession"


def item_id(chain_id: str, query_id: str) -> str:
    return f"{KEY}:{chain_id}:{query_id}"


def post_resolution_available(caps: Capabilities) -> str | None:
    """Why the post-resolution sub-track is N/A for these capabilities, or None."""
    if not caps.resolve:
        return "system does not declare resolve"
    if not caps.tension_modes():
        return "system emits no tensions (neither online nor batch), so there is nothing to resolve"
    return None


def pick_tension(chain: UpdateChain, tensions: list[EmittedTension]
                 ) -> tuple[EmittedTension | None, str]:
    """The system's tension for this chain, and why it was picked.

    Candidates are tensions whose claim or new evidence overlaps any of the chain's state turns.
    Best: claim evidence cites a superseded state and new evidence cites a current state (the
    supersession itself); then one citing both an earlier and a later state in either role; then
    any overlap. Ties go to the earliest emitted. None when no tension touches the chain."""
    sup = {t for s in chain.superseded_states for t in s.turns}
    cur = {t for s in chain.current_states for t in s.turns}
    allt = sup | cur
    best: tuple[int, int] | None = None
    pick: EmittedTension | None = None
    why = "no emitted tension cites any of this chain's state turns"
    for pos, et in enumerate(tensions):
        claim, new = set(et.tension.claim_evidence), set(et.tension.new_evidence)
        if not (claim | new) & allt:
            continue
        if claim & sup and new & cur:
            rank, reason = 0, "claim evidence cites a superseded state, new evidence a current one"
        elif (claim | new) & sup and (claim | new) & cur:
            rank, reason = 1, "its evidence cites both a superseded and a current state"
        else:
            rank, reason = 2, "its evidence overlaps one of the chain's state turns"
        if best is None or (rank, pos) < best:
            best, pick, why = (rank, pos), et, reason
    return pick, why


def _make_recall(text: str):
    def run(guarded: SystemView, state: ConversationState) -> dict[str, Any]:
        a = guarded.recall(text)
        return {"answer": a.model_dump(mode="json")}
    return run


def _make_post_resolution(chain: UpdateChain, text: str):
    def run(guarded: SystemView, state: ConversationState) -> dict[str, Any]:
        et, why = pick_tension(chain, state.tensions)
        if et is None:
            return {"tension": None, "why": why, "answer": None}
        guarded.resolve(et.tension.id)
        a = guarded.recall(text)
        return {"tension": {"id": et.tension.id, "mode": et.mode, "session": et.session,
                            "claim_evidence": et.tension.claim_evidence,
                            "new_evidence": et.tension.new_evidence},
                "why": why, "answer": a.model_dump(mode="json")}
    return run


def _replay_post_resolution(guarded: SystemView, state: ConversationState,
                            output: dict[str, Any]) -> None:
    """A resumed run re-applies the saved resolve() so later queries see the same state."""
    if output.get("tension"):
        guarded.resolve(output["tension"]["id"])


def history_retained(chain: UpdateChain, verdict: JudgeVerdict) -> bool:
    """A history query is answered well when both states are given with the change marked; a
    coexisting chain (no superseded state) when every current value is given."""
    if chain.superseded_states:
        return verdict.outcome == "history"
    return verdict.outcome == "current"


def is_current(verdict: JudgeVerdict) -> bool:
    return verdict.outcome in ("current", "history")


class SupersessionTrack:
    key = KEY
    title = TITLE
    headline = (HeadlinePair("C", "C", KEY, "current_rate", "stale_rate", "current / stale",
                             True, False, judged=True),)

    def __init__(self, judge: Judge | None = None):
        self.judge: Judge = judge or StructuralJudge()

    def not_applicable(self, caps: Capabilities, dataset: Dataset) -> str | None:
        if not caps.recall:
            return "system does not declare recall"
        if not dataset.update_chains:
            return "dataset has no update chains"
        return None

    def tasks(self, dataset: Dataset, conversation_id: str, caps: Capabilities,
              judge: Judge | None = None) -> list[Task]:
        if self.not_applicable(caps, dataset):
            return []
        judge = judge or self.judge
        post_ok = post_resolution_available(caps) is None
        out = []
        for ch in dataset.items_of(conversation_id, "update_chains"):
            for q in ch.queries:
                req = {"call": "recall", "query": q.text}
                if q.kind == "post_resolution":
                    if not post_ok:
                        continue
                    out.append(Task(item_id=item_id(ch.id, q.id), track=KEY, kind=q.kind,
                                    conversation=conversation_id, phase=PHASE_POST_RESOLUTION,
                                    request={**req, "resolve": "system tension for the chain"},
                                    run=_make_post_resolution(ch, q.text),
                                    score=self._item_scorer(ch, q, judge),
                                    replay=_replay_post_resolution))
                else:
                    out.append(Task(item_id=item_id(ch.id, q.id), track=KEY, kind=q.kind,
                                    conversation=conversation_id, phase=PHASE_QUERY, request=req,
                                    run=_make_recall(q.text),
                                    score=self._item_scorer(ch, q, judge)))
        return out

    @staticmethod
    def _item_scorer(chain: UpdateChain, query: ChainQuery, judge: Judge):
        def score(output: dict[str, Any]) -> dict[str, Any]:
            if output.get("answer") is None:
                return {"outcome": "no_tension"}
            answer = Answer.model_validate(output["answer"])
            return judgement_record(caught(lambda: judge.classify(chain, query, answer)))
        return score

    @staticmethod
    def _judged(dataset: Dataset, records: list[ItemRecord], judge: Judge
                ) -> tuple[dict[str, tuple[UpdateChain, ChainQuery, JudgeVerdict | None]],
                           dict[str, int], dict[str, int], dict[str, JudgeError]]:
        """item id -> (chain, query, verdict or None for no_tension); errors; missing; item id
        -> the JudgeError of each judgement that failed.

        A judgement that fails is counted under errors["judge"] and its item left out, like a
        failed system call."""
        index = {item_id(ch.id, q.id): (ch, q) for ch in dataset.update_chains for q in ch.queries}
        out: dict[str, tuple[UpdateChain, ChainQuery, JudgeVerdict | None]] = {}
        errors: dict[str, int] = defaultdict(int)
        failed: dict[str, JudgeError] = {}
        seen: set[str] = set()
        to_judge: list[tuple[str, UpdateChain, ChainQuery, Answer]] = []
        for r in records:
            if r.track != KEY or r.item_id not in index:
                continue
            ch, q = index[r.item_id]
            seen.add(r.item_id)
            if not r.ok or r.output is None:
                errors[q.kind] += 1
                continue
            ans = r.output.get("answer")
            if ans is None:
                out[r.item_id] = (ch, q, None)
            else:
                to_judge.append((r.item_id, ch, q, Answer.model_validate(ans)))
        verdicts = classify_all(judge, [(ch, q, a) for _, ch, q, a in to_judge])
        for (iid, ch, q, _), verdict in zip(to_judge, verdicts):
            if isinstance(verdict, JudgeError):
                errors["judge"] += 1
                failed[iid] = verdict
                continue
            out[iid] = (ch, q, verdict)
        missing: dict[str, int] = defaultdict(int)
        for iid, (_ch, q) in index.items():
            if iid not in seen:
                missing[q.kind] += 1
        return out, dict(errors), dict(missing), failed

    def score(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
              judge: Judge | None = None) -> TrackResult:
        why = self.not_applicable(caps, dataset)
        if why:
            return TrackResult.not_applicable(KEY, TITLE, why)
        judge = judge or self.judge
        judged, errors, missing, failed = self._judged(dataset, records, judge)
        post_na = post_resolution_available(caps)
        if post_na:
            missing.pop("post_resolution", None)
        res = TrackResult(track=KEY, title=TITLE, status="scored", errors=errors, missing=missing)
        # the item views read these instead of asking the judge again (report/items.py)
        res.judgements = {iid: judgement_record(v) for iid, (_, _, v) in judged.items()
                          if v is not None}
        res.judgements.update((iid, judgement_record(e)) for iid, e in failed.items())
        cur = [(ch, v) for ch, q, v in judged.values() if q.kind == "current" and v is not None]
        hist = [(ch, v) for ch, q, v in judged.values() if q.kind == "history" and v is not None]
        outcomes: dict[str, dict[str, int]] = {}
        for kind, rows in (("current", cur), ("history", hist)):
            tally: dict[str, int] = defaultdict(int)
            for _, v in rows:
                tally[v.outcome] += 1
            outcomes[kind] = dict(sorted(tally.items()))
        with_sup = [(ch, v) for ch, v in cur if ch.superseded_states]
        m = res.metrics
        m["current_rate"] = proportion("current_rate", sum(is_current(v) for _, v in cur), len(cur),
                                       note="answer gives the current value as current")
        m["stale_rate"] = proportion("stale_rate", sum(v.outcome == "stale" for _, v in with_sup),
                                     len(with_sup),
                                     note="superseded value asserted as current; chains with a "
                                          "superseded state")
        m["hedged_rate"] = proportion("hedged_rate", sum(v.outcome == "hedged" for _, v in cur),
                                      len(cur), note="both values, currency unmarked")
        m["history_retention"] = proportion(
            "history_retention", sum(history_retained(ch, v) for ch, v in hist), len(hist))
        m["current_evidence"] = proportion(
            "current_evidence", sum(v.cites_current for _, v in cur if is_current(v)),
            sum(1 for _, v in cur if is_current(v)),
            note="current answers that cite a current state's turn")
        res.details["outcomes"] = outcomes
        res.details["judge"] = judge.name
        res.details["judge_errors"] = errors.get("judge", 0)
        # post-resolution
        if post_na:
            res.na["post_resolution"] = post_na
        else:
            post = [(ch, v) for ch, q, v in judged.values() if q.kind == "post_resolution"]
            no_tension = sum(v is None for _, v in post)
            answered = [(ch, v) for ch, v in post if v is not None and ch.superseded_states]
            res.counts["post_resolution_no_tension"] = no_tension
            res.counts["post_resolution_answered"] = sum(v is not None for _, v in post)
            m["post_stale_rate"] = proportion(
                "post_stale_rate", sum(v.outcome == "stale" for _, v in answered), len(answered),
                note="stale answers after resolve(); chains with a superseded state")
            m["post_current_rate"] = proportion(
                "post_current_rate", sum(is_current(v) for _, v in post if v is not None),
                sum(v is not None for _, v in post))
            before = {ch.id: v for ch, v in with_sup}
            per_conv: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0])
            for ch, v in answered:
                if ch.id not in before:
                    continue
                pc = per_conv[ch.conversation]
                pc[0] += before[ch.id].outcome == "stale"
                pc[1] += 1
                pc[2] += v.outcome == "stale"
                pc[3] += 1
            m["resolution_responsiveness"] = difference_metric(
                "resolution_responsiveness", {c: tuple(v) for c, v in per_conv.items()},
                note="stale rate before minus after resolve(), same chains")
            tally = defaultdict(int)
            for _, v in post:
                tally["no_tension" if v is None else v.outcome] += 1
            outcomes["post_resolution"] = dict(sorted(tally.items()))
        fam: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for ch, v in cur:
            fam[ch.family][0] += is_current(v)
            fam[ch.family][1] += 1
        res.details["current_by_family"] = {f: proportion(f, k, n).model_dump()
                                            for f, (k, n) in sorted(fam.items())}
        res.counts["chains"] = len(dataset.update_chains)
        return res

    def outcomes(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
                 judge: Judge | None = None) -> list[ItemOutcome]:
        """Per query: current (current query), not stale (post-resolution), retained (history)."""
        if self.not_applicable(caps, dataset):
            return []
        judged, _, _, _ = self._judged(dataset, records, judge or self.judge)
        out = []
        for iid, (ch, q, v) in judged.items():
            if v is None:
                continue
            if q.kind == "current":
                val = is_current(v)
            elif q.kind == "history":
                val = history_retained(ch, v)
            else:
                val = v.outcome != "stale"
            out.append(ItemOutcome(item_id=iid, item_type=f"C:{q.kind}",
                                   conversation=ch.conversation, value=float(val)))
        return out


TRACK = SupersessionTrack()
