"""What the shortcut baselines may look at: a turn's context, its non-text features, the
dataset's own lexicon (people, companies, slot values) and wording skeletons.

Nothing here reads a label. Item turns and injected turns are found from the records:
- item turns: every turn id any TWIST item cites (anchors, drift, reversals, look-alike turns,
  draft evidence, chain states, PII / crisis plants, emotional negatives) through
  `model._turn_refs`, the same function that checks a key's references; LoCoMo QA evidence is
  the original dataset's, not the key's, and is left out;
- injected turns: the TWIST-LoCoMo loader lists them in `Dataset.meta["injected_turns"]`
  (datasets/twist_locomo.py `injected_turn_ids`; 2.0 keeps them there only, so that no event
  tells a system which turns are ours), and a 1.0 key also marks each with
  `Event.meta["injected"] is True` (`apply_locomo_key`). Neither relies on an id prefix, so a
  key that names its turns differently is still read right.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from twistbench.datasets.twist_locomo import injected_turn_ids
from twistbench.model import Conversation, Dataset, Event, _turn_refs

CHANNELS = ("chat", "slack", "email", "call")
TurnKey = tuple[str, str]  # (conversation id, turn id)


def speaker_role(conv: Conversation, speaker: str) -> str:
    """The speaker's role: TWIST-CS records it in the workspace meta ("csm", "champion", ...);
    in a two-person LoCoMo conversation it is the speaker's slot ("speaker1" / "speaker2")."""
    roles = conv.meta.get("roles")
    if isinstance(roles, dict) and speaker in roles:
        return str(roles[speaker])
    if speaker in conv.speakers:
        return f"speaker{conv.speakers.index(speaker) + 1}"
    return "other"


@dataclass(frozen=True)
class TurnInfo:
    """One turn with the context a reader of the corpus can see (no gold)."""

    event: Event
    role: str
    conv_pos: int
    conv_len: int
    session_rank: int  # 0-based ordinal of its session within the conversation
    n_sessions: int
    session_pos: int
    session_len: int
    thread_pos: int  # 0 / 0 when the turn has no thread
    thread_len: int
    prev: Event | None
    next: Event | None


class TurnIndex:
    """Every turn of a dataset with its context, in corpus order."""

    def __init__(self, dataset: Dataset):
        self.infos: list[TurnInfo] = []
        self.position: dict[TurnKey, int] = {}
        for conv in dataset.conversations:
            sessions = conv.sessions()
            threads = Counter(ev.thread for ev in conv.events if ev.thread)
            thread_seen: Counter[str] = Counter()
            pos = 0
            for rank, (_, events) in enumerate(sessions):
                for spos, ev in enumerate(events):
                    tpos = 0
                    if ev.thread:
                        tpos = thread_seen[ev.thread]
                        thread_seen[ev.thread] += 1
                    info = TurnInfo(
                        event=ev, role=speaker_role(conv, ev.speaker), conv_pos=pos,
                        conv_len=len(conv.events), session_rank=rank, n_sessions=len(sessions),
                        session_pos=spos, session_len=len(events), thread_pos=tpos,
                        thread_len=threads[ev.thread] if ev.thread else 0,
                        prev=conv.events[pos - 1] if pos > 0 else None,
                        next=conv.events[pos + 1] if pos + 1 < len(conv.events) else None)
                    self.position[(conv.id, ev.id)] = len(self.infos)
                    self.infos.append(info)
                    pos += 1
        self.roles = sorted({i.role for i in self.infos})

    def __len__(self) -> int:
        return len(self.infos)

    def info(self, conversation: str, turn: str) -> TurnInfo:
        return self.infos[self.position[(conversation, turn)]]

    def feature_names(self) -> list[str]:
        return [*TURN_FEATURES, *(f"channel={c}" for c in CHANNELS),
                *(f"role={r}" for r in self.roles)]

    def features(self, infos: Sequence[TurnInfo]) -> np.ndarray:
        """Non-text features of these turns, one row each (columns: feature_names())."""
        return np.array([turn_features(i, self.roles) for i in infos], dtype=np.float64)


