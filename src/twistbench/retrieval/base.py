"""One small retriever interface: index texts under ids, search them, get scored ids back.

Both implementations (lexical BM25 and dense MiniLM) return ids with scores, best first, and
break score ties by insertion order so that two runs over the same input give the same ranking.
`add` is incremental (cheap for dense; lexical re-indexes lazily at the next search).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from twistbench.model import Event

Hit = tuple[str, float]


@runtime_checkable
class Retriever(Protocol):
    name: str

    def index(self, ids: list[str], texts: list[str]) -> None:
        """Replace the whole index with these documents (ids must be unique)."""

    def add(self, ids: list[str], texts: list[str]) -> None:
        """Append documents to the index."""

    def search(self, query: str, k: int) -> list[Hit]:
        """Top-k ids with scores, best first, ties in insertion order."""

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        """`search` for many queries at once (batched where the backend allows)."""

    def __len__(self) -> int: ...


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first; equal scores keep index order.

    Uses argpartition for the cut and then a full stable sort of every candidate at or above
    the k-th score, so ties at the cut are resolved by index, not by partition internals.
    """
    n = int(scores.shape[0])
    if k <= 0 or n == 0:
        return np.empty(0, dtype=np.int64)
    if k >= n:
        cand = np.arange(n)
    else:
        part = np.argpartition(-scores, k - 1)[:k]
        threshold = scores[part].min()
        cand = np.nonzero(scores >= threshold)[0]
    order = np.lexsort((cand, -scores[cand]))  # last key is primary: score desc, then index
    return cand[order][:k]


class _DocStore:
    """Ids and texts in insertion order, with a duplicate check."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.texts: list[str] = []
        self._seen: set[str] = set()

    def reset(self) -> None:
        self.ids, self.texts, self._seen = [], [], set()

    def extend(self, ids: list[str], texts: list[str]) -> None:
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
        for i in ids:
            if i in self._seen:
                raise ValueError(f"duplicate document id {i!r}")
            self._seen.add(i)
        self.ids.extend(ids)
        self.texts.extend(texts)


def turn_text(ev: Event) -> str:
    """How a store indexes a raw turn: the speaker's name, then the text (the name carries
    attribution for queries about people). flat-rag and TIAP's native store index turns so."""
    return f"{ev.speaker}: {ev.text}"
