"""Rule-based fact extraction (Mem0-style, offline): turns into dated atomic facts.

For one event:
1. split the text into sentences (abbreviation-aware; line breaks split too);
2. drop questions and social filler (fewer than two content words once greetings, praise and
   stop words are removed): they state no fact;
3. rewrite the first person to the speaker's name with verb agreement ("I'm" -> "Caroline is",
   "my" -> "Caroline's"), and relative dates to absolute ones from the event's timestamp
   ("yesterday" -> "on 7 May 2023"); a sentence that still does not name its speaker is
   attributed ("Caroline: ...");
4. keep at most `max_facts`: the most informative sentences when there are more; when there are
   fewer, split the longest compound sentences at clause boundaries ("; ", ", but ", ", and ",
   " - ") until `max_facts` is reached or nothing splits. So max_facts 1/5/8 (the TIAP density
   sweep F1/F5/F8) give one best fact, about one per sentence, and finer clauses.
5. prefix the session date: "On 8 May 2023, Caroline is ...".

Fact ids are f"{event.id}#f{i}" (i from 0, in text order); `source` is the turn id.
The parser sees only the event, never queries, answers or gold.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from twistbench.model import Event


class Fact(BaseModel):
    """One atomic, dated statement derived from a single turn."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    source: str
    speaker: str
    timestamp: datetime
    session: int = 1


_ABBREV = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "inc", "ltd",
    "co", "corp", "approx", "no", "dept", "est", "fig", "jan", "feb", "mar", "apr", "jun", "jul",
    "aug", "sep", "sept", "oct", "nov", "dec", "mon", "tue", "wed", "thu", "fri", "sat", "sun",
}
_BOUNDARY = re.compile(r"([.!?…]+[\"'”’)]*)\s+(?=[\"'“‘(]?[A-Z0-9])")

_STOP = {
    "a", "an", "the", "and", "or", "but", "if", "so", "to", "of", "in", "on", "at", "for", "with",
    "by", "from", "up", "about", "into", "over", "after", "is", "am", "are", "was", "were", "be",
    "been", "being", "have", "has", "had", "do", "does", "did", "i", "me", "my", "mine", "we",
    "us", "our", "you", "your", "he", "she", "it", "its", "they", "them", "their", "this", "that",
    "these", "those", "there", "here", "what", "which", "who", "whom", "how", "why", "when",
    "where", "just", "really", "very", "too", "also", "as", "not", "no", "yes", "all", "any",
    "can", "could", "will", "would", "should", "shall", "may", "might", "must", "i'm", "i've",
    "i'd", "i'll", "it's", "that's", "you're", "you've", "don't", "didn't", "im", "ive", "s",
    "t", "let", "lets", "let's", "one", "get", "got", "thing", "things", "some", "such", "much",
    "more", "most", "well", "now", "then", "again", "still", "even", "ever",
}
_FILLER = {
    "hey", "hi", "hello", "thanks", "thank", "thx", "wow", "cool", "great", "awesome", "nice",
    "good", "glad", "see", "yeah", "yep", "ok", "okay", "oh", "ah", "haha", "lol", "sure",
    "totally", "amazing", "love", "lovely", "fantastic", "congrats", "congratulations", "sounds",
    "bye", "cheers", "best", "regards", "sorry", "hear", "happy", "right", "absolutely",
    "definitely", "agree", "true", "morning", "afternoon", "evening", "day", "night", "take",
    "care", "soon", "talk", "catch", "later", "dear", "hope", "doing", "going", "guys", "man",
    "cute", "beautiful", "inspiring", "incredible", "stunning", "super", "pretty", "keep",
}
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’&-]*")

