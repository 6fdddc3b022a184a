"""The `graphstrata` command."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import click
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from graphstrata.config import Settings, get_settings


def _known_errors() -> tuple[type[BaseException], ...]:
    """Errors whose message says all a user needs: printed as one line, never as a traceback."""
    from graphstrata.db import ConnectionError_
    from graphstrata.embed import EmbeddingError
    from graphstrata.llm import CacheWriteError, LLMError
    from graphstrata.schema import SchemaError

    return (ConnectionError_, EmbeddingError, LLMError, CacheWriteError, SchemaError)


class _Group(TyperGroup):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except Exception as e:
            if not isinstance(e, _known_errors()):
                raise
            console.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None


app = typer.Typer(
    cls=_Group,
    help="graphstrata: layered graph-RAG on Neo4j + GDS (NodeRAG, KET-RAG, E2GraphRAG, DA-RAG, SG-RAG).",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
neo4j_app = typer.Typer(help="Run a local Neo4j + GDS + Browser without Docker.", no_args_is_help=True)
app.add_typer(neo4j_app, name="neo4j")
console = Console(stderr=True)

InstanceOpt = Annotated[str | None, typer.Option("--instance", help="Name of the local server (own data folder).")]
BoltOpt = Annotated[int | None, typer.Option("--bolt-port", help="Bolt port on 127.0.0.1.")]
HttpOpt = Annotated[int | None, typer.Option("--http-port", help="HTTP (Browser) port on 127.0.0.1.")]


def _settings(instance: str | None = None, bolt: int | None = None, http: int | None = None, **kw) -> Settings:
    update = {k: v for k, v in {"instance": instance, "bolt_port": bolt, "http_port": http, **kw}.items() if v}
    return get_settings().model_copy(update=update)


def _fail(msg: str, code: int = 1) -> None:
    # soft_wrap: a message is never broken inside a path or a command, whatever the width (logs)
    console.print(f"[bold red]error:[/] {escape(msg)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        from graphstrata import __version__

        print(f"graphstrata {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """graphstrata: layered graph-RAG on Neo4j + GDS (NodeRAG, KET-RAG, E2GraphRAG, DA-RAG, SG-RAG)."""


# --- neo4j ----------------------------------------------------------------------------------
@neo4j_app.command("start")
def neo4j_start(
    instance: InstanceOpt = None,
    bolt_port: BoltOpt = None,
    http_port: HttpOpt = None,
    heap: Annotated[str | None, typer.Option(help="JVM heap, e.g. 4g (GDS projections live here).")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for Bolt.")] = 180.0,
    conf: Annotated[
        list[str] | None,
        typer.Option(
            "--conf",
            help="Extra neo4j.conf setting KEY=VALUE (repeatable), e.g. db.memory.transaction.max=256m; "
            "also GRAPHSTRATA_NEO4J_CONF as JSON. Launcher-managed settings cannot be overridden.",
        ),
    ] = None,
) -> None:
    """Fetch (first time), configure and start a local Neo4j + GDS; a no-op if it is running."""
    from graphstrata.neo4j_local import Instance, LauncherError, parse_conf_items

    inst = Instance.from_settings(_settings(instance, bolt_port, http_port, heap=heap))
    try:
        inst.extra_conf.update(parse_conf_items(conf or []))
        started = inst.start(timeout=timeout, log=lambda m: console.print(m, highlight=False))
    except LauncherError as e:
        _fail(str(e))
    if started:
        console.print(f"[green]Neo4j is up[/] on {inst.bolt_uri}; Browser at {inst.http_url}/browser/")
    else:
        console.print(f"Neo4j instance {inst.name!r} is already running (pid {inst.pid()}).")
    console.print(f"User neo4j, password in {inst.password_file}")


@neo4j_app.command("stop")
def neo4j_stop(instance: InstanceOpt = None) -> None:
    """Stop the local server cleanly (SIGTERM, then SIGKILL after 60 s)."""
    from graphstrata.neo4j_local import Instance

    inst = Instance.from_settings(_settings(instance))
    console.print("stopped" if inst.stop() else f"instance {inst.name!r} was not running")


@neo4j_app.command("status")
def neo4j_status(
    instance: InstanceOpt = None,
    bolt_port: BoltOpt = None,
    http_port: HttpOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Is the local server running and answering? Exit code 3 when it is not."""
    from graphstrata.neo4j_local import Instance

    info = Instance.from_settings(_settings(instance, bolt_port, http_port)).status()
    if as_json:
        print(json.dumps(info))
    else:
        for k, v in info.items():
            print(f"{k:10} {v}")
    if not info["answering"]:
        raise typer.Exit(3)


