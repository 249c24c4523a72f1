"""The committed TWIST-LoCoMo key applied to the user's locomo10.json, as a Dataset.

The key holds only what we add (injected turns, appended session dates, the gold of the four
tracks, the QA re-validation); the LoCoMo text is read from the user's file, whose sha256 must
match the one the key names. The generators are itemgen/locomo_inject.py (1.0, `twist build
locomo`) and itemgen/locomo2.py (2.0, `--version 2.0`); both versions load through
`load_locomo_dataset`.
Ids: in 1.0, original dia_ids never change and injected turns are "TW<session>:<n>" ("TX" for
crisis turns), each marked Event.meta["injected"]. In 2.0 every turn, LoCoMo's and ours, is
renumbered "D<session>:<n>" in merged order and no event says who wrote it; which turns are ours
and each original turn's LoCoMo id are in Dataset.meta["injected_turns"] / ["original_ids"]
(systems never see Dataset.meta), and LoCoMo QA and errata evidence are given in the new ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from twistbench.datasets.errata import overlay_errata
from twistbench.datasets.keyfile import read_key
from twistbench.datasets.locomo import LocomoCorpus, load_locomo
from twistbench.datasets.paths import locomo2_key_path, locomo_key_path
from twistbench.errors import InputError, pydantic_to_input_error
from twistbench.model import (
    Conversation,
    CrisisPlant,
    Dataset,
    Draft,
    EmotionalHardNegative,
    Event,
    HardNegativeArc,
    PIIPlant,
    QAItem,
    ReversalArc,
    UpdateChain,
)

KEY_NAME = "twist-locomo"
KEY_VERSION = "twist-locomo-1.0"
CRISIS_VERSION = "twist-locomo-1.0+crisis"
KEY2_VERSION = "twist-locomo-2.0"
INJECTED_ID = re.compile(r"^T[WX]\d+:\d+$")
KEY2_ID = re.compile(r"^D(\d+):(\d+)$")


def apply_locomo_key(corpus: LocomoCorpus, payload: dict[str, Any], key_file: str = "key"
                     ) -> list[Conversation]:
    """The LoCoMo conversations with the key's turns inserted (original ids untouched)."""
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for i, t in enumerate(payload.get("turns", [])):
        if not isinstance(t, dict) or not INJECTED_ID.match(str(t.get("id", ""))):
            raise InputError(key_file, "bad injected turn", where=f"payload.turns[{i}]", field="id",
                             expected="T<W|X><session>:<n>")
        by_conv.setdefault(str(t["conversation"]), []).append(t)
    known = {c.id for c in corpus.conversations}
    for cid in by_conv:
        if cid not in known:
            raise InputError(key_file, f"conversation {cid!r} is not in the LoCoMo file",
                             field="turns", expected="LoCoMo sample_ids")
    out: list[Conversation] = []
    for conv in corpus.conversations:
        sessions: dict[int, list[Event]] = {s: list(evs) for s, evs in conv.sessions()}
        session_dates = dict(conv.meta.get("session_dates", {}))
        for t in by_conv.get(conv.id, []):
            s = int(t["session"])
            ev = Event(id=t["id"], conversation=conv.id, session=s,
                       timestamp=datetime.fromisoformat(t["timestamp"]), speaker=t["speaker"],
                       channel=t.get("channel", "chat"), text=t["text"], meta={"injected": True})
            if t["after"] is None:
                if s in sessions and sessions[s]:
                    raise InputError(key_file, f"turn {t['id']} opens session {s}, which exists",
                                     field="after", expected="a turn id")
                sessions[s] = [ev]
                continue
            lst = sessions.get(s)
            idx = next((i for i, e in enumerate(lst or []) if e.id == t["after"]), None)
            if idx is None:
                raise InputError(key_file, f"turn {t['id']}: {t['after']!r} is not in session {s} "
                                 f"of {conv.id}", field="after", expected="an earlier turn id")
            lst.insert(idx + 1, ev)  # type: ignore[union-attr]
        for m in payload.get("appended_sessions", []):
            if m["conversation"] == conv.id:
                session_dates[str(m["session"])] = m["date_text"]
        events = [e for s in sorted(sessions) for e in sessions[s]]
        meta = dict(conv.meta, session_dates=session_dates, source="locomo10+" + KEY_NAME)
        out.append(Conversation(id=conv.id, speakers=conv.speakers, events=events, meta=meta))
    return out


