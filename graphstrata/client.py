"""`GraphStrata`: the one documented Python entry point.

from graphstrata import GraphStrata

with GraphStrata() as gs:                 # NEO4J_URI, or the local `graphstrata neo4j start` server
    report = gs.ingest(["docs/"])         # chunks, entities, keywords … with progress
    print(report.seconds)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from graphstrata.config import Settings, get_settings
from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.embed import Embedder, get_embedder
from graphstrata.generate import Answer, answer
from graphstrata.ingest.load import SourceDocument
from graphstrata.ingest.pipeline import IngestOptions, Ingestor, IngestReport
from graphstrata.retrieval.base import RetrievalResult, available_methods, get_retriever


class GraphStrata:
    """A connection to one graphstrata graph (one Neo4j database) and the operations on it."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        db: Database | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.settings = settings or get_settings()
        self._own_db = db is None
        self.db = db or Database.from_settings(self.settings)
        self.embedder = embedder or get_embedder(self.settings)

    def close(self) -> None:
        if self._own_db:
            self.db.close()

    def __enter__(self) -> GraphStrata:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- documents ----------------------------------------------------------------------------
    def ingest(
        self, paths: Iterable[str | Path], options: IngestOptions | None = None, progress: bool = False
    ) -> IngestReport:
        """Load files/folders (.txt, .md, .json, .jsonl) into the graph.

        Unchanged documents are skipped, changed ones replaced; unreadable files are listed in
        ``report.errors`` and never half-written.
        """
        return Ingestor(self.db, self.embedder, options, progress).ingest(paths)

    def ingest_texts(
        self, docs: Sequence[tuple[str, str]], options: IngestOptions | None = None, progress: bool = False
    ) -> IngestReport:
        """Ingest (title, text) pairs; the title is the document's identity."""
        sources = [SourceDocument(source=t, title=t, text=x) for t, x in docs]
        return Ingestor(self.db, self.embedder, options, progress).ingest_documents(sources)

    def delete(self, ref: str) -> list[dict]:
        """Delete documents by id, source path or title, with whatever only they supported."""
        return Ingestor(self.db, self.embedder).delete(ref)

    # --- questions ----------------------------------------------------------------------------
    def retrieve(self, question: str, method: str = "vector", **params: Any) -> RetrievalResult:
        """Context for `question` by `method` (see `methods()`), packed into `budget` tokens."""
        return get_retriever(method, self.db, self.embedder, self.settings).retrieve(question, **params)

    def ask(self, question: str, method: str = "vector", **params: Any) -> Answer:
        """Retrieve, then answer with the configured model (or return the evidence when none is)."""
        return answer(question, self.retrieve(question, method, **params), self.settings)

    @staticmethod
    def methods() -> dict[str, dict[str, Any]]:
        """Available retrieval methods with their parameters and defaults."""
        return available_methods()

    def stats(self) -> dict[str, dict[str, int]]:
        """Nodes per label and relationships per type."""
        return {
            "labels": {r["label"]: r["n"] for r in self.db.read(query("meta.label_counts"))},
            "relationships": {r["type"]: r["n"] for r in self.db.read(query("meta.rel_counts"))},
        }