@neo4j_app.command("logs")
def neo4j_logs(
    instance: InstanceOpt = None, lines: Annotated[int, typer.Option("-n", help="Lines per log.")] = 40
) -> None:
    """Print the end of the server's logs."""
    from graphstrata.neo4j_local import Instance

    print(Instance.from_settings(_settings(instance)).log_tail(lines))


# --- database ---------------------------------------------------------------------------------
@app.command("init")
def init() -> None:
    """Create the constraints and vector/full-text indexes of the graph model (idempotent)."""
    from graphstrata.db import ConnectionError_, Database
    from graphstrata.embed import get_embedder
    from graphstrata.schema import SchemaError, apply_schema

    settings = get_settings()
    try:
        embedder = get_embedder(settings)
        with Database.from_settings(settings) as db:
            n = apply_schema(db, embedder.name, embedder.dim)
    except (ConnectionError_, SchemaError) as e:
        _fail(str(e))
    console.print(f"schema applied ({n} statements, {embedder.name}, {embedder.dim} dims)")


@app.command("reset")
def reset(
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: delete every node of the database.")] = False,
) -> None:
    """Delete the whole graph (every node and relationship; schema objects stay) to rebuild it."""
    from graphstrata.cypher import query
    from graphstrata.db import ConnectionError_, Database
    from graphstrata.gds import GDS

    if not yes:
        _fail("reset deletes every node of the database; run `graphstrata reset --yes` to confirm", code=2)
    try:
        with Database.from_settings(get_settings()) as db:
            db.auto(query("meta.wipe"))
            GDS(db).drop_all()
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
    Console().print(table)


# --- documents ------------------------------------------------------------------------------
def print_report(report) -> None:
    from graphstrata.output import print_summary

    out = Console()
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
        Console().print("LLM: no calls", highlight=False)
    if report.ketrag:
        k = report.ketrag
        Console().print(
            f"KET-RAG profile: {k['core_chunks']} of {k['chunks']} chunks extracted (beta {k['beta']}); "
            f"saved {k['llm_calls_saved']} LLM calls and ~{k['prompt_tokens_saved']} prompt tokens vs full extraction",
            highlight=False,
        )
    stages = ", ".join(f"{k} {v:.2f}s" for k, v in report.seconds.items())
    Console().print(
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
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
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
    from graphstrata.llm import CacheWriteError, LLMNotConfigured
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
        )
    except ValidationError as e:
        _fail("bad option: " + "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors()))
    progress = not quiet and sys.stderr.isatty()
    report = IngestReport()
    try:
        with GraphStrata() as gs:
            if extractions is not None:
                report.add(gs.ingest_extractions(extractions, options, progress=progress, skip_invalid=skip_invalid))
            if paths and profile == "ketrag":
                report.add(gs.ingest_ketrag(paths, options, beta=beta, knn_k=knn_k, progress=progress))
            elif paths:
                report.add(gs.ingest(paths, options, progress=progress))
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
    as_json: Annotated[bool, typer.Option("--json", help="As JSON.")] = False,
) -> None:
    """The graph's documents: status (processed, or failed with the reason), chunks, chunks whose
    extraction failed, when last ingested. (Queued and processing documents are the server's: GET /documents.)"""
    from graphstrata import documents
    from graphstrata.db import ConnectionError_, Database

    try:
        with Database.from_settings() as db:
            docs = documents.in_graph(db)
    except ConnectionError_ as e:
        _fail(str(e))
    chosen = [d for d in docs if status is None or d.status == status.value]
    if as_json:
        print(json.dumps([d.model_dump(mode="json", exclude_none=True) for d in chosen], indent=2, ensure_ascii=False))
        return
    table = Table("title", "status", "chunks", "failed chunks", "last ingested", "source", "reason")
    for d in chosen:
        table.add_row(
            d.title, d.status, str(d.chunks), str(d.failed_chunks), d.ingested_at or "", d.source, d.reason or ""
        )
    out = Console(width=None if sys.stdout.isatty() else 250)
    out.print(table, highlight=False)
    out.print(f"[dim]{len(chosen)} document(s)[/]")


