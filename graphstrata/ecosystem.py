"""graphstrata's embedder in the shapes that LangChain and neo4j-graphrag expect.

Their retrievers embed the question themselves; it must land in the vector space graphstrata
indexed, so they get graphstrata's own embedder (the one `init` recorded), wrapped. Neither library
is a dependency of graphstrata: each wrapper imports its library when called.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphstrata.cypher import query
from graphstrata.embed import Embedder

#: The `retrieval_query` that walks chunk → entities → relations (graphstrata/cypher/ecosystem.cypher).
RETRIEVAL_QUERY = query("ecosystem.chunk_context")


def langchain_embeddings(embedder: Embedder) -> Any:
    """A `langchain_core.embeddings.Embeddings` that embeds with `embedder`."""
    from langchain_core.embeddings import Embeddings

    class GraphStrataEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return _as_lists(embedder, texts)

        def embed_query(self, text: str) -> list[float]:
            return _as_lists(embedder, [text])[0]

    return GraphStrataEmbeddings()


def graphrag_embedder(embedder: Embedder) -> Any:
    """A `neo4j_graphrag.embeddings.Embedder` that embeds with `embedder`."""
    from neo4j_graphrag.embeddings.base import Embedder as GraphRAGEmbedder

    class GraphStrataEmbedder(GraphRAGEmbedder):
        def embed_query(self, text: str) -> list[float]:
            return _as_lists(embedder, [text])[0]

    return GraphStrataEmbedder()


def _as_lists(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    return [[float(x) for x in row] for row in embedder.embed(list(texts))]