# Present-tense verbs that take -s after a third-person subject. Past forms need nothing.
_VERBS = {
    "think", "love", "like", "want", "need", "feel", "know", "hope", "plan", "believe", "miss",
    "prefer", "work", "live", "go", "enjoy", "hate", "wish", "mean", "guess", "remember",
    "forget", "agree", "disagree", "expect", "intend", "try", "see", "say", "get", "keep",
    "make", "take", "find", "use", "run", "own", "play", "paint", "read", "write", "teach",
    "study", "volunteer", "support", "care", "worry", "doubt", "understand", "appreciate",
    "recommend", "suggest", "consider", "struggle", "manage", "lead", "handle", "approve",
    "reject", "accept", "oppose", "favor", "favour", "trust", "value", "adore", "admire",
    "cook", "bake", "swim", "hike", "travel", "visit", "spend", "buy", "pay", "sell",
    "practice", "practise", "attend", "join", "host", "organize", "organise", "collect",
    "look", "sound", "seem", "tend", "usually", "commit", "refuse", "promise", "insist",
}
_ADVERBS = {"really", "just", "also", "still", "always", "never", "actually", "definitely",
            "absolutely", "totally", "truly", "honestly", "kinda", "sometimes", "often",
            "usually", "now", "already", "certainly", "strongly", "personally", "do", "don't"}
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "don't": "doesn't", "haven't": "hasn't",
              "was": "was", "go": "goes", "be": "is"}

_CLAUSE = re.compile(r";\s+|\s+[-–—]\s+|,\s+(?=(?:but|and|so|because|although|though|while|"
                     r"whereas|yet)\b)|\s+(?:and|but)\s+(?=(?:I|we|it|they|he|she|you|my|our|"
                     r"the)\b)")
_LEADING_FILLER = re.compile(r"^(?:(?:yeah|yes|well|oh|wow|so|haha|lol|hey|hi|ok|okay|anyway|"
                             r"honestly|actually|ah|um|hmm)\b[,!.]?\s+)+", re.IGNORECASE)


def split_sentences(text: str) -> list[str]:
    """Sentences of `text`; line breaks always split, '.' after a known abbreviation does not."""
    out: list[str] = []
    for line in re.split(r"\s*\n+\s*", text.strip()):
        if not line:
            continue
        start = 0
        for m in _BOUNDARY.finditer(line):
            before = line[start:m.start(1)].rstrip()
            last = before.split()[-1].lower().rstrip(".") if before.split() else ""
            if m.group(1).startswith(".") and (last in _ABBREV or re.fullmatch(r"[a-z]", last)):
                continue
            piece = line[start:m.end(1)].strip()
            if piece:
                out.append(piece)
            start = m.end()
        tail = line[start:].strip()
        if tail:
            out.append(tail)
    return out


def content_words(sentence: str) -> list[str]:
    """Words that carry content: not stop words, not social filler."""
    words = [w.lower().replace("’", "'") for w in _WORD.findall(sentence)]
    return [w for w in words if w not in _STOP and w not in _FILLER and len(w) > 1]


def _is_fact(sentence: str) -> bool:
    s = sentence.strip()
    if s.endswith("?"):
        return False
    return len(content_words(s)) >= 2


def _third_person(verb: str) -> str:
    low = verb.lower()
    if low in _IRREGULAR:
        out = _IRREGULAR[low]
    elif re.search(r"(s|sh|ch|x|z|o)$", low):
        out = low + "es"
    elif re.search(r"[^aeiou]y$", low):
        out = low[:-1] + "ies"
    else:
        out = low + "s"
    return out


_CONTRACTIONS = [
    (re.compile(r"\bI[’']m\b"), "{s} is"),
    (re.compile(r"\bI[’']ve\b"), "{s} has"),
    (re.compile(r"\bI[’']d\b"), "{s} would"),
    (re.compile(r"\bI[’']ll\b"), "{s} will"),
    (re.compile(r"\bIm\b"), "{s} is"),
]


def rewrite_first_person(sentence: str, speaker: str) -> str:
    """First person -> the speaker's name, with verb agreement for the common cases."""
    s = sentence
    for pat, rep in _CONTRACTIONS:
        s = pat.sub(rep.format(s=speaker), s)

    def subject(m: re.Match[str]) -> str:
        adv = m.group(1) or ""
        verb = m.group(2)
        low = verb.lower().replace("’", "'")
        if low in _IRREGULAR or low in _VERBS:
            verb = _third_person(low)
        return f"{speaker} {adv}{verb}"

    s = re.sub(r"\bI\s+((?:(?:" + "|".join(sorted(map(re.escape, _ADVERBS - {"do", "don't"})))
               + r")\s+)*)([A-Za-z’']+)", subject, s)
    s = re.sub(r"\bI\b", speaker, s)
    s = re.sub(r"\b[Mm]y\b", f"{speaker}'s", s)
    s = re.sub(r"\b[Mm]ine\b", f"{speaker}'s", s)
    s = re.sub(r"\b[Mm]yself\b", speaker, s)
    s = re.sub(r"\b(?<![A-Z]\.)me\b", speaker, s)
    return s


