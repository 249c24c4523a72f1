"""Lexical retrieval: BM25 (Lucene variant) through bm25s, English stopwords, Snowball stemmer.

bm25s has no incremental add, so `add` marks the index stale and the next search rebuilds it
(50k short documents index in under two seconds). Documents that share no term with the query
score 0 and are not returned: a zero-score "hit" would be an arbitrary document.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import Stemmer

if TYPE_CHECKING:
    import bm25s

from twistbench.retrieval.base import Hit, _DocStore, top_k

_STEMMER = Stemmer.Stemmer("english")


def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-cased, stop-worded, stemmed tokens (the same pipeline for documents and queries)."""
    import bm25s  # lazy: bm25s imports numba (0.7 s); only a lexical search needs it

    out = bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER, return_ids=False,
                         show_progress=False)
    return [list(t) for t in out]


class LexicalRetriever:
    name = "lexical"

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._docs = _DocStore()
        self._bm25: bm25s.BM25 | None = None
        self._stale = True

    def __len__(self) -> int:
        return len(self._docs.ids)

    def index(self, ids: list[str], texts: list[str]) -> None:
        self._docs.reset()
        self.add(ids, texts)

    def add(self, ids: list[str], texts: list[str]) -> None:
        self._docs.extend(list(ids), list(texts))
        self._stale = True

    def _ensure(self) -> bm25s.BM25 | None:
        if self._stale:
            self._stale = False
            self._bm25 = None
            if self._docs.ids:
                import bm25s  # lazy: bm25s imports numba (0.7 s); see tokenize

                bm = bm25s.BM25(k1=self.k1, b=self.b)
                tokens = tokenize(self._docs.texts)
                # A document made only of stop words would give bm25s an empty row; that is fine,
                # it can never match, but bm25s needs at least one token overall.
                if any(tokens):
                    bm.index(tokens, show_progress=False)
                    self._bm25 = bm
        return self._bm25

    def _scores(self, bm: bm25s.BM25, tokens: list[str]) -> np.ndarray | None:
        ids = bm.get_tokens_ids(tokens)
        if not ids:
            return None
        return bm.get_scores_from_ids(ids)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.search_many([query], k)[0]

    def search_many(self, queries: list[str], k: int) -> list[list[Hit]]:
        bm = self._ensure()
        if bm is None:
            return [[] for _ in queries]
        results: list[list[Hit]] = []
        for tokens in tokenize(list(queries)):
            scores = self._scores(bm, tokens) if tokens else None
            if scores is None:
                results.append([])
                continue
            idx = top_k(scores, k)
            results.append([(self._docs.ids[i], float(scores[i])) for i in idx if scores[i] > 0])
        return results