@app.command("augment")
def augment(
    stage: Annotated[
        list[str] | None, typer.Option("--stage", "-s", help="Run only these stages (repeatable).")
    ] = None,
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="Stage parameter name=value.")] = None,
    list_stages: Annotated[bool, typer.Option("--list", help="List the stages in order and exit.")] = False,
) -> None:
    """Build the augmentation layers with GDS (and the LLM when configured): chunk KNN graph, core
    chunks, entity similarity, NodeRAG attributes/communities/semantic matching/semantic edges,
    DA-RAG chunk edges, E2GraphRAG summary tree. Re-running a stage replaces its output."""
    from graphstrata.augment import order
    from graphstrata.client import GraphStrata
    from graphstrata.db import ConnectionError_

    if list_stages:
        print("\n".join(order()))
        return
    params = {}
    for item in param or []:
        key, sep, value = item.partition("=")
        if not sep:
            _fail(f"--param takes name=value, got {item!r}")
        params[key] = json.loads(value) if _is_json(value) else value
    try:
        with GraphStrata() as gs:
            # bars on a terminal; in a log, one line as each stage starts
            reports = gs.augment(
                stage or None,
                progress=console.is_terminal,
                on_stage=None
                if console.is_terminal
                else lambda name, i, n: console.print(f"augment {i}/{n}: {name} …", highlight=False),
                **params,
            )
    except (ConnectionError_, ValueError) as e:
        _fail(str(e))
    from graphstrata.output import print_summary

    rows = [[r.stage, f"{r.seconds:.2f}", ", ".join(f"{k}={v}" for k, v in r.counts.items())] for r in reports]
    print_summary(Console(), "augment", ["stage", "seconds", "counts"], rows, keyed=True)


# --- questions --------------------------------------------------------------------------------
@app.command("ask")
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    method: Annotated[str, typer.Option("--method", "-m", help="Retrieval method (`graphstrata methods`).")] = "vector",
    top_k: Annotated[int | None, typer.Option(help="Items before budget packing.")] = None,
    budget: Annotated[int | None, typer.Option(help="Token budget of the context.")] = None,
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="Method parameter name=value.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The whole answer and retrieval as JSON.")] = False,
    stream: Annotated[
        bool, typer.Option("--stream", help="Print the answer as the model writes it (evidence follows).")
    ] = False,
) -> None:
    """Answer a question from the graph, citing node ids (no model configured: prints the evidence)."""
    from graphstrata.client import GraphStrata
    from graphstrata.generate import AnswerStream
    from graphstrata.output import collect_warnings, fill_titles, print_evidence
    from graphstrata.retrieval.base import RetrievalError

    if stream and as_json:
        _fail("--stream prints text as it comes; --json prints one document at the end: choose one")
    params: dict = {k: v for k, v in {"top_k": top_k, "budget": budget}.items() if v is not None}
    for item in param or []:
        key, sep, value = item.partition("=")
        if not sep:
            _fail(f"--param takes name=value, got {item!r}")
        params[key] = json.loads(value) if value[:1] in "[{0123456789-tfn" and _is_json(value) else value
    streamed = False
    try:
        with GraphStrata() as gs:
            if stream:
                answer_stream = AnswerStream(question, gs.retrieve(question, method, **params), gs.settings, gs.llm)
                for piece in answer_stream:
                    streamed = True
                    sys.stdout.write(piece)
                    sys.stdout.flush()
                if streamed:
                    sys.stdout.write("\n")
                result = answer_stream.answer
            else:
                result = gs.ask(question, method, **params)
            if not as_json:
                fill_titles(gs.db, result.retrieval.items)
    except RetrievalError as e:
        _fail(str(e))
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    out = Console()
    r = result.retrieval
    for warning in collect_warnings(r.notes):
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    if result.answer is not None:
        if not streamed:
            out.print(result.answer, highlight=False)
        out.print(f"[dim]cited: {', '.join(result.citations) or 'nothing'} · {result.model} · {method}[/]")
    else:
        out.print(f"[yellow]{escape(result.note or '')}[/]")
    print_evidence(out, r.items)
    timings = ", ".join(f"{k} {v:.1f}ms" for k, v in r.timings_ms.items())
    out.print(f"[dim]{method}: {len(r.items)} items, {r.tokens}/{r.budget} tokens; {timings}[/]")