@dataclass
class Locomo2Layout:
    """What the 2.0 loader knows and systems must not: which turns are ours, and the LoCoMo id
    each original turn had (Dataset.meta["injected_turns"] / ["original_ids"])."""

    conversations: list[Conversation]
    injected: dict[str, list[str]]  # conversation -> ids of our turns, in order
    original_ids: dict[str, dict[str, str]]  # conversation -> {LoCoMo dia_id: 2.0 id}


def _event_meta(date_text: str, caption: str | None) -> dict[str, Any]:
    # The same keys on every turn: a LoCoMo photo's url and search query (which ours lack) stay
    # in the user's locomo10.json; the caption is in the text and here, for both.
    return {"date_text": date_text, **({"blip_caption": caption} if caption else {})}


def apply_locomo2_key(corpus: LocomoCorpus, payload: dict[str, Any], key_file: str = "key"
                      ) -> Locomo2Layout:
    """The conversations of a 2.0 key, every turn renumbered D<session>:<n> in merged order.

    A turn of ours is stored with its final id, which is also its place: in a session of N
    turns, our turns sit at their numbers and LoCoMo's fill the other places in their order.
    Every turn gets the session's date plus one minute per position, and the same meta keys.
    """
    by_conv: dict[str, dict[int, dict[int, dict[str, Any]]]] = {}
    for i, t in enumerate(payload.get("turns", [])):
        m = KEY2_ID.match(str(t.get("id", ""))) if isinstance(t, dict) else None
        if m is None or int(m.group(1)) != t.get("session"):
            raise InputError(key_file, "bad turn", where=f"payload.turns[{i}]", field="id",
                             expected="D<session>:<n> with the turn's own session")
        slots = by_conv.setdefault(str(t["conversation"]), {}).setdefault(int(m.group(1)), {})
        if int(m.group(2)) in slots:
            raise InputError(key_file, f"turn {t['id']} given twice", where=f"payload.turns[{i}]",
                             field="id", expected="unique ids")
        slots[int(m.group(2))] = t
    appended = {(m["conversation"], int(m["session"])): m
                for m in payload.get("appended_sessions", [])}
    layout = Locomo2Layout([], {}, {})
    for cid in payload.get("conversations", []):
        try:
            conv = corpus.conversation(cid)
        except KeyError as exc:
            raise InputError(key_file, f"conversation {cid!r} is not in the LoCoMo file",
                             field="conversations", expected="LoCoMo sample_ids") from exc
        originals: dict[int, list[Event]] = {s: list(evs) for s, evs in conv.sessions()}
        dates = {s: evs[0].timestamp for s, evs in conv.sessions()}
        date_text = dict(conv.meta.get("session_dates", {}))
        for (c, s), m in appended.items():
            if c == cid:
                dates[s] = datetime.fromisoformat(m["timestamp"])
                date_text[str(s)] = m["date_text"]
                originals.setdefault(s, [])
        ours = by_conv.get(cid, {})
        events: list[Event] = []
        injected: list[str] = []
        id_map: dict[str, str] = {}
        for s in sorted(set(originals) | set(ours)):
            if s not in originals:
                raise InputError(key_file, f"{cid}: session {s} is neither in LoCoMo nor "
                                 "appended", field="turns", expected="a session number")
            slots = ours.get(s, {})
            size = len(originals[s]) + len(slots)
            if slots and max(slots) > size:
                raise InputError(key_file, f"{cid}: turn D{s}:{max(slots)} lies beyond the "
                                 f"{size} turns of session {s}", field="turns",
                                 expected="ids numbering the merged session from 1")
            rest = iter(originals[s])
            for n in range(1, size + 1):
                new_id, ts = f"D{s}:{n}", dates[s] + timedelta(minutes=n - 1)
                text = date_text.get(str(s), "")
                if n in slots:
                    t = slots[n]
                    events.append(Event(id=new_id, conversation=cid, session=s, timestamp=ts,
                                        speaker=t["speaker"], channel="chat", text=t["text"],
                                        meta=_event_meta(text, t.get("image"))))
                    injected.append(new_id)
                    continue
                o = next(rest)
                id_map[o.id] = new_id
                events.append(o.model_copy(update={
                    "id": new_id, "timestamp": ts,
                    "meta": _event_meta(text, o.meta.get("blip_caption"))}))
        meta = dict(conv.meta, session_dates=date_text, source="locomo10+" + KEY_NAME)
        layout.conversations.append(Conversation(id=cid, speakers=conv.speakers, events=events,
                                                 meta=meta))
        layout.injected[cid] = injected
        layout.original_ids[cid] = id_map
    return layout