def _fmt(d: datetime) -> str:
    return f"{d.day} {d:%B %Y}"


def resolve_relative_dates(sentence: str, when: datetime) -> str:
    """'yesterday', 'last week', 'next month' ... -> absolute dates from the turn's timestamp."""
    day = when
    reps = [
        (r"\blast night\b", f"on the night of {_fmt(day - timedelta(days=1))}"),
        (r"\byesterday\b", f"on {_fmt(day - timedelta(days=1))}"),
        (r"\btomorrow\b", f"on {_fmt(day + timedelta(days=1))}"),
        (r"\btoday\b", f"on {_fmt(day)}"),
        (r"\btonight\b", f"on the night of {_fmt(day)}"),
        (r"\blast week\b", f"in the week before {_fmt(day)}"),
        (r"\bnext week\b", f"in the week after {_fmt(day)}"),
        (r"\blast month\b", f"in {(day.replace(day=1) - timedelta(days=1)):%B %Y}"),
        (r"\bnext month\b", f"in {(day.replace(day=28) + timedelta(days=4)):%B %Y}"),
        (r"\blast year\b", f"in {day.year - 1}"),
        (r"\bnext year\b", f"in {day.year + 1}"),
        (r"\bthis year\b", f"in {day.year}"),
    ]
    for pat, rep in reps:
        sentence = re.sub(pat, rep, sentence, flags=re.IGNORECASE)
    return sentence


def _split_clause_once(sentence: str) -> list[str] | None:
    """Split at the clause boundary nearest the middle, if both sides keep >= 3 words."""
    best: tuple[int, list[str]] | None = None
    mid = len(sentence) / 2
    for m in _CLAUSE.finditer(sentence):
        left, right = sentence[:m.start()].strip(), sentence[m.end():].strip()
        if len(left.split()) >= 3 and len(right.split()) >= 3:
            dist = abs(m.start() - mid)
            if best is None or dist < best[0]:
                best = (int(dist), [left, right])
    return best[1] if best else None


def _informativeness(sentence: str) -> tuple[int, int]:
    words = content_words(sentence)
    numbers = sum(1 for w in words if any(ch.isdigit() for ch in w))
    return (len(set(words)) + numbers, len(sentence))


def _units(text: str, max_facts: int) -> list[str]:
    units = [s for s in split_sentences(text) if _is_fact(s)]
    if len(units) > max_facts:
        ranked = sorted(range(len(units)), key=lambda i: (-_informativeness(units[i])[0], i))
        keep = sorted(ranked[:max_facts])
        return [units[i] for i in keep]
    while len(units) < max_facts:
        order = sorted(range(len(units)), key=lambda i: (-len(units[i]), i))
        for i in order:
            parts = _split_clause_once(units[i])
            if parts and all(_is_fact(p) for p in parts):
                units[i:i + 1] = parts
                break
        else:
            break
    return units


def extract_facts(event: Event, max_facts: int = 5) -> list[Fact]:
    """At most `max_facts` dated atomic facts from one turn (none for greetings, questions)."""
    if max_facts < 1:
        raise ValueError("max_facts must be >= 1")
    speaker = event.speaker
    facts: list[Fact] = []
    for unit in _units(event.text, max_facts):
        unit = _LEADING_FILLER.sub("", unit).strip() or unit
        body = resolve_relative_dates(rewrite_first_person(unit, speaker), event.timestamp)
        if speaker.lower() not in body.lower():
            body = f"{speaker}: {body}"
        body = body.rstrip()
        if body[-1:] not in ".!?":
            body += "."
        first = body.split()[0]
        if first.lower().strip(",:") in _STOP | _FILLER and first != "I":
            body = body[0].lower() + body[1:]  # mid-sentence after the date prefix
        text = f"On {_fmt(event.timestamp)}, {body}"
        facts.append(Fact(id=f"{event.id}#f{len(facts)}", text=text, source=event.id,
                          speaker=speaker, timestamp=event.timestamp, session=event.session))
    return facts
