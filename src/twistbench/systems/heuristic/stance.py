"""Stance of a turn or clause: signed valence from the lexicon with negation, clause relations,
stemmed content words."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import Stemmer

from twistbench.retrieval.parser import content_words, split_sentences
from twistbench.systems.heuristic.lexicon import (
    _ACKNOWLEDGED,
    _CONDITIONAL,
    _FIRST_PERSON,
    _HEDGE,
    _HYPOTHETICAL,
    _NEGATIVE,
    _NEGATORS,
    _NOSTALGIA,
    _POSITIVE,
    _SELF_REVISION,
)

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


_STEMMER = Stemmer.Stemmer("english")
_RRF_K = 60


def stems(text: str) -> set[str]:
    """Stemmed content words (parser.content_words: no stop words, no social filler, no
    negators or contractions: they carry polarity, not topic)."""
    return set(_stem_set(text))


@functools.lru_cache(maxsize=1 << 16)  # clause_relation asks again for every pair of turns
def _stem_set(text: str) -> frozenset[str]:
    words = [w for w in content_words(text) if w not in _NEGATORS and "'" not in w
             and w not in _GENERIC]
    return frozenset(_STEMMER.stemWords(words))


_GENERIC = {"get", "gets", "got", "nothing", "everything", "something", "anything", "said", "say",
            "says", "tell", "tells", "told", "team", "people", "now", "today", "week", "month"}


def clause_relation(old: str, new: str, min_shared: int = 1
                    ) -> tuple[int, float, float, str, str] | None:
    """The clause pair of `old` and `new` sharing the most content stems (at least
    `min_shared`): (shared, old clause valence, new clause valence, old clause, new clause).

    Clauses of `new` that are hypothetical ("if", "would") or nostalgic ("I'll never forget")
    are skipped, checked per clause ("If you're wondering, it is final: X" still states X)."""
    best: tuple[float, int, str, str] | None = None
    olds = [(c, _stem_set(c)) for c in clauses(old)]
    for sent in split_sentences(new):
        for cn in clauses(sent):
            if _HYPOTHETICAL.search(cn) or _CONDITIONAL.search(cn) or _NOSTALGIA.search(cn):
                continue  # a what-if or a memory states no current position
            sn = _stem_set(cn)
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
