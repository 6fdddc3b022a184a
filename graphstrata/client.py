"""`GraphStrata`: the one documented Python entry point.

from graphstrata import GraphStrata

with GraphStrata() as gs:                 # NEO4J_URI, or the local `graphstrata neo4j start` server
    report = gs.ingest(["docs/"])         # chunks, entities, keywords … with progress
    print(report.seconds)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from graphstrata.config import Settings, get_settings
from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.embed import Embedder, get_embedder
from graphstrata.generate import Answer, answer
from graphstrata.ingest.extract import record_schema
from graphstrata.ingest.identity import Candidate, resolve_identities
from graphstrata.ingest.load import SourceDocument
from graphstrata.ingest.pipeline import IngestOptions, Ingestor, IngestReport, UserExtractedDocument
from graphstrata.ingest.user_extractions import read_user_extractions
from graphstrata.llm import LLMClient, LLMNotConfigured
from graphstrata.retrieval.base import RetrievalResult, available_methods, get_retriever


class GraphStrata:
    """A connection to one graphstrata graph (one Neo4j database) and the operations on it."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        db: Database | None = None,
        embedder: Embedder | None = None,
        llm: LLMClient | None = None,
    ) -> None:
        self.settings = settings or get_settings()
        self._own_db = db is None
        self.db = db or Database.from_settings(self.settings)
        self.embedder = embedder or get_embedder(self.settings)
        self._llm = llm
        self._own_llm = False

    @property
    def llm(self) -> LLMClient | None:
        """The LLM client (one per GraphStrata: one cache, one usage ledger); None in no-LLM mode."""
        if self._llm is None and self.settings.llm_enabled:
            self._llm = LLMClient.from_settings(self.settings)
            self._own_llm = True
        return self._llm

    def close(self) -> None:
        if self._own_db:
            self.db.close()
        if self._own_llm and self._llm is not None:
            self._llm.close()

    def __enter__(self) -> GraphStrata:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- documents ----------------------------------------------------------------------------
    def _ingestor(self, options: IngestOptions | None, progress: bool) -> Ingestor:
        options = options or IngestOptions()
        llm = self.llm if options.extractor in ("auto", "llm") else None
        if llm is not None:
            record_schema(self.db, options.extraction_schema, options.allow_schema_change)
        elif options.extraction_schema is not None and options.extractor != "none":
            raise LLMNotConfigured("an extraction schema steers LLM extraction; no language model is configured")
        return Ingestor(self.db, self.embedder, options, progress, llm=llm)

    def ingest(
        self, paths: Iterable[str | Path], options: IngestOptions | None = None, progress: bool = False
    ) -> IngestReport:
        """Load files/folders (.txt, .md, .json, .jsonl, .pdf, .html, .docx) into the graph.

        Unchanged documents are skipped, changed ones replaced; unreadable files are listed in
        ``report.errors`` and never half-written. Knowledge extraction per chunk uses the LLM when
        one is configured, else spaCy (``options.extractor``); chunks whose extraction failed are in
        ``report.failed_chunks`` and retried by the next ingest; ``report.llm`` has the LLM cost.
        """
        return self._ingestor(options, progress).ingest(paths)

    def ingest_ketrag(
        self,
        paths: Iterable[str | Path],
        options: IngestOptions | None = None,
        beta: float = 0.8,
        knn_k: int = 3,
        progress: bool = False,
    ) -> IngestReport:
        """KET-RAG's cost-saving index (§5.1, Algorithm 3): chunks, embeddings and the keyword graph for
        every chunk; the chunk KNN graph and PageRank pick the top `beta` share as core chunks; only
        those are sent to the knowledge extractor (the skeleton).

        `report.ketrag` states the LLM calls and prompt tokens saved against extracting every chunk.
        """
        from graphstrata.ingest.extract import extraction_messages
        from graphstrata.text.tokens import count_tokens

        options = options or IngestOptions()
        first = self._ingestor(options.model_copy(update={"extractor": "none"}), progress).ingest(paths)
        self.augment(["chunk_knn", "core_chunks"], beta=beta, knn_k=knn_k)
        rows = self.db.read(query("augment.chunk_core_flags"))
        core = {r["id"] for r in rows if r["core"]}
        report = self._ingestor(options.model_copy(update={"extract_core_only": True}), progress).ingest(
            paths, core_chunk_ids=core, force=True
        )
        # Rewriting the documents replaced their chunk nodes: restore the KNN graph and core flags
        # (deterministic: the same chunks and vectors give the same core set).
        self.augment(["chunk_knn", "core_chunks"], beta=beta, knn_k=knn_k)
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
        return report

    def ingest_texts(
        self, docs: Sequence[tuple[str, str]], options: IngestOptions | None = None, progress: bool = False
    ) -> IngestReport:
        """Ingest (title, text) pairs; the title is the document's identity."""
        sources = [SourceDocument(source=t, title=t, text=x) for t, x in docs]
        return self._ingestor(options, progress).ingest_documents(sources)

    def ingest_extractions(
        self,
        path: str | Path,
        options: IngestOptions | None = None,
        progress: bool = False,
        skip_invalid: bool = False,
    ) -> IngestReport:
        """Ingest a bring-your-own extractions file (JSON lines: ``title``, ``text``, ``entities``,
        ``triples``; format in :func:`graphstrata.ingest.user_extractions.read_user_extractions`).

        Each text is chunked as usual; its entities and triples are attached to the chunks that
        contain them (the first chunk otherwise) with ``extractor='user'``; no LLM is called. An
        invalid file raises ``UserExtractionError`` naming every bad line, before anything is written;
        with ``skip_invalid`` the bad triples/entities/lines are left out and listed, with their line
        numbers, in ``report.skipped_invalid``.
        """
        parsed = read_user_extractions(path, skip_invalid=skip_invalid)
        # the identity rules of every input (graphstrata/ingest/identity.py): id, else source, else title
        docs, notes = resolve_identities(
            Candidate(UserExtractedDocument.from_user(d), bool(d.id or d.source), f"{Path(path).name}:{d.line}")
            for d in parsed.documents
        )
        # the documents carry their extraction: no extractor (and no LLM) is involved
        options = (options or IngestOptions()).model_copy(update={"extractor": "none"})
        report = Ingestor(self.db, self.embedder, options, progress).ingest_documents(docs)
        report.skipped_invalid = parsed.skipped + report.skipped_invalid
        report.identity_notes = notes + report.identity_notes
        return report

    def delete(self, ref: str) -> list[dict]:
        """Delete documents by id, source path or title, with whatever only they supported."""
        return Ingestor(self.db, self.embedder).delete(ref)

    def augment(
        self,
        stages: list[str] | None = None,
        progress: bool = False,
        on_stage: Callable[[str, int, int], None] | None = None,
        **params: Any,
    ) -> list:
        """Build the GDS/LLM layers (KNN graphs, core chunks, attributes, communities, summary tree …).

        `stages` picks some (default: all, in pipeline order); `params` override stage parameters
        (e.g. `beta=0.5`, `knn_k=5`, `k_neighbor=5`); `on_stage(name, i, n)` is called as each starts."""
        from graphstrata.augment import AugmentContext, run
        from graphstrata.retrieval.base import warm

        ctx = AugmentContext(self.db, self.embedder, self.settings, progress=progress, llm=self.llm, params=params)
        reports = run(ctx, stages, on_stage)
        self.db.write(query("meta.touch"))
        warm(self.db, self.settings.gds_concurrency)  # the first PPR question finds its projection built
        return reports

    # --- questions ----------------------------------------------------------------------------
    def retrieve(self, question: str, method: str = "vector", **params: Any) -> RetrievalResult:
        """Context for `question` by `method` (see `methods()`), packed into `budget` tokens."""
        return get_retriever(method, self.db, self.embedder, self.settings, self.llm).retrieve(question, **params)

    def ask(self, question: str, method: str = "vector", **params: Any) -> Answer:
        """Retrieve, then answer with the configured model (or return the evidence when none is)."""
        return answer(question, self.retrieve(question, method, **params), self.settings, client=self.llm)

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
