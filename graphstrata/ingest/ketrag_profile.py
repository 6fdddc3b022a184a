"""KET-RAG's cost-saving index (arXiv:2502.09304, §5.1, Algorithm 3) as an ingest profile.

Every chunk gets its text, embeddings and keyword graph; the chunk KNN graph and PageRank pick the
top ``beta`` share as core chunks; only those go to the knowledge extractor (the skeleton). The
report states the extraction calls and prompt tokens saved against extracting every chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.ingest.extract import extraction_messages
from graphstrata.ingest.options import IngestOptions, IngestReport
from graphstrata.text.tokens import count_tokens

#: ``run(options, core_chunk_ids, force)``: one pass of the ordinary ingest over the caller's input.
IngestPass = Callable[[IngestOptions, "set[str] | None", bool], IngestReport]


def ingest_ketrag_profile(
    db: Database, options: IngestOptions, run: IngestPass, augment: Callable[..., Any]
) -> IngestReport:
    """Index with ``options.ketrag_beta`` and ``options.ketrag_knn_k``; ``augment(stages, **params)``
    builds the chunk KNN graph and the core flags (:mod:`graphstrata.augment.similarity`)."""
    beta, knn_k = options.ketrag_beta, options.ketrag_knn_k
    plain = options.model_copy(update={"profile": "full"})
    first = run(plain.model_copy(update={"extractor": "none"}), None, False)
    augment(["chunk_knn", "core_chunks"], beta=beta, knn_k=knn_k)
    rows = db.read(query("augment.chunk_core_flags"))
    core = {r["id"] for r in rows if r["core"]}
    report = run(plain.model_copy(update={"extract_core_only": True}), core, True)
    # Rewriting the documents replaced their chunk nodes: restore the KNN graph and core flags
    # (deterministic: the same chunks and vectors give the same core set).
    augment(["chunk_knn", "core_chunks"], beta=beta, knn_k=knn_k)
    skipped = [r["text"] for r in rows if not r["core"]]
    schema = options.extraction_schema
    prompt_tokens = sum(count_tokens(m["content"]) for t in skipped for m in extraction_messages(t, schema))
    report.ketrag = {
        "beta": beta,
        "knn_k": knn_k,
        "chunks": len(rows),
        "core_chunks": len(core),
        "llm_calls_saved": len(skipped),
        "prompt_tokens_saved": prompt_tokens,
    }
    report.errors = first.errors + report.errors
    # the second pass rewrites what the first wrote: what happened to the caller's documents is the first's
    report.documents_new = first.documents_new
    report.documents_replaced = first.documents_replaced
    report.documents_unchanged = first.documents_unchanged
    return report