def item_turns(dataset: Dataset) -> set[TurnKey]:
    """Every turn cited by a TWIST item of any track (not LoCoMo QA evidence)."""
    out: set[TurnKey] = set()
    for fld in Dataset.ITEM_FIELDS:
        if fld == "qa":
            continue
        for item in getattr(dataset, fld):
            out.update((item.conversation, t) for t in _turn_refs(item))
    return out


def injected_turns(dataset: Dataset) -> set[TurnKey]:
    """Turns a LoCoMo-based key inserted into the original conversations (module docstring)."""
    marked = {(c.id, e.id) for c in dataset.conversations for e in c.events
              if e.meta.get("injected") is True}
    return marked | injected_turn_ids(dataset)


# ---------------------------------------------------------------------------------------------
# Non-text features

TURN_FEATURES = (
    "chars", "words", "mean_word_len", "questions", "exclamations", "commas", "periods",
    "other_punct", "ends_with_question", "digits", "entities", "session", "session_frac",
    "session_pos", "session_pos_frac", "session_len", "conv_pos_frac", "thread_pos",
    "thread_len", "prev_same_speaker", "prev_is_question", "next_same_speaker", "ts_second",
    "hour", "weekday", "log_gap_prev_s", "log_gap_next_s",
)
_OTHER_PUNCT = set(string.punctuation) - set("?!,.")
_WORD = re.compile(r"\S+")
_PRONOUN_I = frozenset({"I", "I'm", "I've", "I'd", "I'll", "I’m", "I’ve", "I’d", "I’ll"})


def entity_count(text: str) -> int:
    """Capitalised words that do not open a sentence (and are not "I"): a model-free count of
    named entities (people, companies, places, products, months)."""
    n = 0
    start = True
    for m in _WORD.finditer(text):
        tok = m.group().strip("\"'“”‘’([{")
        if tok and tok[0].isupper() and not start and tok.rstrip(".,!?;:") not in _PRONOUN_I:
            n += 1
        start = tok.endswith((".", "!", "?")) or text[m.end():m.end() + 1] == "\n"
    return n


def _gap_seconds(a: Event | None, b: Event | None) -> float:
    if a is None or b is None:
        return 0.0
    return math.log1p(abs((b.timestamp - a.timestamp).total_seconds()))


def turn_features(info: TurnInfo, roles: Sequence[str]) -> list[float]:
    ev = info.event
    text = ev.text
    words = text.split()
    ts = ev.timestamp
    row = [
        len(text), len(words), (sum(len(w) for w in words) / len(words)) if words else 0.0,
        text.count("?"), text.count("!"), text.count(","), text.count("."),
        sum(ch in _OTHER_PUNCT for ch in text), float(text.rstrip().endswith("?")),
        sum(ch.isdigit() for ch in text), entity_count(text),
        ev.session, info.session_rank / max(info.n_sessions - 1, 1),
        info.session_pos, info.session_pos / max(info.session_len - 1, 1), info.session_len,
        info.conv_pos / max(info.conv_len - 1, 1), info.thread_pos, info.thread_len,
        float(info.prev is not None and info.prev.speaker == ev.speaker),
        float(info.prev is not None and info.prev.text.rstrip().endswith("?")),
        float(info.next is not None and info.next.speaker == ev.speaker),
        ts.second, ts.hour, ts.weekday(),
        _gap_seconds(info.prev, ev), _gap_seconds(ev, info.next),
    ]
    row += [float(ev.channel == c) for c in CHANNELS]
    row += [float(info.role == r) for r in roles]
    return row


# ---------------------------------------------------------------------------------------------
# Lexicon and skeletons

_NUMBER = re.compile(r"(?<!\w)[$€£]?\d+(?:[.,:/-]\d+)*(?:\s?(?:%|(?:k|m|am|pm|st|nd|rd|th)\b))?",
                     re.IGNORECASE)
_CAPITAL = re.compile(r"(?<![\w<])[A-Z][\w'’&-]*")
_PLACEHOLDER_RUN = re.compile(r"(<\w+>)(?:[\s,]+\1)+")
_WS = re.compile(r"\s+")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?%])")


