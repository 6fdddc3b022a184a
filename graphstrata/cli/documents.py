"""Building the graph: `init`, `reset`, `stats`, `ingest`, `prompt-tune`, `delete`, `documents`, `augment`."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from graphstrata.cli.common import LogProgress, _fail, _is_json, app, console, stdout_console
from graphstrata.config import get_settings


@app.command("init")
def init() -> None:
    """Create the constraints and vector/full-text indexes of the graph model (idempotent)."""
    from graphstrata.db import ConnectionError_, Database
    from graphstrata.embed import get_embedder
    from graphstrata.schema import SchemaError, apply_schema, stored_precision

    settings = get_settings()
    try:
        embedder = get_embedder(settings)
        with Database.from_settings(settings) as db:
            n = apply_schema(db, embedder.name, embedder.dim, precision=embedder.default_precision)
            stored = stored_precision(db, embedder.default_precision)
    except (ConnectionError_, SchemaError) as e:
        _fail(str(e))
    console.print(f"schema applied ({n} statements, {embedder.name}, {embedder.dim} dims, stored texts in {stored})")


@app.command("reset")
def reset(
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: delete every node of the database.")] = False,
) -> None:
    """Delete the whole graph (every node and relationship; schema objects stay) to rebuild it."""
    from graphstrata.db import ConnectionError_, Database
    from graphstrata.gds import GDS

    if not yes:
        _fail("reset deletes every node of the database; run `graphstrata reset --yes` to confirm", code=2)
    try:
        with Database.from_settings(get_settings()) as db:
            db.wipe()
            GDS(db, get_settings()).drop_all()
    except ConnectionError_ as e:
        _fail(str(e))
    console.print("graph deleted; rebuild it with `graphstrata ingest` and `graphstrata augment`")


@app.command("stats")
def stats() -> None:
    """Nodes per label and relationships per type."""
    from graphstrata.cypher import query
    from graphstrata.db import ConnectionError_, Database

    try:
        with Database.from_settings() as db:
            labels = db.read(query("meta.label_counts"))
            rels = db.read(query("meta.rel_counts"))
    except ConnectionError_ as e:
        _fail(str(e))
    table = Table("kind", "name", "count")
    for r in labels:
        table.add_row("label", r["label"], str(r["n"]))
    for r in rels:
        table.add_row("rel", r["type"], str(r["n"]))
    stdout_console().print(table)


# --- documents ------------------------------------------------------------------------------
def print_report(report) -> None:
    from graphstrata.output import print_summary

    out = stdout_console()
    counts = {
        "documents new": report.documents_new,
        "replaced": report.documents_replaced,
        "unchanged": report.documents_unchanged,
        "chunks": report.chunks,
        "sub-chunks": report.subchunks,
        "entities new": report.entities_new,
        "keywords": report.keywords,
        "extracted": report.extracted_chunks,
        "relations": report.relations,
        "units": report.semantic_units,
    }
    print_summary(out, "ingest summary", list(counts), [[str(v) for v in counts.values()]])
    if report.llm:
        # the cost of this ingest per LLM stage (a re-ingest is served by the cache: 0 calls)
        keys = ("calls", "prompt_tokens", "completion_tokens", "cache_hits", "retries", "failures")
        rows = [[stage, *(str(u.get(k, 0)) for k in keys)] for stage, u in report.llm.items()]
        headers = ["LLM stage", "calls", "prompt tokens", "completion tokens", "cache hits", "retries", "failures"]
        print_summary(out, "LLM cost", headers, rows, keyed=True)
    else:
        stdout_console().print("LLM: no calls", highlight=False)
    if report.ketrag:
        k = report.ketrag
        stdout_console().print(
            f"KET-RAG profile: {k['core_chunks']} of {k['chunks']} chunks extracted (beta {k['beta']}); "
            f"saved {k['llm_calls_saved']} LLM calls and ~{k['prompt_tokens_saved']} prompt tokens vs full extraction",
            highlight=False,
        )
    stages = ", ".join(f"{k} {v:.2f}s" for k, v in report.seconds.items())
    stdout_console().print(
        f"seconds per stage: {stages}; {report.rows_written} rows written ({report.rows_per_second:.0f} rows/s)",
        highlight=False,
    )
    for err in report.errors:
        console.print(f"[yellow]skipped[/] {escape(err)}", highlight=False)
    if report.skipped_invalid:
        console.print(
            f"[yellow]--skip-invalid left out {len(report.skipped_invalid)} invalid item(s):[/]", highlight=False
        )
        for item in report.skipped_invalid:
            console.print(f"  {item}", highlight=False, soft_wrap=True)
    for note in report.identity_notes:
        console.print(f"[cyan]identity[/] {escape(note)}", highlight=False)
    if report.replaced:
        shown = ", ".join(report.replaced[:10]) + (
            f" and {len(report.replaced) - 10} more" if len(report.replaced) > 10 else ""
        )
        console.print(f"[cyan]replaced[/] (text changed since the last ingest): {escape(shown)}", highlight=False)
    for f in report.failed_chunks:
        console.print(
            f"[yellow]extraction failed[/] {escape(str(f['doc']))} chunk {f['chunk']}: {escape(str(f['error']))} "
            "(written without extraction; the next ingest retries it)",
            highlight=False,
        )


class ExtractorChoice(StrEnum):
    auto = "auto"
    llm = "llm"
    spacy = "spacy"
    none = "none"


@app.command("ingest")
def ingest(
    paths: Annotated[list[str] | None, typer.Argument(help="Files or folders (text, JSON, PDF, HTML, DOCX).")] = None,
    extractions: Annotated[
        Path | None,
        typer.Option(
            "--extractions",
            help="Bring-your-own extractions: a JSON-lines file, one document per line with title, text, "
            "entities and triples [subject, predicate, object] (+ optional {description}); no LLM is called for "
            "them (format: docs/extractions.md).",
        ),
    ] = None,
    skip_invalid: Annotated[
        bool,
        typer.Option(
            "--skip-invalid",
            help="With --extractions: leave out invalid triples, entities and lines, and list them with their "
            "line numbers (default: an invalid file is refused whole).",
        ),
    ] = False,
    extractor: Annotated[
        ExtractorChoice,
        typer.Option(help="Knowledge extraction per chunk: auto = the LLM if one is configured, else spaCy."),
    ] = ExtractorChoice.auto,
    chunk_size: Annotated[int, typer.Option(help="Tokens per chunk (cl100k).")] = 1200,
    chunk_overlap: Annotated[int, typer.Option(help="Tokens shared by consecutive chunks.")] = 100,
    schema: Annotated[
        Path | None,
        typer.Option(
            "--schema",
            help="Extraction schema JSON (entity_types, relation_types, prompt; `graphstrata prompt-tune` "
            "drafts one) steering LLM extraction; recorded on the graph.",
        ),
    ] = None,
    allow_schema_change: Annotated[
        bool,
        typer.Option("--allow-schema-change", help="Extract with another schema than the one recorded on the graph."),
    ] = False,
    semantic: Annotated[
        bool, typer.Option("--semantic", help="Semantic chunking (semchunk) instead of windows.")
    ] = False,
    splits: Annotated[int, typer.Option(help="KET-RAG sub-chunk splits m (2**m pieces).")] = 3,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress (bars or log lines).")] = False,
    profile: Annotated[
        str, typer.Option(help="`full`: extract every chunk; `ketrag`: only PageRank core chunks (KET-RAG).")
    ] = "full",
    beta: Annotated[float, typer.Option(help="KET-RAG core share (with --profile ketrag).")] = 0.8,
    knn_k: Annotated[int, typer.Option(help="KET-RAG chunk KNN k (with --profile ketrag).")] = 3,
) -> None:
    """Ingest documents: chunks, embeddings, the spaCy entity graph, the keyword graph and the
    extracted knowledge graph (entities, relations, semantic units).

    Exit code 2 when some files could not be read or some chunks' extraction failed (the rest is
    ingested; a re-run retries the failed chunks)."""
    from pydantic import ValidationError

    from graphstrata.client import GraphStrata
    from graphstrata.db import ConnectionError_
    from graphstrata.ingest.extract import ExtractionSchema, ExtractionSchemaMismatch
    from graphstrata.ingest.pipeline import IngestOptions, IngestReport, IngestWriteError
    from graphstrata.ingest.user_extractions import UserExtractionError
    from graphstrata.llm import LLMNotConfigured
    from graphstrata.llm_cache import CacheWriteError
    from graphstrata.schema import SchemaError

    if not paths and extractions is None:
        _fail("nothing to ingest: give files/folders and/or --extractions FILE.jsonl")
    if profile not in ("full", "ketrag"):
        _fail(f"unknown profile {profile!r}: use full or ketrag")
    if skip_invalid and extractions is None:
        _fail("--skip-invalid applies to an --extractions file")
    try:
        steer = ExtractionSchema.from_file(schema) if schema is not None else None
    except ValueError as e:
        _fail(str(e))
    try:
        options = IngestOptions(
            extraction_schema=steer,
            allow_schema_change=allow_schema_change,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            chunking="semantic" if semantic else "tokens",
            splits=splits,
            extractor=extractor.value,
            profile=profile,
            ketrag_beta=beta,
            ketrag_knn_k=knn_k,
        )
    except ValidationError as e:
        _fail("bad option: " + "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors()))
    # bars on a terminal; in a log, lines as the stages advance (never minutes of silence)
    progress = not quiet and sys.stderr.isatty()
    lines = LogProgress("ingest") if not quiet and not progress else None
    report = IngestReport()
    try:
        with GraphStrata() as gs:
            if extractions is not None:
                report.add(gs.ingest_extractions(extractions, options, progress=progress, skip_invalid=skip_invalid))
            if paths:
                if lines is not None:
                    console.print(f"ingest: reading {', '.join(paths)}", highlight=False, markup=False)
                report.add(gs.ingest(paths, options, progress=progress, on_progress=lines))
    # (an IngestWriteError names the documents and says what was committed before it)
    except (
        ConnectionError_,
        SchemaError,
        LLMNotConfigured,
        UserExtractionError,
        ExtractionSchemaMismatch,
        CacheWriteError,
        IngestWriteError,
    ) as e:
        _fail(str(e))
    print_report(report)
    if report.errors or report.failed_chunks:
        raise typer.Exit(2)


@app.command("prompt-tune")
def prompt_tune(
    paths: Annotated[list[str], typer.Argument(help="Sample files or folders (.txt, .md, .json, .jsonl).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the schema JSON.")] = Path(
        "extraction-schema.json"
    ),
    samples: Annotated[int, typer.Option(help="Chunks shown to the model, spread over the corpus.")] = 8,
    chunk_size: Annotated[int, typer.Option(help="Tokens per sample chunk.")] = 600,
) -> None:
    """With an LLM: draft a domain extraction schema (entity and relation types, a prompt) from sample
    chunks, for `graphstrata ingest --schema FILE` (after GraphRAG's prompt tuning). Review it first."""
    from graphstrata.ingest.chunk import token_chunks
    from graphstrata.ingest.load import load_paths
    from graphstrata.ingest.tune import sample_evenly, tune_schema
    from graphstrata.llm import LLMClient, LLMNotConfigured

    settings = get_settings()
    if not settings.llm_enabled:
        raise LLMNotConfigured(
            "prompt-tune asks a language model and none is configured "
            "(set OPENAI_BASE_URL and/or OPENAI_API_KEY, and GRAPHSTRATA_CHAT_MODEL)"
        )
    docs, errors, _ = load_paths(paths)
    for e in errors:
        console.print(f"[yellow]skipped[/] {escape(str(e))}", highlight=False)
    chunks = [p.text for d in docs for p in token_chunks(d.text, chunk_size, 0)]
    if not chunks:
        _fail("no text to sample in " + ", ".join(paths))
    with LLMClient.from_settings(settings) as llm:
        drafted = tune_schema(llm, sample_evenly(chunks, samples))
    out.write_text(drafted.model_dump_json(indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {out}: {drafted.summary()}", highlight=False, soft_wrap=True)
    console.print(f"review it, then: graphstrata ingest --schema {out} PATH…", highlight=False, soft_wrap=True)


@app.command("delete")
def delete(ref: Annotated[str, typer.Argument(help="Document id, source path or title.")]) -> None:
    """Delete a document and whatever only it supported (chunks, entities, keyword counts)."""
    from graphstrata.client import GraphStrata
    from graphstrata.db import ConnectionError_
    from graphstrata.ingest.pipeline import IngestWriteError

    try:
        with GraphStrata() as gs:
            found = gs.delete(ref)
    except (ConnectionError_, IngestWriteError) as e:
        _fail(str(e))
    if not found:
        _fail(f"no document with id, source or title {ref!r}", code=4)
    for d in found:
        console.print(f"deleted {d['title']!r} ({d['id']})", highlight=False)


class DocStatus(StrEnum):
    processed = "processed"
    failed = "failed"


@app.command("documents")
def documents_cmd(
    status: Annotated[DocStatus | None, typer.Option(help="Only documents of this status.")] = None,
    title: Annotated[
        str | None, typer.Option("--title", help="Only documents whose title contains this (any case).")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="Documents shown (one page).")] = 50,
    offset: Annotated[int, typer.Option(min=0, help="Documents skipped before the page.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="The page as a JSON list.")] = False,
) -> None:
    """The graph's documents, by title, one page at a time: status (processed, or failed with the
    reason), chunks, chunks whose extraction failed, when last ingested; then how many match in all.
    (Queued and processing documents are the server's: GET /documents.)"""
    from graphstrata import documents
    from graphstrata.db import ConnectionError_, Database

    try:
        with Database.from_settings() as db:
            docs = documents.in_graph(db)
    except ConnectionError_ as e:
        _fail(str(e))
    needle = (title or "").casefold()
    chosen = [d for d in docs if (status is None or d.status == status.value) and needle in d.title.casefold()]
    shown = chosen[offset : offset + limit]
    if as_json:
        print(json.dumps([d.model_dump(mode="json", exclude_none=True) for d in shown], indent=2, ensure_ascii=False))
        return
    table = Table("title", "status", "chunks", "failed chunks", "last ingested", "source", "reason")
    for d in shown:
        table.add_row(
            d.title, d.status, str(d.chunks), str(d.failed_chunks), d.ingested_at or "", d.source, d.reason or ""
        )
    out = stdout_console()
    if shown:
        out.print(table, highlight=False)
    print_page_line(out, len(chosen), offset, len(shown), len(docs))


def print_page_line(out, total: int, offset: int, shown: int, in_graph: int) -> None:
    """``documents 1-50 of 994 (--offset 50 for the next 50)``; the graph's count when a filter applies."""
    where = f" (of {in_graph} in the graph)" if total != in_graph else ""
    if shown == 0:
        line = f"no documents at offset {offset} of {total}{where}" if total else f"0 documents{where}"
    else:
        line = f"documents {offset + 1}-{offset + shown} of {total}{where}"
        if offset + shown < total:
            line += f"; next page: --offset {offset + shown}"
    out.print(line, style="dim", highlight=False, markup=False)


@app.command("augment")
def augment(
    stage: Annotated[
        list[str] | None, typer.Option("--stage", "-s", help="Run only these stages (repeatable).")
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            "-p",
            help="Stage parameter name=value: beta, knn_k, k_neighbor, semantic_k, semantic_graph, "
            "betweenness_samples, min_community_texts, max_high_level, synonym_threshold, g, summary_tokens, "
            "summarize_single_chunk (graphstrata/augment/params.py).",
        ),
    ] = None,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="Run the whole-graph stages (entity_synonyms, important_entities, communities, semantic_matching, "
            "darag_chunk_edges) even after a small ingest, which they otherwise keep from their last full run until "
            "5% of the chunks changed (defer_share).",
        ),
    ] = False,
    list_stages: Annotated[bool, typer.Option("--list", help="List the stages in order and exit.")] = False,
) -> None:
    """Build the augmentation layers with GDS (and the LLM when configured): chunk KNN graph, core
    chunks, entity similarity, NodeRAG attributes/communities/semantic matching/semantic edges,
    DA-RAG chunk edges, E2GraphRAG summary tree. Re-running a stage replaces its output; after a small
    ingest the top-k layers are updated in place and the whole-graph stages are deferred (--full)."""
    from graphstrata.augment import order
    from graphstrata.client import GraphStrata
    from graphstrata.db import ConnectionError_
    from graphstrata.gds import GDSError

    if list_stages:
        print("\n".join(order()))
        return
    params = {}
    for item in param or []:
        key, sep, value = item.partition("=")
        if not sep:
            _fail(f"--param takes name=value, got {item!r}")
        params[key] = json.loads(value) if _is_json(value) else value
    if full:
        params["defer_share"] = 0
    started: list[str] = []  # the order the stages started in (two run side by side): results follow it

    def on_stage(name: str, i: int, n: int) -> None:
        started.append(name)
        if not console.is_terminal:  # bars on a terminal; in a log, one line as each stage starts
            console.print(f"augment {i}/{n}: {name} …", highlight=False, markup=False)

    try:
        with GraphStrata() as gs:
            # no question follows in this process: the walk graphs are read by the server or client that asks
            reports = gs.augment(stage or None, progress=console.is_terminal, on_stage=on_stage, warm=False, **params)
    except (ConnectionError_, ValueError, GDSError) as e:
        _fail(str(e))
    from graphstrata.output import print_summary

    position = {name: i for i, name in enumerate(started)}
    reports = sorted(reports, key=lambda r: position.get(r.stage, len(position)))
    rows = [
        [
            r.stage,
            f"{r.seconds:.2f}",
            "deferred: " * ("deferred" in r.notes) + ", ".join(f"{k}={v}" for k, v in r.counts.items()),
        ]
        for r in reports
    ]
    print_summary(stdout_console(), "augment", ["stage", "seconds", "counts"], rows, keyed=True)


# --- questions --------------------------------------------------------------------------------
