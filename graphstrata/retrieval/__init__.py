"""Retrieval methods: one module per paper, all returning `RetrievalResult`."""

from graphstrata.retrieval.base import (
    METHODS,
    ContextItem,
    RetrievalError,
    RetrievalResult,
    Retriever,
    RetrieverParams,
    available_methods,
    get_retriever,
)

__all__ = [
    "METHODS",
    "ContextItem",
    "RetrievalError",
    "RetrievalResult",
    "Retriever",
    "RetrieverParams",
    "available_methods",
    "get_retriever",
]