def _is_json(value: str) -> bool:
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


@app.command("methods")
def methods() -> None:
    """List retrieval methods and their parameters with defaults."""
    from graphstrata.retrieval.base import available_methods

    for name, info in available_methods().items():
        props = info["parameters"].get("properties", {})
        params = ", ".join(f"{k}={v.get('default')}" for k, v in props.items())
        print(f"{name:12} {info['summary']}\n{'':12} {params}")


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on; beyond loopback it needs GRAPHSTRATA_API_KEY.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Run the HTTP API (FastAPI; OpenAPI docs at /docs). Set GRAPHSTRATA_API_KEY to require
    `Authorization: Bearer <key>` (or `X-API-Key`); without it only loopback is served."""
    import uvicorn

    from graphstrata.server import InsecureBind, create_app

    try:
        api = create_app(get_settings(), host=host)
    except InsecureBind as e:
        _fail(str(e), code=2)
    # one process: the ingest queue and the shared Neo4j driver live in it
    uvicorn.run(api, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=10)


@app.command("mcp")
def mcp(
    http: Annotated[bool, typer.Option("--http", help="Streamable HTTP at /mcp instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="--http: address; beyond loopback it needs GRAPHSTRATA_API_KEY.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="--http: TCP port.")] = 8001,
) -> None:
    """Run the MCP server (tools retrieve, ask, methods, list_documents, ingest_text, delete_document,
    cypher; resources: the data model and each method). Over stdio by default; with --http the same
    API key (GRAPHSTRATA_API_KEY) and body limit as `serve`."""
    from graphstrata.mcp_server import build, http_app
    from graphstrata.server import InsecureBind

    settings = get_settings()
    server, graph = build(settings)
    try:
        if not http:
            server.run("stdio")
            return
        import uvicorn

        try:
            api = http_app(server, settings, host)
        except InsecureBind as e:
            _fail(str(e), code=2)
        uvicorn.run(api, host=host, port=port, timeout_graceful_shutdown=10)
    finally:
        graph.close()


# --- exploration: Neo4j Browser and the analysts' Cypher library ------------------------------
@app.command("browser")
def browser(
    style: Annotated[bool, typer.Option("--style", help="Print only the `:style` command.")] = False,
    queries: Annotated[bool, typer.Option("--queries", help="Print only the starter queries.")] = False,
    create_reader: Annotated[
        str | None,
        typer.Option("--create-reader", help="Create a read-only analyst user (Enterprise/Aura: role `reader`)."),
    ] = None,
) -> None:
    """How to open Neo4j Browser on this graph and load graphstrata's style sheet and starter queries."""
    from graphstrata import browser as assets

    if style:
        print(assets.style_command())
        return
    if queries:
        print(assets.STARTER_QUERIES.read_text())
        return
    settings = get_settings()
    if create_reader:
        import secrets

        from graphstrata.db import ConnectionError_, Database

        password = secrets.token_urlsafe(12)
        try:
            with Database.from_settings(settings) as db:
                assets.create_reader(db, create_reader, password)
        except (ConnectionError_, ValueError) as e:
            _fail(str(e))
        except assets.EditionError as e:
            _fail(str(e), code=2)
        print(f"user {create_reader} (role reader), initial password {password} (to be changed at first login)")
        return
    if settings.uses_local_server:
        from graphstrata.neo4j_local import Instance

        inst = Instance.from_settings(settings)
        print(assets.instructions(inst.http_url, inst.bolt_uri, "neo4j", f"in {inst.password_file}"))
    else:
        print(assets.instructions(None, settings.bolt_uri, settings.neo4j_user, "$NEO4J_PASSWORD"))


