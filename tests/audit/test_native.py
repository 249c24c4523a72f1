"""The native run matrix end to end on a tiny LoCoMo-format file written by the test (the full
LoCoMo matrix is a CLI run, never a test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twistbench.audit.native import NativeStore, native_matrix


def _locomo(tmp_path: Path) -> Path:
    s1 = [
        ("Caroline", "D1:1", "I went to the LGBTQ support group yesterday and it was so "
                             "powerful. The stories inspired me to keep going."),
        ("Melanie", "D1:2", "That's amazing! I painted a lake sunrise last year; painting "
                            "helps me relax after work."),
        ("Caroline", "D1:3", "I'm researching adoption agencies because I want to be a mother. "
                             "It's a big step for me."),
    ]
    s2 = [
        ("Melanie", "D2:1", "We went camping at the beach with the kids; we roasted "
                            "marshmallows and told stories."),
        ("Caroline", "D2:2", "I gave a talk at a school about my transition journey, and the "
                             "students asked great questions."),
        ("Melanie", "D2:3", "I signed up for a pottery class. I made a bowl with a dog face "
                            "on it."),
    ]
    conv = {"speaker_a": "Caroline", "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_2_date_time": "1:14 pm on 25 May, 2023",
            "session_1": [{"speaker": a, "dia_id": b, "text": c} for a, b, c in s1],
            "session_2": [{"speaker": a, "dia_id": b, "text": c} for a, b, c in s2]}
    qa = [
        {"question": "When did Caroline go to the LGBTQ support group?", "answer": "7 May 2023",
         "evidence": ["D1:1"], "category": 2},
        {"question": "What did Melanie paint?", "answer": "a lake sunrise",
         "evidence": ["D1:2"], "category": 4},
        {"question": "What is Caroline researching?", "answer": "adoption agencies",
         "evidence": ["D1:3"], "category": 4},
        {"question": "Where did Melanie camp with the kids?", "answer": "the beach",
         "evidence": ["D2:1"], "category": 4},
        {"question": "What did Melanie make in pottery class?", "answer": "a bowl",
         "evidence": ["D2:3"], "category": 1},
        {"question": "What did Caroline paint?", "adversarial_answer": "a sunrise",
         "evidence": ["D1:2"], "category": 5},
    ]
    p = tmp_path / "locomo_tiny.json"
    p.write_text(json.dumps([{"sample_id": "conv-t", "conversation": conv, "qa": qa}]))
    return p


def test_native_matrix_tiny(tmp_path: Path) -> None:
    res = native_matrix(_locomo(tmp_path), tmp_path / "out", retrievers=("lexical",),
                        max_facts=(1, 5), n_resamples=100)
    assert set(res.runs) == {"lexical-F1", "lexical-F5"}
    for name, rep in res.traces.items():
        assert (rep.queries, rep.traced, rep.errors, rep.skipped) == (5, 5, 0, 1), name
    r1, r5 = (next(r for r in res.audit.runs if r["name"] == n)
              for n in ("lexical-F1", "lexical-F5"))
    # denser parsing stores more facts over the same six raw turns
    assert r5["stored_memories"] > r1["stored_memories"] >= 6 + 5
    assert r1["coverage"]["raw"]["eligible"] == 5
    rec = res.audit.recommendations[0]
    assert rec["group"] == "lexical" and rec["configurations"] == ["lexical-F1", "lexical-F5"]
    assert [(c["a"], c["b"]) for c in res.audit.comparisons] == [("lexical-F1", "lexical-F5")]
    table = res.recommendation_table()
    assert table.count("| lexical |") == 3
    out = tmp_path / "out"
    assert (out / "audit" / "audit.md").exists() and (out / "audit" / "audit.json").exists()
    assert (out / "runs" / "lexical-F5" / "traces.jsonl").exists()
    assert (out / "audit" / "trec" / "lexical-F1" / "qrels.can.txt").exists()


def test_native_store_lineage_links_facts_to_turns() -> None:
    from datetime import datetime

    from twistbench.model import Event

    store = NativeStore("lexical", 8)
    store.reset("c")
    ev = Event(id="D1:1", conversation="c", session=1, timestamp=datetime(2023, 5, 8),
               speaker="Caroline", text="I adopted a dog. I named her Luna, and I walk her "
                                        "every morning before work.")
    store.ingest([ev])
    lin = store.lineage()
    assert lin[0].memory_id == "D1:1" and lin[0].raw and not lin[0].canonical
    facts = lin[1:]
    assert facts and all(f.canonical and not f.raw and f.sources == ["D1:1"] for f in facts)
    hits = store.retrieve("What is the dog's name?", 60)
    assert {h.id for h in hits} <= {x.memory_id for x in lin}
    with pytest.raises(ValueError):
        NativeStore("sparse", 1)


@pytest.mark.parametrize(("retrievers", "max_facts", "named"), [
    (("lexical", "bm26"), (1,), "--retriever"),
    (("lexical",), (1, 0), "--max-facts"),
])
def test_an_unknown_retriever_or_density_is_refused_before_anything_is_traced(
        tmp_path, retrievers, max_facts, named):
    from twistbench.errors import InputError

    out = tmp_path / "native"
    with pytest.raises(InputError) as caught:
        native_matrix(_locomo(tmp_path), out, retrievers=retrievers, max_facts=max_facts,
                      n_resamples=20)
    assert str(caught.value).startswith(named)
    assert not out.exists()
