"""load → chunk → spaCy → extract → embed → write: documents into the chunk, entity, keyword and
knowledge-extraction layers (design: "The graph").

Writes are grouped in transactions of whole documents: a document lands completely or not at
all. Ids are content-derived, so a re-ingest of unchanged text is a no-op; a changed document is
replaced (its old contributions subtracted) in the same transaction that writes the new one.

Extraction (one :class:`ChunkExtraction` per chunk, from the LLM, spaCy or the user) adds, per
chunk: a title and description (DA-RAG §4.1 chunk layer), entities merged by normalised name into
the same ``Entity`` nodes the spaCy pass makes, relations as both ``RELATED`` edges and nodalized
``Relation`` nodes (NodeRAG R), and ``SemanticUnit`` nodes (NodeRAG S). What several chunks share
(an entity's type and descriptions, a ``RELATED`` edge's weight and descriptions) is kept as counts
of the per-chunk records, updated by every write or removal that touches it
(:mod:`graphstrata.ingest.tally`), so any history of ingests, replacements and deletions ends in
the graph a fresh ingest would build.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from neo4j.exceptions import (
    DriverError,
    Neo4jError,
)

from graphstrata.cypher import query
from graphstrata.db import Database, TransactionTooLarge
from graphstrata.embed import Embedder
from graphstrata.ingest.assemble import (
    BatchVectors,
    assemble_rows,
    attach_unit_and_relation_vectors,
    chunk_rows,
    embedding_inputs,
)
from graphstrata.ingest.changes import chunk_setting_changes, same_text_notes
from graphstrata.ingest.chunk import split_text
from graphstrata.ingest.errors import ConcurrentChange, IngestWriteError, before_writes, doc_name
from graphstrata.ingest.extract import extract_with_llm
from graphstrata.ingest.extract_spacy import extract_many_with_spacy
from graphstrata.ingest.flow import Abandoned, analyse_chunks, batches, count_write, usage_delta
from graphstrata.ingest.identity import Candidate, resolve_identities
from graphstrata.ingest.load import LoadError, SourceDocument, load_paths
from graphstrata.ingest.options import IngestOptions, IngestReport
from graphstrata.ingest.parts import PART_MARK, find_documents, split_large
from graphstrata.ingest.provenance import piece_provenance
from graphstrata.ingest.rows import Contribution, PreparedDoc, UserExtractedDocument, extraction_rows
from graphstrata.ingest.user_extractions import attach_user_extractions
from graphstrata.ingest.write import GraphWriter
from graphstrata.llm import ExtractionFailed, LLMClient, LLMNotConfigured
from graphstrata.progress import Tracker
from graphstrata.schema import apply_schema, document_embedder
from graphstrata.text.names import entity_id, normalize_name
from graphstrata.text.nlp import Analysis

if TYPE_CHECKING:
    from spacy.tokens import Doc


@dataclass
class _Batch:
    """One batch of documents between its preparation and its write."""

    docs: Sequence[SourceDocument]
    todo: list[PreparedDoc]
    report: IngestReport
    analyses: list[Analysis] = field(default_factory=list)  # one per sub-chunk, in order


class Ingestor:
    """Ingests documents into one graph. ``llm``: the client for ``extractor="llm"`` (and ``"auto"``)."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        options: IngestOptions | None = None,
        progress: bool = False,
        llm: LLMClient | None = None,
        on_progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.options = options or IngestOptions()
        self.show_progress = progress
        self.on_progress = on_progress  # optional on_progress(stage, done, total), called as work advances
        self.llm = llm
        self.writer = GraphWriter(db, self.options)
        apply_schema(db, embedder.name, embedder.dim, precision=embedder.default_precision)
        # passages and names in float32, as questions; the graph's other texts at its precision
        self.texts = document_embedder(db, embedder)

    @property
    def extractor(self) -> str:
        """The extractor in effect for ordinary documents: llm, spacy or none."""
        x = self.options.extractor
        if x == "auto":
            return "llm" if self.llm is not None else "spacy"
        if x == "llm" and self.llm is None:
            raise LLMNotConfigured(
                "extractor 'llm' needs an LLM endpoint (OPENAI_BASE_URL/OPENAI_API_KEY and GRAPHSTRATA_CHAT_MODEL)"
            )
        return x

    # --- public ---------------------------------------------------------------------------
    def ingest(
        self, paths: Iterable[str | Path], core_chunk_ids: set[str] | None = None, force: bool = False
    ) -> IngestReport:
        t = time.perf_counter()
        docs, errors, notes = load_paths(paths, self.options.max_document_bytes)
        load_s = time.perf_counter() - t
        report = self.ingest_documents(docs, core_chunk_ids, force)
        report.errors = [str(e) for e in errors] + report.errors
        report.identity_notes = notes + report.identity_notes
        report.seconds["load"] = load_s
        return report

    def ingest_documents(
        self, docs: Sequence[SourceDocument], core_chunk_ids: set[str] | None = None, force: bool = False
    ) -> IngestReport:
        """Ingest documents; :class:`UserExtractedDocument` ones carry their own extraction.

        ``core_chunk_ids``: with ``extract_core_only`` (KET-RAG §4.1), the ids of the chunks to
        extract; every other chunk is written with ``extraction_status='skipped'``.
        """
        if self.options.extract_core_only and core_chunk_ids is None:
            raise ValueError("extract_core_only needs core_chunk_ids (the KET-RAG core chunks)")
        if self.extractor == "llm" and self.llm is not None:  # (raises when the LLM is asked for but not configured)
            self.llm.check_cache()  # an unwritable reply cache fails now, before any paid call
        report = IngestReport()
        # one Document per identity: two versions of one document in one ingest would both be written
        # under it (a Document holding both versions' chunks); the later wins, and the report says so
        docs, report.identity_notes = resolve_identities(Candidate(d, True, doc_name(d)) for d in docs)
        whole = list(docs)
        docs = split_large(whole, self.options.part_chars)  # memory per document: bounded by the part size
        stages = Tracker(self.show_progress, self.on_progress)
        before = self.llm.usage() if self.llm is not None else {}
        # Three batches at once: this thread parses and extracts batch i+2 (one core), the embedding
        # thread embeds batch i+1's texts (every core), the writing thread writes batch i. The writing
        # thread also reads which entities are new, and embeds their names, after batch i-1's write:
        # it sees what that wrote.
        embedding = ThreadPoolExecutor(1, thread_name_prefix="graphstrata-embed")
        writing = ThreadPoolExecutor(1, thread_name_prefix="graphstrata-write")
        flight: list[Future[IngestReport]] = []  # the batches' writes, oldest first
        try:
            for part in batches(docs, self.options.batch_documents, 2 * self.options.part_chars):
                batch = self._prepare(part, stages, core_chunk_ids, force)
                while len(flight) >= 2:  # at most two batches between this thread and the graph
                    count_write(flight.pop(0), report)
                if not batch.todo:
                    report.add(batch.report)
                    continue
                texts = embedding.submit(self._embed, embedding_inputs(batch.todo, batch.analyses), stages)
                last = flight[-1] if flight else None
                flight.append(writing.submit(self._finish, batch, texts, last, stages, core_chunk_ids, force))
            while flight:
                count_write(flight.pop(0), report)
            self._drop_stale_parts(whole, {d.source for d in docs}, report)
        finally:
            for f in flight:
                f.cancel()
            wait(flight)  # after an error: a write under way still ends, whole or not at all
            embedding.shutdown(cancel_futures=True)
            writing.shutdown()
            stages.close()
            self.writer.refresh_keywords(report.keyword_terms)  # count_write added a failed batch's
        if self.llm is not None:
            report.llm = usage_delta(before, self.llm.usage())
        report.seconds.update({k: round(v, 3) for k, v in stages.seconds.items()})
        return report

    def delete(self, ref: str) -> list[dict]:
        """Delete documents by id, source or title (a document in parts: every part), and what only they supported."""
        found = find_documents(self.db, ref)
        for d in found:
            for _ in range(5):
                state = self.db.read_one(query("ingest.document_state"), ids=[d["id"]])
                if state is None:
                    break
                removes = self._old_contribution(d["id"])
                try:
                    self.db.write_tx(
                        lambda tx, d=d, s=state, r=removes: self.writer.delete_tx(tx, d["id"], s["sha256"], r)
                    )
                    break
                except ConcurrentChange:
                    continue
                except (Neo4jError, DriverError, TransactionTooLarge) as e:
                    name = d["source"] if d["title"] == d["source"] else f"{d['title']} ({d['source']})"
                    raise IngestWriteError("delete", [name], e) from e
        if found:
            self.db.write(query("meta.touch"))
        return found

    def _drop_stale_parts(self, whole: Sequence[SourceDocument], written: set[str], report: IngestReport) -> None:
        """Delete the stored parts of these documents that their new versions no longer have (or the
        unsplit version of a document now in parts, or the parts of one now whole)."""
        rows = self.db.read(query("ingest.stored_parts"), sources=[d.source for d in whole], mark=PART_MARK)
        for r in rows:
            if r["source"] not in written:
                self.delete(r["id"])
                report.identity_notes.append(f"{r['source']}: removed (the document's new version has no such part)")

    # --- planning -------------------------------------------------------------------------
    def _old_contribution(self, doc_id: str) -> Contribution:
        """Re-derive what the stored version of a document added, to subtract it exactly."""
        rows = self.db.read(query("ingest.document_chunks"), id=doc_id)
        chunks = [(r["text"], [s["text"] for s in r["subs"] if s["id"] is not None]) for r in rows]
        # as they were analysed: a chunk written before sub-chunks were cut from its parse has them parsed alone
        _, analyses, _ = analyse_chunks(chunks, [bool(r["subs_cut"]) for r in rows])
        sents = [s.text for a in analyses for s in a.sentences]
        vecs = self.texts.embed(sents)
        contrib, i = Contribution(), 0
        for a in analyses:
            contrib.add_analysis(a, vecs[i : i + len(a.sentences)])
            i += len(a.sentences)
        return contrib

    def _extract(self, todo: list[PreparedDoc], st: Tracker, core: set[str] | None, parsed: dict[str, Doc]) -> None:
        """One :class:`ChunkExtraction` per chunk into ``p.extractions``; failures into ``p.failed``.

        Identical chunk texts are extracted once. LLM calls run ``llm_concurrency`` at a time through
        :meth:`LLMClient.map`, and its cache makes a re-ingest free. A chunk whose extraction fails
        (:class:`ExtractionFailed`: invalid output after re-asks, or an endpoint that stays down) is
        reported and written without extraction; any other error (bad credentials, …) aborts.
        """
        mode = self.extractor
        jobs: dict[str, list[tuple[PreparedDoc, dict]]] = defaultdict(list)
        for p in todo:
            if isinstance(p.doc, UserExtractedDocument) and p.doc.extraction is not None:
                found = attach_user_extractions(p.doc.extraction, [c["text"] for c in p.chunks])
                p.extractions = {c["id"]: x for c, x in zip(p.chunks, found, strict=True)}
                continue
            for c in p.chunks:
                if mode != "none" and (core is None or not self.options.extract_core_only or c["id"] in core):
                    jobs[c["text"]].append((p, c))
        texts = list(jobs)
        if not texts:
            return
        with st.stage("extract", len(texts)) as advance:
            if mode == "llm":
                llm = self.llm
                assert llm is not None
                results = llm.map(
                    lambda text: extract_with_llm(llm, text, schema=self.options.extraction_schema),
                    texts,
                    progress=lambda done, total: advance(1),
                    return_exceptions=True,
                )
            else:
                results = extract_many_with_spacy(texts, advance, parsed=parsed)
        for text, result in zip(texts, results, strict=True):
            if isinstance(result, BaseException) and not isinstance(result, ExtractionFailed):
                raise result
            for p, c in jobs[text]:
                if isinstance(result, ExtractionFailed):
                    failure = {"doc": p.doc.source, "title": p.doc.title, "chunk": c["ordinal"], "error": str(result)}
                    p.failed.append(failure)
                else:
                    p.extractions[c["id"]] = result

    def _prepare(self, docs: Sequence[SourceDocument], st: Tracker, core: set[str] | None, force: bool) -> _Batch:
        """What needs no write of an earlier batch: plan, chunk, spaCy, extract."""
        todo, report = self._plan(docs, force)
        batch = _Batch(docs, todo, report)
        if not todo:
            return batch
        texts: list[tuple[str, list[str]]] = []
        with st.stage("chunk", len(todo)) as advance:
            for p in todo:
                pieces = split_text(p.doc.text, self.options)
                # by where the chunker cut, not by searching the text (repeated boilerplate)
                where = piece_provenance(p.doc.text, p.doc.sections, pieces, self.options.chunking != "semantic")
                texts += chunk_rows(p, pieces, where, self.options)
                advance(1)
        with st.stage("spacy", len({text for text, _ in texts})) as advance:
            parsed, batch.analyses, subs_cut = analyse_chunks(texts, None, advance)
        for c, was_cut in zip((c for p in todo for c in p.chunks), subs_cut, strict=True):
            c["subs_cut"] = was_cut
        # every chunk was just parsed: its extraction reads that parse
        self._extract(todo, st, core, parsed)
        for p in todo:
            extraction_rows(p)
        return batch

    def _finish(
        self,
        batch: _Batch,
        texts: Future[list[np.ndarray]],
        previous: Future[IngestReport] | None,
        st: Tracker,
        core: set[str] | None,
        force: bool,
    ) -> IngestReport:
        """On the writing thread: a batch's vectors onto its rows, then its write. When another writer
        changed one of its documents after it was planned (:class:`ConcurrentChange`), the batch is
        planned and written again, up to four more times; the batches after it wait."""
        if previous is not None and (previous.cancelled() or previous.exception() is not None):
            raise Abandoned  # an earlier batch failed: the ingest stops there
        parts = texts.result()
        for attempt in range(5):
            try:
                if attempt:
                    batch = self._prepare(batch.docs, st, core, force)
                    if not batch.todo:
                        return batch.report
                    parts = self._embed(embedding_inputs(batch.todo, batch.analyses), st)
                self._vectors(batch, parts, st)
                return self._write(batch.todo, batch.report, st)
            except ConcurrentChange:
                if attempt == 4:
                    raise
        raise AssertionError("unreachable")

    def _vectors(self, batch: _Batch, parts: list[np.ndarray], st: Tracker) -> None:
        """The vectors of the batch's texts (``parts``, of :func:`embedding_inputs`) and of the names
        of entities new to the graph (after the earlier batches' writes) onto its rows."""
        new_names = self._new_entity_names(batch.todo, batch.docs)
        (names,) = self._embed([list(new_names.values())], st, [self.embedder])
        attach_unit_and_relation_vectors(batch.todo, parts[3], parts[4])
        vectors = BatchVectors.split(parts, batch.analyses, dict(zip(new_names, names, strict=True)))
        with st.stage("assemble", len(batch.todo)) as advance:
            for p in batch.todo:
                assemble_rows(p, vectors)
                advance(1)

    # --- stages ---------------------------------------------------------------------------
    def _plan(self, docs: Sequence[SourceDocument], force: bool) -> tuple[list[PreparedDoc], IngestReport]:
        """The documents to write (new, changed or forced) with what their stored versions added."""
        report = IngestReport()
        with before_writes(docs):
            state = {r["id"]: r for r in self.db.read(query("ingest.document_state"), ids=[d.id for d in docs])}
        todo: list[PreparedDoc] = []
        report.identity_notes += same_text_notes(self.db, [d for d in docs if d.id not in state])
        for d in docs:
            s = state.get(d.id)
            # A document with a failed chunk is never "unchanged": the next ingest retries it.
            # `force` rewrites unchanged documents too (e.g. to extract with another profile).
            same_text = s is not None and s["sha256"] == d.sha256
            rechunk = same_text and chunk_setting_changes(self.options, s.get("chunked"))
            if rechunk:  # same text, other chunk settings: written again with the new ones (force)
                report.identity_notes.append(f"{d.title}: unchanged text chunked again ({rechunk})")
            if same_text and not s["failed"] and not force and not rechunk:
                report.documents_unchanged += 1
            else:
                todo.append(PreparedDoc(d, s["sha256"] if s else None, force=force or bool(rechunk)))
        with before_writes(docs):
            for p in todo:
                if p.old_sha is not None:
                    p.removes = self._old_contribution(p.doc.id)
        return todo, report

    def _new_entity_names(self, todo: list[PreparedDoc], docs: Sequence[SourceDocument]) -> dict[str, str]:
        """Extracted entities new to the graph (normalised key -> a name to embed).

        An entity that only documents being replaced mention is deleted and re-created by the
        replacement, so it counts as new. (E2GraphRAG's terms are matched by name and get none.)
        """
        all_keys: dict[str, str] = {}
        for p in todo:
            for x in p.extractions.values():
                for e in x.entities:
                    all_keys.setdefault(normalize_name(e.name), e.name)
        replacing = [p.doc.id for p in todo if p.old_sha is not None]
        with before_writes(docs):
            rows = self.db.read(
                query("ingest.existing_entities"), ids=[entity_id(k) for k in all_keys], replacing=replacing
            )
        known = {r["id"] for r in rows}
        return {k: name for k, name in all_keys.items() if entity_id(k) not in known}

    def _embed(
        self, parts: list[list[str]], st: Tracker, embedders: Sequence[Embedder] | None = None
    ) -> list[np.ndarray]:
        """Each part's vectors, every distinct text embedded once. By default the parts of
        :func:`embedding_inputs`: passages, chunks and sub-chunks by the float32 encoder questions are
        embedded with (int8 chunk vectors measured below float32 in retrieval); sentences, semantic
        units and relations by the graph's text embedder."""
        embedders = embedders or [self.embedder, self.embedder, *[self.texts] * (len(parts) - 2)]
        groups: dict[int, tuple[Embedder, list[int]]] = {}
        for i, e in enumerate(embedders):
            groups.setdefault(id(e), (e, []))[1].append(i)
        out = [np.zeros((0, self.embedder.dim), np.float32) for _ in parts]
        flats = {k: [t for i in idx for t in parts[i]] for k, (_, idx) in groups.items()}
        with st.stage("embed", sum(len(set(f)) for f in flats.values())) as advance:
            for k, (embedder, idx) in groups.items():
                if not flats[k]:
                    continue
                uniq, inverse = np.unique(np.array(flats[k], dtype=object), return_inverse=True)
                vecs = embedder.embed(list(uniq), advance)[inverse]
                for i, v in zip(idx, np.split(vecs, np.cumsum([len(parts[i]) for i in idx[:-1]])), strict=True):
                    out[i] = v
        return out

    def _write(self, todo: list[PreparedDoc], report: IngestReport, st: Tracker) -> IngestReport:
        """Commit in groups of whole documents; the report counts what landed."""
        groups: list[list[PreparedDoc]] = [[]]
        for p in todo:
            if groups[-1] and sum(len(q.chunks) for q in groups[-1]) + len(p.chunks) > self.options.group_chunks:
                groups.append([])
            groups[-1].append(p)
        keywords: set[str] = set()
        new_entities: set[str] = set()
        with st.stage("write", len(todo)) as advance:
            for g in groups:
                try:
                    written = self.writer.commit_group(g)
                except IngestWriteError as e:
                    # what this batch committed (whole groups, and the documents of a split group that
                    # landed before the failure); ingest_documents adds the earlier batches
                    g = [p for p in g if p.doc.id in e.committed]
                    written = e.committed
                    e.report = report
                    failure: IngestWriteError | None = e
                else:
                    failure = None
                for p in g:
                    if p.doc.id in written:
                        report.count_written(p)
                        keywords.update(p.adds.kw_n)
                        new_entities.update(e for e, v in p.entities.items() if v["embedding"] is not None)
                    else:
                        report.documents_unchanged += 1
                if failure is not None:
                    report.keyword_terms, report.keywords = keywords, len(keywords)
                    report.entities_new = len(new_entities)
                    raise failure
                advance(len(g))
            self.db.write(query("meta.touch"))
        report.keyword_terms, report.keywords = keywords, len(keywords)
        report.entities_new = len(new_entities)
        return report


__all__ = [
    "IngestOptions",
    "IngestReport",
    "IngestWriteError",
    "Ingestor",
    "LoadError",
    "UserExtractedDocument",
]
