"""Mem0 (the open-source `mem0ai` package) as a system under test: `-s mem0`.

Install with `pip install twistbench[mem0]`. Offline by default, as a new user can run it
without any service:
- `infer=False`: every turn is stored as a memory as written (no extraction model);
- the vector store is Qdrant in local in-memory mode, one instance per conversation (reset
  builds it, close frees it: Mem0's own `reset` has no teardown);
- embeddings are twistbench's MiniLM int8 model (retrieval/dense.py), passed to Mem0 through
  its `langchain` embedder provider (Mem0 refuses custom providers, and its fastembed and
  HuggingFace embedders download models);
- telemetry off (MEM0_TELEMETRY=False, set before mem0 is imported) and a dummy API key,
  because Mem0 builds an LLM client at start-up even when infer=False never calls it;
- no run-time download: Mem0's spaCy loader (entity boosts, BM25 lemmas) and its fastembed BM25
  encoder (a hub model) are marked unavailable, so search ranks by embeddings alone.
Mem0 itself still keeps a user id and a migrations store under ~/.mem0 on import (the variable
MEM0_DIR moves them); nothing of a conversation is written there.

With `infer=True` and `llm_base_url` (an OpenAI-compatible endpoint, its key in the
variable named by `api_key_env`), Mem0 extracts facts with that model instead.

Source turns. Each turn is added on its own (one `add` per turn), and the adapter maps every
memory id that `add` reports (ADD or UPDATE) to that turn, so evidence and lineage name turns in
either mode; with infer=True a memory updated by a later turn lists both turns.

Speaker to role. Mem0 distinguishes `user` from `assistant` (the agent itself). No speaker of a
benchmark conversation is the agent under test (LoCoMo has two human speakers; TWIST-CS has
customers and staff), so every turn is a `user` message whose `name` (Mem0's actor_id) is the
speaker, and the memory text is "Speaker: text", as flat-rag stores it.

Declined (N/A, never zero): tensions (online and batch), check_alignment, resolve and write-time
governance (safety): Mem0 offers none of them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from twistbench.contract import BaseSystem, Capabilities
from twistbench.model import Answer, Event, IngestResult, LineageRecord, ScoredMemory
from twistbench.retrieval import turn_text
from twistbench.retrieval.dense import active, embed

NO_ANSWER = "I don't know."
DUMMY_KEY = "sk-offline-mem0-never-called"  # Mem0 builds an OpenAI client at start-up


def _langchain_embedder() -> Any:
    # langchain-core is an optional dependency (the mem0 extra): imported only here.
    from langchain_core.embeddings import Embeddings

    class MiniLMInt8(Embeddings):
        """twistbench's MiniLM int8 model (onnxruntime, no download) as a langchain embedder."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embed(list(texts)).tolist()

        def embed_query(self, text: str) -> list[float]:
            return embed([text])[0].tolist()

    return MiniLMInt8()


