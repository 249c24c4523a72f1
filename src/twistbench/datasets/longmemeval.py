"""LongMemEval-S (Wu et al., ICLR 2025) for the TIAP audit: conversations, gold and lineage.

Input: the released `longmemeval_s.json` (or _m / _oracle): a JSON list of instances with
question_id, question_type, question, answer, question_date, haystack_session_ids,
haystack_dates, haystack_sessions (lists of {"role", "content", "has_answer"?}) and
answer_session_ids. The file is read from the user's path, never shipped.

Mapping:
- Each instance has its own haystack, so each is one Conversation (id = question_id), sessions
  in haystack order. Turn id = "<session_id>_<turn index from 1>", the id LongMemEval's own
  retrieval code uses (src/retrieval/run_retrieval.py), over all turns (user and assistant).
  speaker = role; timestamp = the session date ("2023/05/20 (Sat) 02:21") + one minute per turn.
- Gold anchors s(q):
  granularity "turn" (default): the turns marked has_answer: true (turn-level evidence);
  granularity "session": every turn of the answer_session_ids sessions. Because targets use
  intersection (a memory is eligible if any of its sources is an anchor), this credits exactly
  the memories derived from an evidence session, as LongMemEval's session-level recall does.
- category = question_type. Skipped and reported: abstention questions (question_id ending in
  "_abs", which LongMemEval's retrieval evaluation also skips) and questions without evidence at
  the chosen granularity.
- Lineage of a raw-turn store: `raw_lineage(corpus.conversations)` (memory id = turn id).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from twistbench.errors import InputError, load_json, pydantic_to_input_error, read_bytes
from twistbench.model import AuditCorpus, Conversation, Event, GoldQuery

DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
GRANULARITIES = ("turn", "session")
_FALLBACK_DATE = datetime(2023, 1, 1)


def parse_date(text: str) -> datetime | None:
    """'2023/05/20 (Sat) 02:21' -> datetime; None when it does not parse."""
    try:
        return datetime.strptime(text.strip(), DATE_FORMAT)
    except (ValueError, AttributeError):
        return None


def load_longmemeval(path: str | Path, granularity: str = "turn",
                     limit: int | None = None) -> AuditCorpus:
    """Read a LongMemEval JSON file into conversations and audit queries.

    Raises InputError (file, instance, field) on a structurally bad instance; tolerable defects
    (unparseable dates, repeated session ids) are handled and listed in corpus.meta["defects"].
    """
    path = Path(path)
    if granularity not in GRANULARITIES:
        raise InputError(str(path), f"granularity {granularity!r}", field="granularity",
                         expected=" | ".join(GRANULARITIES))
    data = load_json(read_bytes(path, "LongMemEval file"), str(path),
                     expected="the LongMemEval JSON list")
    if not isinstance(data, list):
        raise InputError(str(path), "top level is not a list", expected="a list of instances")
    convs: list[Conversation] = []
    queries: list[GoldQuery] = []
    skipped: list[dict[str, str]] = []
    defects: list[dict[str, str]] = []
    seen: set[str] = set()
    for i, inst in enumerate(data[:limit] if limit else data):
        where = f"instance {i}"
        try:
            _instance(path, inst, i, granularity, seen, convs, queries, skipped, defects)
        except ValidationError as exc:
            raise pydantic_to_input_error(str(path), where, exc) from None
    meta = {"granularity": granularity, "instances": len(convs), "defects": defects,
            "source": str(path)}
    return AuditCorpus("longmemeval", path.stem, convs, queries, skipped, meta)


def _instance(path: Path, inst: Any, i: int, granularity: str, seen: set[str],
              convs: list[Conversation], queries: list[GoldQuery],
              skipped: list[dict[str, str]], defects: list[dict[str, str]]) -> None:
    """One instance into a conversation and (unless skipped) a query."""
    where = f"instance {i}"
    if not isinstance(inst, dict):
        raise InputError(str(path), "not an object", where=where, expected="an instance")
    qid = _str(path, inst, "question_id", where)
    where = f"instance {i} ({qid})"
    if qid in seen:
        raise InputError(str(path), f"question_id {qid!r} repeated", where=where,
                         field="question_id", expected="unique question ids")
    seen.add(qid)
    conv, anchors_turn, anchors_session = _conversation(path, inst, qid, where, defects)
    convs.append(conv)
    qtype = str(inst.get("question_type", ""))
    if qid.endswith("_abs"):
        skipped.append({"query_id": qid, "conversation": qid,
                        "reason": "abstention question (no evidence location)"})
        return
    anchors = anchors_turn if granularity == "turn" else anchors_session
    if not anchors:
        skipped.append({"query_id": qid, "conversation": qid,
                        "reason": f"no {granularity}-level evidence"})
        return
    texts = {e.id: e.text for e in conv.events}
    queries.append(GoldQuery(
        query_id=qid, conversation=qid, anchors=anchors, category=qtype,
        question=_str(path, inst, "question", where), answer=str(inst.get("answer", "")),
        anchor_texts={a: texts[a] for a in anchors}))


def _str(path: Path, inst: dict[str, Any], key: str, where: str) -> str:
    v = inst.get(key)
    if not isinstance(v, str) or not v:
        raise InputError(str(path), f"missing or empty {key}", where=where, field=key,
                         expected="a non-empty string")
    return v


def _conversation(path: Path, inst: dict[str, Any], qid: str, where: str,
                  defects: list[dict[str, str]]) -> tuple[Conversation, list[str], list[str]]:
    sids = inst.get("haystack_session_ids")
    sessions = inst.get("haystack_sessions")
    dates = inst.get("haystack_dates") or []
    if not isinstance(sids, list) or not isinstance(sessions, list) or len(sids) != len(sessions):
        raise InputError(str(path), "haystack_session_ids and haystack_sessions must be lists "
                         "of the same length", where=where, field="haystack_sessions",
                         expected="one session id per session")
    answers = inst.get("answer_session_ids") or []
    if not isinstance(answers, list) or not all(
            isinstance(a, (str, int)) and not isinstance(a, bool) for a in answers):
        raise InputError(str(path), "not a list of session ids", where=where,
                         field="answer_session_ids", expected="a list of session ids")
    if not isinstance(dates, list):
        raise InputError(str(path), f"is a {type(dates).__name__}", where=where,
                         field="haystack_dates", expected="a list of dates")
    answer_sessions = {str(a) for a in answers}
    events: list[Event] = []
    anchors_turn: list[str] = []
    anchors_session: list[str] = []
    used: set[str] = set()
    last = _FALLBACK_DATE
    for si, (sid, turns) in enumerate(zip(sids, sessions)):
        sid = str(sid)
        if not isinstance(turns, list):
            raise InputError(str(path), f"session {si} is not a list of turns", where=where,
                             field=f"haystack_sessions[{si}]", expected="a list of turns")
        base = sid
        n = 2
        while sid in used:  # a repeated session id would repeat every turn id
            sid = f"{base}~{n}"
            n += 1
        if sid != base:
            defects.append({"kind": "repeated_session_id", "where": where, "detail": base})
        used.add(sid)
        date = parse_date(dates[si]) if si < len(dates) and isinstance(dates[si], str) else None
        if date is None:
            defects.append({"kind": "unparsed_date", "where": where,
                            "detail": f"session {si}: {dates[si] if si < len(dates) else None}"})
            date = last + timedelta(hours=1)
        last = date
        for j, turn in enumerate(turns):
            if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
                raise InputError(str(path), f"turn {j} of session {si} has no text content",
                                 where=where, field=f"haystack_sessions[{si}][{j}]",
                                 expected='{"role": ..., "content": str}')
            tid = f"{sid}_{j + 1}"
            has = bool(turn.get("has_answer", False))
            events.append(Event(id=tid, conversation=qid, session=si + 1,
                                timestamp=date + timedelta(minutes=j),
                                speaker=str(turn.get("role") or "unknown"),
                                text=turn["content"],
                                meta={"session_id": base, "has_answer": has}))
            if has:
                anchors_turn.append(tid)
            if base in answer_sessions:
                anchors_session.append(tid)
    return Conversation(id=qid, speakers=["user", "assistant"], events=events), \
        anchors_turn, anchors_session
