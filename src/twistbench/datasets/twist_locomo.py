"""The committed TWIST-LoCoMo key applied to the user's locomo10.json, as a Dataset.

The key holds only what we add (injected turns, appended session dates, the gold of the four
tracks, the QA re-validation); the LoCoMo text is read from the user's file, whose sha256 must
match the one the key names. The generators are itemgen/locomo_inject.py (1.0, `twist build
locomo`) and itemgen/locomo2.py (2.0, `--key 2.0`); both versions load through
`load_locomo_dataset`.
Ids: original dia_ids never change; injected turns are "TW<session>:<n>" ("TX" for crisis turns).
"""

from __future__ import annotations

import re
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
    ReversalArc,
    UpdateChain,
)

KEY_NAME = "twist-locomo"
KEY_VERSION = "twist-locomo-1.0"
CRISIS_VERSION = "twist-locomo-1.0+crisis"
KEY2_VERSION = "twist-locomo-2.0"
INJECTED_ID = re.compile(r"^T[WX]\d+:\d+$")


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


def apply_locomo2_key(corpus: LocomoCorpus, payload: dict[str, Any], key_file: str = "key"
                      ) -> list[Conversation]:
    """The LoCoMo conversations of a 2.0 key with its turns in place and position timestamps
    (every turn of a session: the session's date plus one minute per position)."""
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for i, t in enumerate(payload.get("turns", [])):
        if not isinstance(t, dict) or not INJECTED_ID.match(str(t.get("id", ""))):
            raise InputError(key_file, "bad injected turn", where=f"payload.turns[{i}]",
                             field="id", expected="T<W|X><session>:<n>")
        by_conv.setdefault(str(t["conversation"]), []).append(t)
    appended = {(m["conversation"], int(m["session"])): m
                for m in payload.get("appended_sessions", [])}
    out: list[Conversation] = []
    for cid in payload.get("conversations", []):
        try:
            conv = corpus.conversation(cid)
        except KeyError as exc:
            raise InputError(key_file, f"conversation {cid!r} is not in the LoCoMo file",
                             field="conversations", expected="LoCoMo sample_ids") from exc
        sessions: dict[int, list[Event]] = {s: list(evs) for s, evs in conv.sessions()}
        dates = {s: evs[0].timestamp for s, evs in conv.sessions()}
        date_text = dict(conv.meta.get("session_dates", {}))
        for (c, s), m in appended.items():
            if c == cid:
                dates[s] = datetime.fromisoformat(m["timestamp"])
                date_text[str(s)] = m["date_text"]
                sessions.setdefault(s, [])
        for t in by_conv.get(cid, []):
            s = int(t["session"])
            ev = Event(id=t["id"], conversation=cid, session=s, timestamp=dates[s],
                       speaker=t["speaker"], channel="chat", text=t["text"],
                       meta={"injected": True, "date_text": date_text.get(str(s), "")})
            lst = sessions.get(s)
            if lst is None:
                raise InputError(key_file, f"turn {t['id']}: session {s} is neither in LoCoMo "
                                 "nor appended", field="session", expected="a session number")
            if t["after"] is None:
                if lst:
                    raise InputError(key_file, f"turn {t['id']} opens session {s}, which has "
                                     "turns", field="after", expected="a turn id")
                lst.append(ev)
                continue
            idx = next((i for i, e in enumerate(lst) if e.id == t["after"]), None)
            if idx is None:
                raise InputError(key_file, f"turn {t['id']}: {t['after']!r} is not in session "
                                 f"{s} of {cid}", field="after", expected="an earlier turn id")
            lst.insert(idx + 1, ev)
        events = []
        for s in sorted(sessions):
            for k, e in enumerate(sessions[s]):
                events.append(e.model_copy(update={"timestamp": dates[s] + timedelta(minutes=k)}))
        meta = dict(conv.meta, session_dates=date_text, source="locomo10+" + KEY_NAME)
        out.append(Conversation(id=cid, speakers=conv.speakers, events=events, meta=meta))
    return out


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
    key_version = str(doc["version"])
    if key_version.startswith(KEY2_VERSION):
        conversations = apply_locomo2_key(corpus, payload, str(kp))
    else:
        conversations = apply_locomo_key(corpus, payload, str(kp))
    keep = {c.id for c in conversations}
    excluded = {e["qa"]: e["reason"] for e in payload.get("revalidation", {}).get("excluded", [])}
    # A partial 2.0 key (some conversations) carries the QA of those conversations only.
    qa = [q.model_copy(update={"excluded": excluded[q.id]}) if q.id in excluded else q
          for q in corpus.qa if q.conversation in keep]
    key_sha = digest
    meta: dict[str, Any] = {"locomo_report": corpus.report.as_dict(),
                            "locomo_sha256": corpus.sha256,
                            "qa_excluded": len(excluded), "key_file": str(kp)}
    if errata:
        qa, key_version, key_sha, meta["errata"] = overlay_errata(qa, errata, locomo_path,
                                                                  key_version, digest)
    gold: dict[str, list[Any]] = {}
    for fld, cls in _GOLD_TYPES.items():
        items = []
        for i, raw in enumerate(payload.get("gold", {}).get(fld, [])):
            try:
                items.append(cls.model_validate(raw))
            except Exception as exc:  # pydantic ValidationError -> one clear InputError
                raise pydantic_to_input_error(str(kp), f"payload.gold.{fld}[{i}]", exc) from exc
        gold[fld] = items
    try:
        return Dataset(name="twist-locomo", version=key_version, key_sha256=key_sha,
                       conversations=conversations, qa=qa, meta=meta, **gold)
    except Exception as exc:
        raise pydantic_to_input_error(str(kp), "dataset", exc) from exc
