"""write_traces on a tiny synthetic dataset: files, skips, errors, declines; the native store."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from twistbench.audit.core import audit
from twistbench.audit.native import NativeStore
from twistbench.audit.traces import read_gold, read_lineage, read_traces
from twistbench.audit.tracing import export_corpus, write_traces
from twistbench.contract import BaseSystem, Capabilities
from twistbench.datasets.audit_corpus import corpus_from_dataset, raw_lineage
from twistbench.datasets.registry import load_audit_corpus
from twistbench.errors import InputError
from twistbench.model import Conversation, Dataset, Event, QAItem, ScoredMemory
from twistbench.systems.fact_rag import FactRAG


def _dataset() -> Dataset:
    t0 = datetime(2023, 5, 8, 13, 56)
    lines = [
        (1, "Caroline", "I went to the LGBTQ support group yesterday. It was powerful."),
        (1, "Melanie", "That sounds great! I painted a sunrise over the lake last week."),
        (2, "Caroline", "I'm researching adoption agencies; I want to be a mother."),
        (2, "Melanie", "My kids love camping at the beach. We roast marshmallows."),
    ]
    events = [Event(id=f"D{s}:{i}", conversation="conv-x", session=s,
                    timestamp=t0 + timedelta(days=7 * (s - 1), minutes=i), speaker=sp, text=tx)
              for i, (s, sp, tx) in enumerate(lines, start=1)]
    conv = Conversation(id="conv-x", speakers=["Caroline", "Melanie"], events=events)
    qa = [
        QAItem(id="conv-x:qa0", conversation="conv-x", question="When did Caroline go to the "
               "LGBTQ support group?", answer="7 May 2023", category=2, evidence=["D1:1"]),
        QAItem(id="conv-x:qa1", conversation="conv-x", question="What did Melanie paint?",
               answer="a sunrise", category=4, evidence=["D1:2"]),
        QAItem(id="conv-x:qa2", conversation="conv-x", question="What is Caroline researching?",
               answer="adoption agencies", category=1, evidence=["D2:3", "D1:1"]),
        QAItem(id="conv-x:qa3", conversation="conv-x", question="What did Caroline's dog eat?",
               category=5, adversarial_answer="cake"),
        QAItem(id="conv-x:qa4", conversation="conv-x", question="Where do the kids camp?",
               answer="beach", category=4, evidence=[]),
    ]
    return Dataset(name="tiny", version="1", key_sha256="0" * 64, conversations=[conv], qa=qa)


def test_corpus_from_dataset_skips_and_texts() -> None:
    corpus = corpus_from_dataset(_dataset())
    assert [q.query_id for q in corpus.queries] == ["conv-x:qa0", "conv-x:qa1", "conv-x:qa2"]
    assert {s["query_id"]: s["reason"] for s in corpus.skipped} == {
        "conv-x:qa3": "category 5 (adversarial, no evidence)",
        "conv-x:qa4": "no evidence turns"}
    assert corpus.queries[2].anchor_texts["D2:3"].startswith("I'm researching")
    assert [q.category for q in corpus.queries] == ["temporal", "single-hop", "multi-hop"]
    assert len(raw_lineage(corpus.conversations)) == 4


def test_native_store_traces_and_audit(tmp_path: Path) -> None:
    out = tmp_path / "lexical-F5"
    rep = write_traces(NativeStore("lexical", 5), _dataset(), out, k=60)
    assert (rep.queries, rep.traced, rep.errors, rep.skipped) == (3, 3, 0, 2)
    lin = read_lineage(out / "lineage.jsonl")
    raw = [r for r in lin.rows if r.raw]
    facts = [r for r in lin.rows if r.canonical]
    assert len(raw) == 4 and facts and all(not r.raw for r in facts)
    assert all(r.conversation == "conv-x" and len(r.sources) == 1 for r in lin.rows)
    assert {r.sources[0] for r in facts} <= {r.memory_id for r in raw}
    run = read_traces(out / "traces.jsonl")
    assert run.name == "lexical-F5" and run.k == 60
    # BM25 ranks only memories sharing a term with the question; never more than k or the store
    assert all(0 < len(t.ids) <= len(lin.rows) for t in run.traces.values())
    assert "D1:2" in run.traces["conv-x:qa1"].ids  # "paint" matches "painted" (stemmed)
    gold = read_gold(out / "gold.jsonl")
    assert gold.queries["conv-x:qa2"].anchors == ["D2:3", "D1:1"]
    manifest = json.loads((out / "trace_manifest.json").read_text())
    assert manifest["system_config"]["parser_max_facts"] == 5
    assert len(manifest["skipped"]) == 2
    res = audit([out / "traces.jsonl"], out / "lineage.jsonl", out / "gold.jsonl",
                tmp_path / "audit", n_resamples=50)
    r = res.runs[0]
    assert r["scored"] == 3 and r["coverage"]["raw"]["eligible"] == 3
    for t in ("raw", "src", "can"):
        if r["full"][t]["n"]:
            assert 0.0 < r["full"][t]["recall"] <= 1.0


def test_fact_rag_keeping_raw_turns_is_eligible_under_every_target(tmp_path: Path) -> None:
    """fact-rag -S keep_raw=true: raw turns beside the facts, so Raw, Source and Canonical all
    apply, and two such configurations meet on a shared subset (n > 0, no empty-subset note);
    fact-rag alone has no Raw target."""
    ds = _dataset()
    outs = {}
    for name, system in [("facts-only", FactRAG("lexical")),
                         ("raw+facts-lexical", FactRAG("lexical", keep_raw=True)),
                         ("raw+facts-lexical-2", FactRAG("lexical", max_facts=1,
                                                         keep_raw=True))]:
        outs[name] = tmp_path / name
        rep = write_traces(system, ds, outs[name], k=60)
        assert (rep.traced, rep.errors) == (3, 0)
    lin = read_lineage(outs["raw+facts-lexical"] / "lineage.jsonl")
    raw = {r.memory_id: r for r in lin.rows if r.raw}
    facts = [r for r in lin.rows if not r.raw]
    # every turn is a raw, non-canonical memory that is its own source; facts cite a turn
    assert sorted(raw) == ["D1:1", "D1:2", "D2:3", "D2:4"]
    assert all(not r.canonical and r.sources == [i] and r.text for i, r in raw.items())
    assert facts and all(r.canonical and r.sources[0] in raw for r in facts)
    # retrieve ranks turns and facts in one list
    ids = read_traces(outs["raw+facts-lexical"] / "traces.jsonl").traces["conv-x:qa1"].ids
    assert "D1:2" in ids and any(i.startswith("D1:2#f") for i in ids)
    only = read_lineage(outs["facts-only"] / "lineage.jsonl")
    assert not any(r.raw for r in only.rows)  # the default stores facts alone
    # the option is in the configuration only when set: existing runs keep their fingerprint
    assert "keep_raw" not in FactRAG("lexical").config()
    assert FactRAG("lexical", keep_raw=True).config()["keep_raw"] is True

    res = audit([outs["raw+facts-lexical"], outs["raw+facts-lexical-2"], outs["facts-only"]],
                n_resamples=50)
    cov = {r["name"]: r["coverage"] for r in res.runs}
    assert {t: cov["raw+facts-lexical"][t]["eligible"] for t in ("raw", "src", "can")} == \
        {"raw": 3, "src": 3, "can": 3}
    assert cov["facts-only"]["raw"]["eligible"] == 0
    both = next(c for c in res.comparisons if c["b"] == "raw+facts-lexical-2")
    assert both["shared"]["n"] == 3 and both["shared"]["why_empty"] is None
    assert all(both["per_target"][t]["n"] == 3 for t in ("raw", "src", "can"))
    assert all(w is not None for f in both["flips"].values() for w in f["winner"].values())
    no_raw = next(c for c in res.comparisons if c["b"] == "facts-only")
    assert no_raw["per_target"]["raw"]["n"] == 0
    assert no_raw["shared"]["why_empty"] == "facts-only has no Raw target"


class _Flaky(BaseSystem):
    name = "flaky"
    capabilities = Capabilities(retrieve=True, lineage=True)

    def __init__(self, bad_lineage: bool = False) -> None:
        self.bad_lineage = bad_lineage
        self.turns: list[str] = []

    def ingest(self, events):  # noqa: ANN001, ANN201
        self.turns += [e.id for e in events]
        return {}

    def retrieve(self, query: str, k: int):  # noqa: ANN201
        if "paint" in query:
            raise RuntimeError("index offline")
        if "researching" in query:
            return [{"id": "D2:3"}]  # no score: invalid output
        return [ScoredMemory(id=t, score=1.0 / (i + 1)) for i, t in enumerate(self.turns)][:k]

    def lineage(self):  # noqa: ANN201
        rows = [{"memory_id": t, "sources": [t], "raw": True, "canonical": False}
                for t in self.turns]
        return rows + rows[:1] if self.bad_lineage else rows


def test_errors_are_recorded_not_scored(tmp_path: Path) -> None:
    rep = write_traces(_Flaky(), _dataset(), tmp_path / "f", k=2, timeout_s=10)
    assert (rep.traced, rep.errors) == (1, 2)
    assert rep.error_kinds == {"exception": 1, "invalid_output": 1}
    run = read_traces(tmp_path / "f" / "traces.jsonl")
    assert set(run.errors) == {"conv-x:qa1", "conv-x:qa2"}
    assert "index offline" in run.errors["conv-x:qa1"]
    assert run.traces["conv-x:qa0"].ids == ["D1:1", "D1:2"]  # cut at k = 2


def test_bad_lineage_turns_queries_into_errors(tmp_path: Path) -> None:
    rep = write_traces(_Flaky(bad_lineage=True), _dataset(), tmp_path / "g", k=2, timeout_s=10)
    assert rep.traced == 0 and rep.errors == 3
    run = read_traces(tmp_path / "g" / "traces.jsonl")
    assert all("lineage unavailable" in e for e in run.errors.values())


def test_declining_system_is_na(tmp_path: Path) -> None:
    class NoLineage(BaseSystem):
        name = "nolin"
        capabilities = Capabilities(retrieve=True)

    with pytest.raises(InputError, match="N/A"):
        write_traces(NoLineage(), _dataset(), tmp_path / "n")
    with pytest.raises(InputError, match="unknown conversation"):
        write_traces(NativeStore("lexical", 1), _dataset(), tmp_path / "n",
                     conversations=["conv-zz"])


def test_load_audit_corpus_locomo(locomo_path: Path, tmp_path: Path) -> None:

    c = load_audit_corpus("locomo", locomo_path)
    # 1,986 QA: 446 adversarial and 4 without evidence are skipped and reported
    assert len(c.queries) == 1536 and len(c.skipped) == 450
    assert sum(1 for s in c.skipped if s["reason"] == "no evidence turns") == 4
    files = export_corpus(c, tmp_path)
    assert len(read_lineage(files["lineage"]).rows) == 5882
    assert len(read_gold(files["gold"]).queries) == 1536
    with pytest.raises(InputError, match="unknown audit corpus"):
        load_audit_corpus("msmarco", locomo_path)


def test_manifest_names_the_embedding_model_only_when_one_embedded(tmp_path: Path,
                                                                  monkeypatch) -> None:
    from twistbench.retrieval import dense

    monkeypatch.setattr(dense, "used", False)
    write_traces(NativeStore("lexical", 1), _dataset(), tmp_path / "lex", k=5)
    lex = json.loads((tmp_path / "lex" / "trace_manifest.json").read_text())
    assert lex["embedding_model"] is None
    write_traces(NativeStore("dense", 1), _dataset(), tmp_path / "dense", k=5)
    den = json.loads((tmp_path / "dense" / "trace_manifest.json").read_text())
    assert den["embedding_model"] == dense.model_id() and "model=" in den["embedding_model"]
