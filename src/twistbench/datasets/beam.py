"""BEAM (Tavakoli et al.) for the TIAP audit: conversations, gold and lineage.

Input: the BEAM release layout, read from the user's path: one folder per conversation holding
`chat.json` and `probing_questions/probing_questions.json`, usually under chats/<tier>/<id>/
(tiers 100K, 500K, 1M, 10M; TIAP uses the 1M slice). `path` may be one conversation folder or
any folder above several; `tier` keeps only folders under a path part equal to it.

chat.json: a list of batches {"batch_number", "turns": [[message, ...], ...]}; a message is an
object with "role", "id" (an integer, the chat id that gold cites) and "content" (others, e.g.
"time_anchor", are kept in Event.meta). Messages are found by walking the structure, so the
deeper nesting of the 10M tier reads the same way.
probing_questions.json: {ability: [question, ...]}; a question has "question", an answer field
("answer", "ideal_answer", "ideal_response" or "ideal_summary") and "source_chat_ids": a list
of chat ids or an object of such lists (e.g. {"original_info": [86], "updated_info": [114]}).

Mapping:
- Conversation id = the folder path relative to `path` ("1M/3"), or the folder name.
- Event.id = str(chat id); session = the batch number (position when absent); speaker = role;
  timestamp = the latest "time_anchor" date seen (e.g. "March-15-2024"), else 2024-01-01,
  plus one minute per message.
- A chat id that occurs twice in one chat (the data has some) gets ids "<id>", "<id>~2", ...;
  gold citing it anchors every occurrence, and the ambiguity is listed in meta["defects"].
- Query id = "<conversation>:<ability>:<index>"; anchors = the cited chat ids; category =
  ability. Skipped and reported: abstention questions (no evidence by design) and questions
  whose source ids are absent or name no message.
- Lineage of a raw-turn store: `raw_lineage(corpus.conversations)`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from twistbench.errors import InputError, load_json, read_bytes
from twistbench.model import AuditCorpus, Conversation, Event, GoldQuery

QUESTIONS = Path("probing_questions") / "probing_questions.json"
ANSWER_FIELDS = ("answer", "ideal_answer", "ideal_response", "ideal_summary")
_BASE_DATE = datetime(2024, 1, 1)
_ANCHOR_FORMATS = ("%B-%d-%Y", "%b-%d-%Y", "%Y-%m-%d", "%B %d, %Y")


def _natural(p: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.as_posix())]


def find_conversations(path: str | Path, tier: str | None = None) -> list[Path]:
    """Folders under `path` (or `path` itself) holding chat.json and the probing questions."""
    root = Path(path)
    if not root.exists():
        raise InputError(str(root), "no such file or folder", expected="a BEAM folder")
    if (root / "chat.json").is_file():
        found = [root]
    else:
        found = [p.parent for p in root.rglob("chat.json") if (p.parent / QUESTIONS).is_file()]
    if tier:
        found = [p for p in found if tier in p.relative_to(root).parts or p.name == tier]
    if not found:
        raise InputError(str(root), "no conversation folder (chat.json + "
                         f"{QUESTIONS.as_posix()})" + (f" for tier {tier!r}" if tier else ""),
                         expected="the BEAM chats/<tier>/<id>/ layout")
    return sorted(found, key=_natural)


def parse_anchor(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    for fmt in _ANCHOR_FORMATS:
        try:
            return datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
    return None


def _messages(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if {"role", "id", "content"} <= node.keys():
            yield node
            return
        for v in node.values():
            yield from _messages(v)
    elif isinstance(node, list):
        for v in node:
            yield from _messages(v)


def _batches(chat: Any) -> list[tuple[int, Any]]:
    """(session number, subtree) per batch; a chat that is not a list of batches is one."""
    if isinstance(chat, list) and chat and all(isinstance(b, dict) for b in chat):
        out = []
        for pos, b in enumerate(chat, start=1):
            num = b.get("batch_number")
            out.append((num if isinstance(num, int) and num >= 1 else pos, b))
        # sessions must not go backwards: fall back to positions if numbers do
        nums = [n for n, _ in out]
        if nums != sorted(nums):
            out = [(pos, b) for pos, (_, b) in enumerate(out, start=1)]
        return out
    return [(1, chat)]


def _flatten_ids(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flatten_ids(v)]
    if isinstance(value, list):
        return [x for v in value for x in _flatten_ids(v)]
    return [value]


def load_beam(path: str | Path, tier: str | None = None) -> AuditCorpus:
    """Read BEAM conversations and probing questions into an AuditCorpus."""
    root = Path(path)
    folders = find_conversations(root, tier)
    convs: list[Conversation] = []
    queries: list[GoldQuery] = []
    skipped: list[dict[str, str]] = []
    defects: list[dict[str, str]] = []
    for folder in folders:
        cid = folder.relative_to(root).as_posix() if folder != root else folder.name
        conv, occurrences = _conversation(folder / "chat.json", cid, defects)
        convs.append(conv)
        texts = {e.id: e.text for e in conv.events}
        qpath = folder / QUESTIONS
        qdata = _read_json(qpath)
        if not isinstance(qdata, dict):
            raise InputError(str(qpath), "top level is not an object",
                             expected="{ability: [question, ...]}")
        for ability, items in qdata.items():
            if not isinstance(items, list):
                raise InputError(str(qpath), f"ability {ability!r} is not a list",
                                 field=ability, expected="a list of questions")
            for i, q in enumerate(items):
                qid = f"{cid}:{ability}:{i}"
                where = f"{ability}[{i}]"
                if not isinstance(q, dict) or not isinstance(q.get("question"), str):
                    raise InputError(str(qpath), "question without text", where=where,
                                     field="question", expected="a string")
                if ability == "abstention":
                    skipped.append({"query_id": qid, "conversation": cid,
                                    "reason": "abstention (no evidence by design)"})
                    continue
                raw_ids = _flatten_ids(q.get("source_chat_ids", []))
                anchors: list[str] = []
                for x in raw_ids:
                    key = str(x).strip() if isinstance(x, (int, str)) and \
                        not isinstance(x, bool) else None
                    occ = occurrences.get(key or "", [])
                    if not occ:
                        defects.append({"kind": "unknown_source_id", "where": f"{cid} {where}",
                                        "detail": repr(x)})
                        continue
                    if len(occ) > 1:
                        defects.append({"kind": "ambiguous_source_id",
                                        "where": f"{cid} {where}", "detail": key or ""})
                    anchors.extend(a for a in occ if a not in anchors)
                if not anchors:
                    skipped.append({"query_id": qid, "conversation": cid,
                                    "reason": "no source_chat_ids naming a message"})
                    continue
                answer = next((str(q[f]) for f in ANSWER_FIELDS if q.get(f) not in (None, "")),
                              "")
                queries.append(GoldQuery(query_id=qid, conversation=cid, anchors=anchors,
                                         category=str(ability), question=q["question"],
                                         answer=answer,
                                         anchor_texts={a: texts[a] for a in anchors}))
    meta = {"tier": tier, "conversations": len(convs), "defects": defects, "source": str(root)}
    return AuditCorpus("beam", tier or "all", convs, queries, skipped, meta)


def _read_json(path: Path) -> Any:
    return load_json(read_bytes(path, "BEAM file"), str(path), expected="JSON")


def _conversation(path: Path, cid: str,
                  defects: list[dict[str, str]]) -> tuple[Conversation, dict[str, list[str]]]:
    chat = _read_json(path)
    events: list[Event] = []
    occurrences: dict[str, list[str]] = {}
    date = _BASE_DATE
    pos = 0
    for session, subtree in _batches(chat):
        for msg in _messages(subtree):
            raw_id = msg["id"]
            if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)) or \
                    not str(raw_id).strip():
                raise InputError(str(path), f"message id {raw_id!r}", where=f"message {pos}",
                                 field="id", expected="an integer chat id")
            if not isinstance(msg["content"], str):
                raise InputError(str(path), "message content is not text",
                                 where=f"message {pos} (id {raw_id})", field="content",
                                 expected="a string")
            key = str(raw_id).strip()
            occ = occurrences.setdefault(key, [])
            eid = key if not occ else f"{key}~{len(occ) + 1}"
            if occ:
                defects.append({"kind": "repeated_chat_id", "where": cid, "detail": key})
            occ.append(eid)
            anchor = parse_anchor(msg.get("time_anchor"))
            if anchor is not None:
                date = anchor
            meta = {k: v for k, v in msg.items() if k not in ("role", "id", "content")}
            events.append(Event(id=eid, conversation=cid, session=session,
                                timestamp=date + timedelta(minutes=pos),
                                speaker=str(msg.get("role") or "unknown"), text=msg["content"],
                                meta=meta))
            pos += 1
    if not events:
        raise InputError(str(path), "no messages found", expected='objects with "role", "id", '
                         '"content"')
    return Conversation(id=cid, speakers=["user", "assistant"], events=events), occurrences
