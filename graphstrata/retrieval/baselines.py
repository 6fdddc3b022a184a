"""The yardsticks every method is measured against: dense vector top-k over chunks (Text-RAG)
and Lucene full-text (BM25) over chunks."""

from __future__ import annotations

import re
import unicodedata

from graphstrata.cypher import query
from graphstrata.retrieval.base import (
    ContextItem,
    Retrieved,
    Retriever,
    RetrieverParams,
    Subgraph,
    Timer,
    chunk_text,
    hnsw_candidates,
    register,
)

_LUCENE_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/&|])')
_LUCENE_WORDS = {"AND", "OR", "NOT", "TO"}


#: Lucene refuses a query of more than 1024 clauses; the chunk index searches two fields, so each
#: word the analyzer makes is two clauses. A longer question keeps its first words within this many.
MAX_CLAUSE_WORDS = 400


def _analyzed_words(term: str) -> int:
    """How many words Lucene's standard analyzer makes of `term`: one, but one per ideograph or kana."""
    return max(
        1, sum(1 for ch in term if ord(ch) >= 0x3040 and unicodedata.name(ch, "").startswith(("CJK", "HIRAGANA")))
    )


def lucene_terms(text: str) -> str:
    """A user's words as a plain OR-query: every Lucene operator escaped, so no input is syntax;
    each word once (case-insensitively), no more than Lucene accepts (MAX_CLAUSE_WORDS)."""
    distinct: dict[str, str] = {}
    for t in re.findall(r"\w+", text):
        if t.upper() not in _LUCENE_WORDS:
            distinct.setdefault(t.lower(), t)
    terms, used = [], 0
    for t in distinct.values():
        used += _analyzed_words(t)
        if used > MAX_CLAUSE_WORDS:
            break
        terms.append(t)
    return " ".join(_LUCENE_SPECIAL.sub(r"\\\1", t) for t in terms)


def chunk_items(rows: list[dict], why: str) -> list[ContextItem]:
    # rows of retrieval.vector_chunks / fulltext_chunks: a chunk a concurrent replace/delete is taking
    # apart is already left out there (its text or title read as null)
    return [
        ContextItem(
            node_id=r["id"],
            label="Chunk",
            text=chunk_text(r["title"], r["text"]),
            score=float(r["score"]),
            why=why,
            chunk_ids=[r["id"]],
            doc_titles=[r["title"]] if r["title"] else [],
        )
        for r in rows
    ]


@register
class VectorRetriever(Retriever):
    name = "vector"
    summary = "Dense retrieval: vector-index top-k over chunk embeddings (Text-RAG baseline)."

    def _retrieve(self, question: str, p: RetrieverParams, t: Timer) -> Retrieved:
        with t.stage("embed"):
            v = self.embed_query(question)
        with t.stage("search"):
            rows = self.db.read(
                query("retrieval.vector_chunks"), k=p.top_k, candidates=hnsw_candidates(p.top_k), vector=v
            )
        items = chunk_items(rows, "cosine similarity to the question")
        return Retrieved(items, Subgraph(nodes=[i.node_id for i in items]), {})


@register
class FulltextRetriever(Retriever):
    name = "fulltext"
    summary = "Lexical retrieval: Lucene (BM25) full-text over chunk text and titles."

    def _retrieve(self, question: str, p: RetrieverParams, t: Timer) -> Retrieved:
        q = lucene_terms(question)
        if not q:
            return Retrieved([], Subgraph(), {"query": q})
        with t.stage("search"):
            rows = self.db.read_plain(query("retrieval.fulltext_chunks"), k=p.top_k, terms=q)
        items = chunk_items(rows, "full-text (BM25) match of the question's words")
        return Retrieved(items, Subgraph(nodes=[i.node_id for i in items]), {"query": q})