def remap_qa_evidence(qa: list[QAItem], original_ids: dict[str, dict[str, str]]
                      ) -> tuple[list[QAItem], int]:
    """LoCoMo QA (and errata) evidence in the 2.0 ids; an id that names no original turn is
    dropped (it cannot be kept: the same string may now name another turn). Returns the items
    and how many ids were dropped."""
    dropped = 0
    out = []
    for q in qa:
        table = original_ids.get(q.conversation, {})
        dropped += sum(1 for e in q.evidence if e not in table)
        update: dict[str, Any] = {"evidence": [table[e] for e in q.evidence if e in table]}
        err = q.meta.get("errata")
        if isinstance(err, dict) and "evidence_was" in err:
            was = [table[e] for e in err["evidence_was"] if e in table]
            update["meta"] = dict(q.meta, errata=dict(err, evidence_was=was))
        out.append(q.model_copy(update=update))
    return out, dropped


_GOLD_TYPES = {"reversal_arcs": ReversalArc, "hard_negative_arcs": HardNegativeArc,
               "drafts": Draft, "update_chains": UpdateChain, "pii_plants": PIIPlant,
               "crisis_plants": CrisisPlant, "emotional_negatives": EmotionalHardNegative}


def load_locomo_dataset(locomo_path: str | Path, key_path: str | Path | None = None,
                        errata: str | None = None, include_crisis: bool = False,
                        version: str = KEY_VERSION) -> Dataset:
    """TWIST-LoCoMo as a Dataset: the user's LoCoMo with our turns inserted, the gold of all four
    tracks, and LoCoMo QA (re-validated-out items keep `excluded` set; the tracks skip them).

    key_path None = the committed key of `version` (twist-locomo-1.0 or twist-locomo-2.0; the
    crisis variant with include_crisis); a key file names its own version. A LoCoMo file whose
    sha256 differs from the one the key names is refused (InputError). `errata` as in
    datasets.locomo.locomo_dataset.
    """
    if version not in (KEY_VERSION, KEY2_VERSION):
        raise InputError("version", f"unknown TWIST-LoCoMo version {version!r}",
                         expected=f"{KEY_VERSION} or {KEY2_VERSION}")
    if key_path:
        kp = Path(key_path)
    else:
        kp = locomo_key_path(include_crisis) if version == KEY_VERSION else \
            locomo2_key_path(include_crisis)
        if not kp.exists():
            raise InputError(str(kp), f"the {version} key is not built",
                             expected=f"`twist build locomo` for {version}, or a key file")
    doc, digest = read_key(kp)
    if doc.get("name") != KEY_NAME:
        raise InputError(str(kp), f"this is a {doc.get('name')!r} key", field="name",
                         expected=f"{KEY_NAME!r}")
    payload = doc["payload"]
    corpus = load_locomo(locomo_path)
    want = payload.get("locomo_sha256")
    if want != corpus.sha256:
        raise InputError(str(locomo_path), f"this key ({kp.name}, {doc['version']}) applies to "
                         f"locomo10.json with sha256 {want}, but this file's sha256 is "
                         f"{corpus.sha256}", field="sha256",
                         expected="the LoCoMo release file the key was built on "
                         "(snap-research/locomo data/locomo10.json)")
    return dataset_from_payload(corpus, payload, version=str(doc["version"]), key_sha256=digest,
                                key_file=str(kp), errata=errata, locomo_path=locomo_path)