@app.command("cypher")
def cypher(
    name: Annotated[str | None, typer.Argument(help="Library query (`graphstrata cypher --list`).")] = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", help="Parameter name=value (typed; JSON where it parses).")
    ] = None,
    list_queries: Annotated[bool, typer.Option("--list", help="List the library's queries and parameters.")] = False,
    show: Annotated[
        bool, typer.Option("--show", help="Print the query and a `:params` line for Browser; run nothing.")
    ] = False,
    text: Annotated[str | None, typer.Option("--query", "-q", help="Run this Cypher instead (read-only too).")] = None,
    question: Annotated[
        str | None,
        typer.Option(
            "--ask",
            help="A question in plain language: the configured LLM writes the Cypher from the data model; "
            "it is printed, checked read-only and run (with --show: printed only).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Rows as JSON.")] = False,
    width: Annotated[int, typer.Option(help="Longest text shown in a table cell.")] = 80,
) -> None:
    """Run a documented read query of the analysts' library (graphstrata/cypher/queries/), ad-hoc Cypher
    or, with an LLM, a question in plain language (--ask) — always in a READ transaction: a statement
    that writes is refused (exit code 5)."""
    from graphstrata.cypher import queries as lib
    from graphstrata.db import ConnectionError_, Database

    try:
        if list_queries:
            for q in lib.library().values():
                print(f"{q.name}  {q.signature()}\n    {q.summary}  [{q.file}.cypher]")
            return
        if sum(x is not None for x in (name, text, question)) != 1:
            _fail('give a library query NAME (see --list), --query TEXT or --ask "QUESTION"')
        if question is not None:
            if not question.strip():
                _fail("the question is empty")
            text = _draft_cypher(question, show)
            if show:
                return
        q = lib.get(name) if name else None
        params = lib.parse_params(param or [], q)
        if q is not None:
            params = q.bind(params)
        if show:
            if q is None:
                _fail("--show is for library queries")
            print("\n".join(f"// {line}".rstrip() for line in [f"{q.name} ({q.file}.cypher)", *q.doc.splitlines()]))
            print(q.browser_text(params))
            return
        with Database.from_settings() as db:
            result = lib.run(db, q.text if q else text, params)
    except lib.LibraryError as e:
        _fail(str(e))
    except lib.WriteRefused as e:
        _fail(str(e), code=5)
    except ConnectionError_ as e:
        _fail(str(e))
    except Exception as e:  # a Cypher error from the server: say it plainly
        from neo4j.exceptions import Neo4jError

        if not isinstance(e, Neo4jError):
            raise
        written = "the generated query is not valid Cypher: " if question is not None else ""
        _fail(f"{written}{e.code}: {e.message}", code=5 if "AccessMode" in (e.code or "") else 1)
    if as_json:
        print(json.dumps(result.rows, indent=2, ensure_ascii=False))
        return
    from graphstrata.output import print_summary

    cells = [[lib.caption(row[k]) for k in result.keys] for row in result.rows]
    cells = [[c if len(c) <= width else c[: width - 1] + "…" for c in row] for row in cells]
    out = Console()
    if result.keys:  # a table when it fits the terminal, else one record per row
        print_summary(out, name or "result", result.keys, cells)
    out.print(f"[dim]{len(result.rows)} row(s)[/]")


def _draft_cypher(question: str, show: bool) -> str:
    """The LLM's Cypher for ``question``, printed before anything runs (to stdout with --show)."""
    from graphstrata.client import GraphStrata
    from graphstrata.text2cypher import draft

    with GraphStrata() as gs:
        d = draft(gs.db, gs.llm, question)
    if show:
        print(d.cypher)
    else:
        if d.explanation:
            console.print(f"// {d.explanation}", style="dim", highlight=False, markup=False, soft_wrap=True)
        console.print(d.cypher, highlight=False, markup=False, soft_wrap=True)
    return d.cypher


def main() -> None:  # pragma: no cover
    sys.exit(app())