class Lexicon:
    """The dataset's own names and slot values, to reduce a text to its wording skeleton."""

    def __init__(self, names: Iterable[str], values: Iterable[str]):
        kinds: dict[str, str] = {}
        for kind, phrases in (("value", values), ("name", names)):
            for p in phrases:
                p = _WS.sub(" ", str(p)).strip()
                if len(p) >= 2:
                    kinds.setdefault(p.lower(), kind)  # a value also used as a name stays a value
        self.kinds = kinds
        alternation = "|".join(re.escape(p) for p in sorted(kinds, key=lambda s: (-len(s), s)))
        self._pattern = (re.compile(rf"(?<![\w])(?:{alternation})(?:['’]s)?(?![\w])",
                                    re.IGNORECASE) if kinds else None)

    @classmethod
    def of(cls, dataset: Dataset) -> Lexicon:
        names: set[str] = set()
        values: set[str] = set()

        def add_name(name: str) -> None:
            names.add(name)
            names.update(w for w in name.split() if len(w) >= 2 and w[0].isupper())

        for conv in dataset.conversations:
            for s in conv.speakers:
                add_name(s)
            roles = conv.meta.get("roles")
            if isinstance(roles, dict):
                for s in roles:
                    add_name(str(s))
            for k in ("company", "vendor", "product"):
                if isinstance(conv.meta.get(k), str):
                    add_name(conv.meta[k])
        for fld in Dataset.ITEM_FIELDS:
            for item in getattr(dataset, fld):
                for k in ("speaker", "owner"):
                    if isinstance(getattr(item, k, None), str) and getattr(item, k):
                        add_name(getattr(item, k))
                slots = item.meta.get("slots")
                if isinstance(slots, dict):
                    values.update(str(v) for v in slots.values() if isinstance(v, (str, int)))
        for ch in dataset.update_chains:
            for st in ch.states:
                values.update(st.surface_forms())
        values.update(p.value for p in dataset.pii_plants)
        for n in dataset.emotional_negatives:
            values.update(n.expected)
        for c in dataset.crisis_plants:
            values.update(c.key_phrases)
        return cls(names, values)

    def skeleton(self, text: str) -> str:
        """The wording with the dataset's names -> <name>, its slot values -> <value>, numbers
        -> <num>, other capitalised words inside a sentence -> <cap>; lower-cased, spaces
        squeezed, a run of one placeholder collapsed to one."""
        if self._pattern is not None:
            text = self._pattern.sub(lambda m: f" <{self._kind(m.group())}> ", text)
        text = _NUMBER.sub(" <num> ", text)

        def cap(m: re.Match[str]) -> str:
            before = text[:m.start()].rstrip(" \t\"'“‘(")
            if not before or before.endswith((".", "!", "?", ":", "\n")) or m.group() in _PRONOUN_I:
                return m.group()  # a sentence opener is capitalised whatever it is
            return "<cap>"

        text = _CAPITAL.sub(cap, text)
        text = _WS.sub(" ", text.lower()).strip()
        text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)
        return _PLACEHOLDER_RUN.sub(r"\1", text)

    def _kind(self, matched: str) -> str:
        key = re.sub(r"['’]s$", "", _WS.sub(" ", matched).lower())
        return self.kinds.get(key, "value")


# ---------------------------------------------------------------------------------------------
# Surface repetition

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def words(text: str) -> list[str]:
    return _TOKEN.findall(text.lower().replace("\u2019", "'"))


def normalise_whitespace(text: str) -> str:
    return " ".join(text.split())


def duplicate_count(texts: Sequence[str]) -> int:
    """How many of `texts` have a whitespace-normalised text that occurs more than once."""
    counts = Counter(normalise_whitespace(t) for t in texts)
    return sum(counts[normalise_whitespace(t)] > 1 for t in texts)


def top_ngram(texts: Sequence[str], n: int) -> tuple[str, float]:
    """The word n-gram found in the most texts, and the share of texts containing it (ties:
    alphabetical); ("", 0.0) when no text has n words."""
    df: Counter[str] = Counter()
    for t in texts:
        w = words(t)
        df.update({" ".join(w[i:i + n]) for i in range(len(w) - n + 1)})
    if not df or not texts:
        return "", 0.0
    gram, k = min(df.items(), key=lambda kv: (-kv[1], kv[0]))
    return gram, k / len(texts)
