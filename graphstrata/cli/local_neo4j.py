"""`graphstrata neo4j …`: a local Neo4j + GDS + Browser without Docker."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from graphstrata.cli.common import BoltOpt, HttpOpt, InstanceOpt, _fail, _settings, console, neo4j_app


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
