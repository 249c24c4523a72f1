import pytest
from systems_helpers import conversation, ingest_all

from twistbench.systems.flat_rag import NO_ANSWER, FlatRAG

CONV = conversation("c1", [
    (1, 0, "Ana", "Our go-live date is March 3."),
    (1, 0, "Ben", "Great, I will tell the implementation team."),
    (2, 30, "Ana", "Go-live moves to April 14 because of the data migration."),
    (2, 31, "Ana", "My dog Pixel loves the beach."),
])


@pytest.mark.parametrize("retriever", ["lexical", "dense"])
def test_recall_is_the_top_turn_verbatim_with_its_id(retriever):
    s = FlatRAG(retriever=retriever)
    results = ingest_all(s, CONV)
    assert all(r.tensions == [] and r.referrals == [] for r in results)
    a = s.recall("What is the name of Ana's dog?")
    assert a.evidence == ["c1:e03"] and a.text == "Ana: My dog Pixel loves the beach."


def test_answer_turns_and_retrieve_and_lineage():
    s = FlatRAG(retriever="lexical", answer_turns=2)
    ingest_all(s, CONV)
    a = s.recall("go-live date")
    assert len(a.evidence) == 2 and set(a.evidence) <= {"c1:e00", "c1:e02"}
    hits = s.retrieve("go-live", 10)
    assert [h.id for h in hits][:2] and all(h.id.startswith("c1:e") for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    lin = s.lineage()
    assert [r.memory_id for r in lin] == [e.id for e in CONV.events]
    assert all(r.raw and not r.canonical and r.sources == [r.memory_id] for r in lin)


def test_no_mechanism_for_drafts_and_no_tensions():
    s = FlatRAG(retriever="lexical")
    ingest_all(s, CONV)
    v = s.check_alignment("Great news that go-live is still March 3!")
    assert v.aligned and v.conflicts == []
    with pytest.raises(NotImplementedError):
        s.flag_tensions()
    assert "no LLM" in s.config()["alignment"]


def test_reset_forgets_and_empty_memory_says_so():
    s = FlatRAG(retriever="lexical")
    ingest_all(s, CONV)
    s.reset("c2")
    assert s.recall("dog") == s.recall("anything")
    assert s.recall("dog").text == NO_ANSWER and s.lineage() == []


def test_reingesting_a_turn_is_idempotent():
    s = FlatRAG(retriever="lexical")
    s.reset("c1")
    s.ingest(CONV.events[:2])
    s.ingest(CONV.events[:2])
    assert len(s.lineage()) == 2


def test_similarity_probe_flags_by_similarity_alone():
    conv = conversation("p", [
        (1, 0, "Ana", "We will keep the on-prem connector for the warehouse sync."),
        (1, 0, "Ben", "We will keep the on-prem connector for the warehouse sync."),
        (2, 9, "Ana", "We will drop the on-prem connector for the warehouse sync."),
        (2, 9, "Ana", "My dog Pixel loves the beach."),
    ])
    s = FlatRAG(retriever="dense", probe=True)
    assert s.capabilities.online_tensions and s.capabilities.batch_tensions
    results = ingest_all(s, conv)
    (t,) = [t for r in results for t in r.tensions]
    # Same speaker, earlier session only: Ben's identical turn is not Ana's claim.
    assert (t.claim_evidence, t.new_evidence) == (["p:e00"], ["p:e02"])
    assert s.flag_tensions() == [t]
    v = s.check_alignment("We will drop the on-prem connector for the warehouse sync.")
    assert not v.aligned and v.conflicts[0].evidence[0] in {"p:e00", "p:e01", "p:e02"}
    assert s.check_alignment("Quarterly tax filing deadlines for Brazil").aligned
    assert s.config()["probe"] is True
    assert not FlatRAG().capabilities.online_tensions  # without the probe: Track A is N/A
