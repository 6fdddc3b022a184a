"""What every `graphstrata` subcommand shares: the app, its error handling, the console and options."""

from __future__ import annotations

import json
from typing import Annotated

import click
import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from graphstrata.config import Settings, get_settings


def _known_errors() -> tuple[type[BaseException], ...]:
    """Errors whose message says all a user needs: printed as one line, never as a traceback."""
    from graphstrata.db import ConnectionError_
    from graphstrata.embed import EmbeddingError
    from graphstrata.llm import LLMError
    from graphstrata.llm_cache import CacheWriteError
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


def _is_json(value: str) -> bool:
    try:
        json.loads(value)
    except ValueError:
        return False
    return True
