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

from graphstrata.blas import limit_blas_threads
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
        limit_blas_threads(self.settings.blas_threads)
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
    def _ingestor(
        self,
        options: IngestOptions | None,
        progress: bool,
        on_progress: Callable[[str, int, int], None] | None = None,
    ) -> Ingestor:
        options = options or IngestOptions()
        llm = self.llm if options.extractor in ("auto", "llm") else None
        if llm is not None:
            record_schema(self.db, options.extraction_schema, options.allow_schema_change)
        elif options.extraction_schema is not None and options.extractor != "none":
            raise LLMNotConfigured("an extraction schema steers LLM extraction; no language model is configured")
        return Ingestor(self.db, self.embedder, options, progress, llm=llm, on_progress=on_progress)

    def ingest(
        self,
        paths: Iterable[str | Path],
        options: IngestOptions | None = None,
        progress: bool = False,
        on_progress: Callable[[str, int, int], None] | None = None,
    ) -> IngestReport:
        """Load files/folders (.txt, .md, .json, .jsonl, .pdf, .html, .docx) into the graph.

        Unchanged documents are skipped, changed ones replaced; unreadable files are listed in
        ``report.errors`` and never half-written. Knowledge extraction per chunk uses the LLM when
        one is configured, else spaCy (``options.extractor``); chunks whose extraction failed are in
        ``report.failed_chunks`` and retried by the next ingest; ``report.llm`` has the LLM cost.
        ``options.profile="ketrag"`` extracts only KET-RAG's core chunks. ``on_progress(stage, done,
        total)`` is called as work advances.
        """
        paths = list(paths)

        def run(o: IngestOptions, core: set[str] | None, force: bool) -> IngestReport:
            return self._ingestor(o, progress, on_progress).ingest(paths, core_chunk_ids=core, force=force)

        return self._run_profile(options or IngestOptions(), run)

    def ingest_documents(
        self,
        docs: Sequence[SourceDocument],
        options: IngestOptions | None = None,
        progress: bool = False,
        on_progress: Callable[[str, int, int], None] | None = None,
    ) -> IngestReport:
        """Ingest loaded documents (:class:`SourceDocument`; a :class:`UserExtractedDocument` carries
        its own extraction); otherwise as :meth:`ingest`."""

        def run(o: IngestOptions, core: set[str] | None, force: bool) -> IngestReport:
            return self._ingestor(o, progress, on_progress).ingest_documents(docs, core_chunk_ids=core, force=force)

        return self._run_profile(options or IngestOptions(), run)

    def _run_profile(
        self, options: IngestOptions, run: Callable[[IngestOptions, set[str] | None, bool], IngestReport]
    ) -> IngestReport:
        if options.profile == "ketrag":
            from graphstrata.ingest.ketrag_profile import ingest_ketrag_profile

            return ingest_ketrag_profile(self.db, options, run, self.augment)
        return run(options, None, False)

    def ingest_ketrag(
        self,
        paths: Iterable[str | Path],
        options: IngestOptions | None = None,
        beta: float = 0.8,
        knn_k: int = 3,
        progress: bool = False,
    ) -> IngestReport:
        """:meth:`ingest` with KET-RAG's profile (``IngestOptions(profile="ketrag", ketrag_beta=beta,
        ketrag_knn_k=knn_k)``): only the PageRank core chunks go to the extractor (§5.1, Algorithm 3);
        ``report.ketrag`` states the LLM calls and prompt tokens saved."""
        update = {"profile": "ketrag", "ketrag_beta": beta, "ketrag_knn_k": knn_k}
        options = IngestOptions.model_validate({**(options or IngestOptions()).model_dump(), **update})
        return self.ingest(paths, options, progress)

    def ingest_texts(
        self, docs: Sequence[tuple[str, str]], options: IngestOptions | None = None, progress: bool = False
    ) -> IngestReport:
        """Ingest (title, text) pairs; the title is the document's identity."""
        sources = [SourceDocument(source=t, title=t, text=x) for t, x in docs]
        return self.ingest_documents(sources, options, progress)

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
        options = (options or IngestOptions()).model_copy(update={"extractor": "none", "profile": "full"})
        report = Ingestor(self.db, self.embedder, options, progress).ingest_documents(docs)
        report.skipped_invalid = parsed.skipped + report.skipped_invalid
        report.identity_notes = notes + report.identity_notes
        return report

    def delete(self, ref: str) -> list[dict]:
        """Delete documents by id, source path or title, with whatever only they supported (or the
        record of a file that could not be read)."""
        from graphstrata.documents import forget_failed

        return Ingestor(self.db, self.embedder).delete(ref) or forget_failed(self.db, ref)

    def augment(
        self,
        stages: list[str] | None = None,
        progress: bool = False,
        on_stage: Callable[[str, int, int], None] | None = None,
        warm: bool = True,
        **params: Any,
    ) -> list:
        """Build the GDS/LLM layers (KNN graphs, core chunks, attributes, communities, summary tree …).

        `stages` picks some (default: all, in pipeline order); `params` override stage parameters
        (e.g. `beta=0.5`, `knn_k=5`, `k_neighbor=5`); `on_stage(name, i, n)` is called as each starts.
        `warm`: then read the walk graphs this process's PPR questions use (a process that asks no
        question, as the `graphstrata augment` command, skips it)."""
        from graphstrata.augment import AugmentContext, run
        from graphstrata.augment.params import AugmentParams
        from graphstrata.retrieval.warmup import warm as warm_walks

        unknown = sorted(set(params) - set(AugmentParams.model_fields))
        if unknown:
            raise ValueError(f"unknown augment parameter(s) {unknown}; known: {sorted(AugmentParams.model_fields)}")
        self.settings.check_gds_backend()  # e.g. Aura sessions without credentials: before any stage writes
        ctx = AugmentContext(self.db, self.embedder, self.settings, progress=progress, llm=self.llm, params=params)
        reports = run(ctx, stages, on_stage)
        self.db.write(query("meta.touch"))
        if warm:
            warm_walks(self.db, self.settings.gds_concurrency)  # the first PPR question finds its projection built
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