class Mem0System(BaseSystem):
    """Mem0 OSS: one Memory per conversation, one add per turn, source turns kept."""

    name = "mem0"
    capabilities = Capabilities(recall=True, retrieve=True, lineage=True)

    def __init__(self, infer: bool = False, llm_base_url: str | None = None,
                 llm_model: str = "gpt-4o-mini", api_key_env: str = "OPENAI_API_KEY",
                 answer_memories: int = 1, search_threshold: float = 0.0) -> None:
        if infer and not llm_base_url:
            raise ValueError("infer=True needs llm_base_url (an OpenAI-compatible endpoint)")
        if answer_memories < 1:
            raise ValueError("answer_memories must be >= 1")
        os.environ["MEM0_TELEMETRY"] = "False"  # read by mem0 when it is imported
        try:
            # mem0ai is optional (the mem0 extra) and heavy: imported only when used.
            import mem0  # noqa: F401
            from mem0.memory import main as mem0_main
            from mem0.memory import telemetry as mem0_telemetry
            from mem0.utils import spacy_models
        except ImportError as exc:
            raise ImportError("Mem0 is not installed: pip install 'twistbench[mem0]'") from exc
        # Mem0 reads MEM0_TELEMETRY once, when first imported; if something imported it before
        # the variable was set, its copies of the flag are switched off here as well.
        mem0_telemetry.MEM0_TELEMETRY = False
        mem0_main.MEM0_TELEMETRY = False
        # Mem0 downloads spaCy's en_core_web_sm at run time for entity boosts and BM25 lemmas;
        # offline it must not try (a download attempt per process, and a result that depends
        # on the network). Marked as unavailable, Mem0 ranks by the embeddings alone, as it
        # does when its optional spaCy and fastembed extras are absent.
        spacy_models._load_failed_full = True
        spacy_models._load_failed_lemma = True
        self.infer = infer
        self.llm_base_url = llm_base_url
        self.llm_model = llm_model
        self.api_key_env = api_key_env
        self.answer_memories = answer_memories
        self.search_threshold = search_threshold
        self.memory: Any = None
        self.sources: dict[str, list[str]] = {}
        self.texts: dict[str, str] = {}
        self.conversation_id = ""

    def config(self) -> dict[str, Any]:
        import mem0  # already imported by __init__

        return {"mem0ai": getattr(mem0, "__version__", "?"), "infer": self.infer,
                "llm_base_url": self.llm_base_url if self.infer else None,
                "llm_model": self.llm_model if self.infer else None,
                "vector_store": "qdrant local in-memory", "embedder": "MiniLM int8 (langchain)",
                "speaker_role": "user, name=speaker", "answer_memories": self.answer_memories,
                "search_threshold": self.search_threshold}

    def _memory_config(self) -> dict[str, Any]:
        key = os.environ.get(self.api_key_env) if self.infer else None
        llm: dict[str, Any] = {"model": self.llm_model, "api_key": key or DUMMY_KEY}
        if self.infer:
            llm["openai_base_url"] = self.llm_base_url
        return {
            "vector_store": {"provider": "qdrant", "config": {
                "collection_name": "twist", "embedding_model_dims": active().dim,
                "path": ":memory:",
                "on_disk": False}},
            "embedder": {"provider": "langchain", "config": {"model": _langchain_embedder()}},
            "llm": {"provider": "openai", "config": llm},
            "history_db_path": ":memory:",
        }

    # -- the contract ---------------------------------------------------------------------------

    def reset(self, conversation_id: str) -> None:
        from mem0 import Memory  # imported by __init__ (optional dependency)

        self.close()
        self.memory = Memory.from_config(self._memory_config())
        store = getattr(self.memory, "vector_store", None)
        if store is not None and hasattr(store, "_bm25_encoder"):
            # With fastembed installed, Mem0 would download a BM25 model from a hub at the first
            # add; False is Mem0's own "tried, unavailable" mark. Offline means no download.
            store._bm25_encoder = False
        self.conversation_id = conversation_id or "conversation"
        self.sources, self.texts = {}, {}

    def close(self) -> None:
        """Free the conversation's store (Mem0's reset() keeps its clients open)."""
        if self.memory is not None:
            closer = getattr(self.memory, "close", None)
            if callable(closer):
                closer()
            client = getattr(getattr(self.memory, "vector_store", None), "client", None)
            if client is not None and callable(getattr(client, "close", None)):
                client.close()
        self.memory = None

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        if self.memory is None:
            raise RuntimeError("ingest before reset")
        for ev in events:
            message = {"role": "user", "name": ev.speaker, "content": turn_text(ev)}
            out = self.memory.add([message], run_id=self.conversation_id, infer=self.infer,
                                  metadata={"turn_id": ev.id, "session": ev.session,
                                            "timestamp": ev.timestamp.isoformat()})
            for r in out.get("results", []):
                mid = str(r.get("id"))
                if r.get("event") == "DELETE":
                    self.sources.pop(mid, None)
                    self.texts.pop(mid, None)
                    continue
                turns = self.sources.setdefault(mid, [])
                if ev.id not in turns:
                    turns.append(ev.id)
                self.texts[mid] = str(r.get("memory", self.texts.get(mid, "")))
        return IngestResult()

    def _search(self, query: str, k: int) -> list[dict[str, Any]]:
        if self.memory is None:
            raise RuntimeError("search before reset")
        if not query.strip() or not self.sources:
            return []  # Mem0 refuses an empty query; an empty store has nothing to find
        out = self.memory.search(query, top_k=k, filters={"run_id": self.conversation_id},
                                 threshold=self.search_threshold)
        return [r for r in out.get("results", []) if str(r.get("id")) in self.sources]

    def recall(self, query: str) -> Answer:
        hits = self._search(query, self.answer_memories)
        if not hits:
            return Answer(text=NO_ANSWER, evidence=[])
        evidence: list[str] = []
        for h in hits:
            evidence.extend(t for t in self.sources[str(h["id"])] if t not in evidence)
        return Answer(text="\n".join(str(h.get("memory", "")) for h in hits), evidence=evidence)

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        return [ScoredMemory(id=str(h["id"]), score=float(h.get("score") or 0.0))
                for h in self._search(query, k)]

    def lineage(self) -> list[LineageRecord]:
        return [LineageRecord(memory_id=mid, sources=list(turns), raw=not self.infer,
                              canonical=False, text=self.texts.get(mid, ""))
                for mid, turns in self.sources.items() if turns]
