"""Re-validation of LoCoMo's original QA after injection (whitepaper §4.1 (a)).

An original question is taken out of the LoCoMo score when an injected turn could perturb its
answer or its evidence:
- `subject`: an injected turn by a speaker the question is about (named in it; a question that
  names neither speaker is about both) shares a subject keyword with the question or its gold
  answer (Snowball-stemmed, so "pets" matches "pet"). Keywords are the injected item's subject
  words and slot values (e.g. pet, cat), not every word of the turn, so unrelated questions stay.
- `evidence_span`: an injected turn sits between two evidence turns of the question in the same
  session, splitting the passage the answer was read from.
Both rules are deliberately generous: a question wrongly kept would score systems against a key
our injection may have made wrong; one wrongly excluded only shrinks the sample.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import Stemmer  # PyStemmer (Snowball English): fast, and no nltk import (which pulls in scipy)

from twistbench.datasets.locomo import LocomoCorpus

_STEMMER = Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("""a an the and or of to in on at for with by from is are was were be been do does
did what which who whom when where why how that this these those it its his her their they them he
she i you we my your our me us as about into after before than then so if not no yes has have had
can could would should will shall may might""".split())


def _stems(text: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def keyword_stems(keywords: Iterable[str]) -> set[str]:
    """Stems of subject keywords (multi-word keywords split; function words dropped)."""
    return {_stem(w) for k in keywords for w in _WORD.findall(k.lower()) if w not in _STOP}


def _about(question: str, speakers: list[str]) -> set[str]:
    named = {s for s in speakers if re.search(rf"\b{re.escape(s.split()[0])}\b", question)}
    return named or set(speakers)


def revalidate(corpus: LocomoCorpus, injected: Iterable[dict[str, Any]]) -> list[tuple[str, str]]:
    """[(qa id, reason)] for every original question an injection could perturb, in QA order.

    `injected`: the key's turns, each {conversation, id, session, after, speaker, text,
    keywords}; `after` chains lead back to the original turn each injected turn follows (None
    opens an appended session); an optional `name` is the id the reasons give (2.0 chains run on
    authoring refs, its turns are named by their final ids).
    """
    turns = list(injected)
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for t in turns:
        by_conv.setdefault(t["conversation"], []).append(t)
    out: list[tuple[str, str]] = []
    for conv in corpus.conversations:
        mine = by_conv.get(conv.id, [])
        if not mine:
            continue
        pos: dict[str, tuple[int, int]] = {}
        for s, evs in conv.sessions():
            for k, e in enumerate(evs):
                pos[e.id] = (s, k)
        after = {t["id"]: t["after"] for t in mine}
        placed: list[tuple[dict[str, Any], tuple[int, int] | None]] = []
        for t in mine:
            ref = t["after"]
            while ref is not None and ref not in pos:
                ref = after.get(ref)
            placed.append((t, pos.get(ref) if ref is not None else None))
        kw = [(t, keyword_stems(t.get("keywords", []))) for t in mine]
        for q in corpus.qa:
            if q.conversation != conv.id:
                continue
            reason = _span_reason(q.evidence, pos, placed) or _subject_reason(q, conv.speakers, kw)
            if reason:
                out.append((q.id, reason))
    return out


def _span_reason(evidence: list[str], pos: dict[str, tuple[int, int]],
                 placed: list[tuple[dict[str, Any], tuple[int, int] | None]]) -> str | None:
    by_s: dict[int, list[int]] = {}
    for e in evidence:
        if e in pos:
            by_s.setdefault(pos[e][0], []).append(pos[e][1])
    for s, ks in sorted(by_s.items()):
        if len(ks) < 2:
            continue
        lo, hi = min(ks), max(ks)
        for t, p in placed:
            if p is not None and p[0] == s and lo <= p[1] < hi:
                ids = ", ".join(e for e in evidence if e in pos and pos[e][0] == s)
                return (f"evidence_span: {t.get('name', t['id'])} sits between the evidence "
                        f"turns {ids}")
    return None


def _subject_reason(q: Any, speakers: list[str],
                    kw: list[tuple[dict[str, Any], set[str]]]) -> str | None:
    about = _about(q.question, speakers)
    words = _stems(q.question) | _stems(q.answer or "") | _stems(q.adversarial_answer or "")
    for t, keys in kw:
        if t["speaker"] in about:
            shared = sorted(keys & words)
            if shared:
                return f"subject: {t.get('name', t['id'])} ({t['speaker']}; {', '.join(shared)})"
    return None
