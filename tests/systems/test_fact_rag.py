import pytest
from systems_helpers import conversation, ingest_all

from twistbench.retrieval.parser import extract_facts
from twistbench.systems.fact_rag import FactRAG

CONV = conversation("c1", [
    (1, 0, "Ana", "Hi Ben! Our go-live date is March 3."),
    (1, 0, "Ben", "Great, I will tell the implementation team."),
    (2, 30, "Ana", "Our go-live date moved: it is April 14 now."),
    (2, 31, "Ana", "Thanks!"),
])


@pytest.mark.parametrize("retriever", ["lexical", "dense"])
def test_recall_prefers_the_most_recent_matching_fact(retriever):
    s = FactRAG(retriever=retriever)
    ingest_all(s, CONV)
    a = s.recall("What is Ana's go-live date?")
    assert a.evidence == ["c1:e02"] and "April 14" in a.text
    # Flat retrieval alone would rank the shorter, older statement first here:
    hits = dict((h.id, h.score) for h in s.retrieve("What is Ana's go-live date?", 5))
    assert {"c1:e00#f0", "c1:e02#f0"} <= set(hits)


def test_strict_match_ratio_answers_with_the_best_fact_only():
    s = FactRAG(retriever="lexical", match_ratio=1.0)
    ingest_all(s, CONV)
    best = s.retrieve("go-live date March", 1)[0].id
    assert s.recall("go-live date March").evidence == [best.split("#")[0]]


def test_facts_are_canonical_memories_with_lineage():
    s = FactRAG(retriever="lexical", max_facts=5)
    ingest_all(s, CONV)
    lin = s.lineage()
    want = [f for e in CONV.events for f in extract_facts(e, 5)]
    assert [r.memory_id for r in lin] == [f.id for f in want]
    assert all(not r.raw and r.canonical and r.sources == [r.memory_id.split("#")[0]] for r in lin)
    assert "c1:e03" not in {r.sources[0] for r in lin}  # "Thanks!" states no fact
    assert all(h.id.split("#")[0] in {e.id for e in CONV.events} for h in s.retrieve("date", 10))


def test_no_conflict_detection():
    s = FactRAG(retriever="lexical")
    ingest_all(s, CONV)
    assert s.check_alignment("Go-live is still March 3, right?").aligned
    with pytest.raises(NotImplementedError):
        s.flag_tensions()


def test_option_validation():
    with pytest.raises(ValueError):
        FactRAG(match_ratio=0)
    with pytest.raises(ValueError):
        FactRAG(max_facts=0)
