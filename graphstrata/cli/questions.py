"""Using the graph: `ask`, `methods`, `serve`, `mcp`, `browser`, `cypher`."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.markup import escape

from graphstrata.cli.common import _fail, _is_json, app, console, stdout_console
from graphstrata.config import get_settings


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
    from graphstrata.output import (
        collect_warnings,
        entities_not_in_graph,
        fill_titles,
        not_in_graph_note,
        print_evidence,
    )
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
    missing = None
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
                missing = entities_not_in_graph(gs.db, question)
    except RetrievalError as e:
        _fail(str(e))
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    out = stdout_console()
    r = result.retrieval
    if "route" in r.notes:  # auto: the method it chose and why
        out.print(
            f"auto chose {r.notes['route']} ({r.notes.get('rule', '')} rule): {r.notes.get('reason', '')}",
            style="dim",
            highlight=False,
            markup=False,
        )
    if missing:
        out.print(not_in_graph_note(missing[0], missing[1]), style="yellow", highlight=False, markup=False)
    for warning in collect_warnings(r.notes):
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    if result.answer is not None:
        if not streamed:
            out.print(result.answer, highlight=False)
        out.print(f"[dim]cited: {', '.join(result.citations) or 'nothing'} · {result.model} · {method}[/]")
        if result.note:
            console.print(f"[yellow]warning:[/] {escape(result.note)}", highlight=False, soft_wrap=True)
    else:
        out.print(f"[yellow]{escape(result.note or '')}[/]")
    print_evidence(out, r.items)
    timings = ", ".join(f"{k} {v:.1f}ms" for k, v in r.timings_ms.items())
    out.print(f"[dim]{method}: {len(r.items)} items, {r.tokens}/{r.budget} tokens; {timings}[/]")


@app.command("methods")
def methods() -> None:
    """List retrieval methods and their parameters with defaults."""
    from graphstrata.retrieval.base import registered_methods

    out = stdout_console()
    for name, cls in registered_methods().items():
        fields = cls.Params.model_fields
        params = ", ".join(f"{k}={f.get_default(call_default_factory=True)!r}" for k, f in fields.items())
        out.print(name, style="bold", highlight=False, markup=False)
        out.print(f"    {cls.summary}", highlight=False, markup=False)
        out.print(f"    defaults: {params}", style="dim", highlight=False, markup=False)


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
    from graphstrata import analysts as lib
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
        capped, s = "", get_settings()  # every query bounded: GRAPHSTRATA_CYPHER_TIMEOUT, _MAX_ROWS
        with Database.from_settings() as db:
            if question is not None and text is not None:  # model-written: only a plain read, bounded
                from graphstrata import text2cypher

                answer = text2cypher.run(db, text, question, max_rows=s.cypher_max_rows, timeout=s.cypher_timeout)
                result = lib.Result(answer.keys, answer.rows, answer.capped)
            else:
                bounds = {"timeout": s.cypher_timeout, "max_rows": s.cypher_max_rows}
                result = lib.run(db, q.text if q else text, params, **bounds)
            if result.capped:
                capped = f", capped at {s.cypher_max_rows} (GRAPHSTRATA_CYPHER_MAX_ROWS): more rows matched"
    except lib.LibraryError as e:
        _fail(str(e))
    except lib.WriteRefused as e:
        _fail(str(e), code=5)
    except lib.QueryTimeout as e:
        _fail(str(e))
    except ConnectionError_ as e:
        _fail(str(e))
    except ValueError as e:  # text2cypher.CypherError: the server rejected the model's query, or it timed out
        if not hasattr(e, "cypher"):
            raise
        _fail("the generated " + str(e).removeprefix("the "))
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
    out = stdout_console()
    if result.keys:  # a table when it fits the terminal, else one record per row
        print_summary(out, name or "result", result.keys, cells)
    out.print(f"[dim]{len(result.rows)} row(s){escape(capped)}[/]")


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
