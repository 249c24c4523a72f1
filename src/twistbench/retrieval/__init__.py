"""Retrieval for the reference systems and the TIAP audit: lexical (BM25) and dense (MiniLM
int8 ONNX) retrievers behind one interface, and the rule-based fact parser."""

from twistbench.retrieval.base import RETRIEVERS, Hit, Retriever, make_retriever, top_k

__all__ = ["RETRIEVERS", "Hit", "Retriever", "make_retriever", "top_k"]
