"""What every `graphstrata` subcommand shares: the app, its error handling, the console and options."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from typing import Annotated

import click
import typer
from rich.console import Console, ConsoleDimensions
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


def first_sentence(text: str) -> str:
    """A command's docstring up to its first full stop, on one line (the listing under "Commands")."""
    flat = " ".join(text.split("\n\n")[0].split())
    cut = re.search(r"\.(\s|$)", flat)
    return flat[: cut.start() + 1] if cut else flat


class _Group(TyperGroup):
    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click cuts each summary at ~45 characters with "..."; a whole first sentence, wrapped, reads
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, first_sentence(cmd.help or cmd.short_help or "")))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

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
    # click's plain help: paragraphs re-flowed to the width (never broken where the docstring's lines
    # end), flags without a `<bool>` placeholder, and brackets in a description kept as text
    rich_markup_mode=None,
)
neo4j_app = typer.Typer(
    cls=_Group, help="Run a local Neo4j + GDS + Browser without Docker.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(neo4j_app, name="neo4j")

#: The width of output to a pipe or a file: lines are as long as their values (no wrap at 80 columns).
UNWRAPPED = 100_000


class OutConsole(Console):
    """A terminal: rich wraps to the window. A pipe or a file: nothing is wrapped — a log line holds
    a whole value (``score 0.000``, a path), so grep and a reader see it whole — unless ``COLUMNS`` is
    set, which then is the width as usual. Decided at each print, as the stream may be swapped."""

    @property
    def size(self) -> ConsoleDimensions:
        if self._width is None and not self.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
            return ConsoleDimensions(UNWRAPPED, super().size.height)
        return super().size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


def stdout_console() -> Console:
    """The console for a command's results (stdout); messages and progress go to :data:`console`."""
    return OutConsole()


console = OutConsole(stderr=True)


class LogProgress:
    """Progress as plain lines for a log (stderr not a terminal): a stage's first step, then at most
    one line every ``every`` seconds per stage, and its last step — so a long stage is never silent
    and a short one is two lines. Thread-safe: ingest reports from three threads."""

    def __init__(self, command: str, every: float = 5.0) -> None:
        self.command = command
        self.every = every
        self._last: dict[str, float] = {}
        self._finished: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        with self._lock:
            if done >= total:
                if self._finished.get(stage) == total:  # said already (a batch's total grows it again)
                    return
                self._finished[stage] = total
            elif stage in self._last and now - self._last[stage] < self.every:
                return
            self._last[stage] = now
        pct = f" ({100 * done // total}%)" if total else ""
        console.print(f"{self.command}: {stage} {done}/{total}{pct}", highlight=False, markup=False)


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
