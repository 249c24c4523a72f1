import math

from twistbench.retrieval.lexical import LexicalRetriever, tokenize

DOCS = {
    "d1": "zebra zebra lion",
    "d2": "lion tiger",
    "d3": "tiger tiger tiger giraffe",
    "d4": "giraffe",
}


def lucene_bm25(query: list[str], docs: dict[str, list[str]], k1=1.5, b=0.75) -> dict[str, float]:
    """Independent BM25, Lucene variant as in Kamphuis et al. (ECIR 2020): Lucene drops the
    constant (k1 + 1) numerator factor, which leaves the ranking unchanged."""
    n = len(docs)
    avgdl = sum(len(t) for t in docs.values()) / n
    out = {}
    for did, toks in docs.items():
        s = 0.0
        for term in set(query):
            df = sum(1 for t in docs.values() if term in t)
            if df == 0 or term not in toks:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = toks.count(term)
            s += idf * tf / (tf + k1 * (1 - b + b * len(toks) / avgdl))
        out[did] = s
    return out


def test_tokenizer_stems_and_drops_stop_words():
    assert tokenize(["The runners are running quickly"]) == [["runner", "run", "quick"]]


def test_scores_match_hand_formula():
    r = LexicalRetriever()
    r.index(list(DOCS), list(DOCS.values()))
    toks = {d: t.split() for d, t in DOCS.items()}
    for q in ["zebra", "tiger lion", "giraffe tiger zebra"]:
        want = lucene_bm25(q.split(), toks)
        got = dict(r.search(q, 10))
        assert set(got) == {d for d, s in want.items() if s > 0}
        for d, s in got.items():
            assert abs(s - want[d]) < 1e-5, (q, d, s, want[d])
        ranked = [d for d, _ in r.search(q, 10)]
        assert ranked == sorted(got, key=lambda d: (-want[d], list(DOCS).index(d)))


def test_no_shared_term_returns_nothing():
    r = LexicalRetriever()
    r.index(list(DOCS), list(DOCS.values()))
    assert r.search("elephant", 3) == []
    assert r.search("the and of", 3) == []  # stop words only
    assert LexicalRetriever().search("zebra", 3) == []  # empty index


def test_incremental_add_equals_full_index():
    a = LexicalRetriever()
    a.index(list(DOCS), list(DOCS.values()))
    b = LexicalRetriever()
    items = list(DOCS.items())
    b.add([items[0][0]], [items[0][1]])
    assert b.search("zebra", 2)[0][0] == "d1"
    b.add([i for i, _ in items[1:]], [t for _, t in items[1:]])
    assert len(b) == 4
    for q in ["zebra", "tiger", "lion giraffe"]:
        assert a.search(q, 4) == b.search(q, 4)


def test_search_many_equals_search():
    r = LexicalRetriever()
    r.index(list(DOCS), list(DOCS.values()))
    qs = ["zebra", "tiger lion", "nothing", "giraffe"]
    assert r.search_many(qs, 2) == [r.search(q, 2) for q in qs]


def test_ties_break_by_insertion_order():
    r = LexicalRetriever()
    r.index(["x", "y", "z"], ["apple pie", "apple pie", "apple pie"])
    assert [d for d, _ in r.search("apple", 3)] == ["x", "y", "z"]
