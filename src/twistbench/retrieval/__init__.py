"""Retrieval for the reference systems and the TIAP audit: lexical (BM25) and dense (MiniLM
int8 ONNX) retrievers behind one interface, and the rule-based fact parser."""

from twistbench.retrieval.base import Hit, Retriever, top_k, turn_text
from twistbench.retrieval.dense import DenseRetriever
from twistbench.retrieval.lexical import LexicalRetriever

RETRIEVERS = ("lexical", "dense")


def make_retriever(name: str, **options: object) -> Retriever:
    """A fresh retriever: "lexical" (BM25, bm25s) or "dense" (MiniLM-L6 int8 ONNX)."""
    if name == "lexical":
        return LexicalRetriever(**options)  # type: ignore[arg-type]
    if name == "dense":
        return DenseRetriever(**options)  # type: ignore[arg-type]
    raise ValueError(f"unknown retriever {name!r} (expected 'lexical' or 'dense')")


__all__ = ["RETRIEVERS", "Hit", "Retriever", "make_retriever", "top_k", "turn_text"]