def dataset_from_payload(corpus: LocomoCorpus, payload: dict[str, Any], *, version: str,
                         key_sha256: str, key_file: str, errata: str | None = None,
                         locomo_path: str | Path | None = None) -> Dataset:
    """The Dataset a key payload (1.0 or 2.0) makes of this LoCoMo corpus (see
    load_locomo_dataset); also what `twist build locomo` audits before it writes the key. The
    payload's own `meta` (a 2.0+ key's shortcut-audit results under "gates") goes into
    Dataset.meta."""
    key_version = version
    layout = None
    if key_version.startswith(KEY2_VERSION):
        layout = apply_locomo2_key(corpus, payload, key_file)
        conversations = layout.conversations
    else:
        conversations = apply_locomo_key(corpus, payload, key_file)
    keep = {c.id for c in conversations}
    excluded = {e["qa"]: e["reason"] for e in payload.get("revalidation", {}).get("excluded", [])}
    # A partial 2.0 key (some conversations) carries the QA of those conversations only.
    qa = [q.model_copy(update={"excluded": excluded[q.id]}) if q.id in excluded else q
          for q in corpus.qa if q.conversation in keep]
    key_sha = key_sha256
    meta: dict[str, Any] = {**payload.get("meta", {}),
                            "locomo_report": corpus.report.as_dict(),
                            "locomo_sha256": corpus.sha256,
                            "qa_excluded": len(excluded), "key_file": key_file}
    if errata:
        qa, key_version, key_sha, meta["errata"] = overlay_errata(qa, errata, locomo_path,
                                                                  key_version, key_sha256)
    if layout is not None:
        # LoCoMo's ids (QA and errata evidence) become the 2.0 ids; which turns are ours stays
        # here, in Dataset.meta, which systems never see (Event.meta is passed to them).
        qa, dropped = remap_qa_evidence(qa, layout.original_ids)
        meta.update(injected_turns=layout.injected, original_ids=layout.original_ids,
                    qa_evidence_unmapped=dropped)
    else:
        meta["injected_turns"] = {c.id: [e.id for e in c.events if e.meta.get("injected")]
                                  for c in conversations}
    gold: dict[str, list[Any]] = {}
    for fld, cls in _GOLD_TYPES.items():
        items = []
        for i, raw in enumerate(payload["gold"].get(fld, [])):
            try:
                items.append(cls.model_validate(raw))
            except Exception as exc:  # pydantic ValidationError -> one clear InputError
                raise pydantic_to_input_error(key_file, f"payload.gold.{fld}[{i}]", exc) from exc
        gold[fld] = items
    try:
        return Dataset(name="twist-locomo", version=key_version, key_sha256=key_sha,
                       conversations=conversations, qa=qa, meta=meta, **gold)
    except Exception as exc:
        raise pydantic_to_input_error(key_file, "dataset", exc) from exc


def injected_turn_ids(dataset: Dataset) -> set[tuple[str, str]]:
    """(conversation, turn id) of every turn a TWIST-LoCoMo key added (any version), read from
    Dataset.meta["injected_turns"]; empty for a dataset that is not LoCoMo-based."""
    table = dataset.meta.get("injected_turns") or {}
    return {(c, t) for c, ids in table.items() for t in ids}
