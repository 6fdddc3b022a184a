"""`graphstrata neo4j …`: a local Neo4j + GDS + Browser without Docker."""

from __future__ import annotations

import json
from pathlib import Path
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
    from graphstrata.neo4j_local import APOC_VERSION, Instance

    inst = Instance.from_settings(_settings(instance, bolt_port, http_port))
    info = inst.status()
    info.update(java_of(inst.pid()), apoc=APOC_VERSION)
    if as_json:
        print(json.dumps(info))
    else:
        print(status_text(info))
    if not info["answering"]:
        raise typer.Exit(3)


def java_of(pid: int | None) -> dict:
    """The running server's Java (its command line's first word), else the one a start would use."""
    from graphstrata.neo4j_dist import LauncherError, find_java, java_major_version

    try:
        if pid is not None:
            path = Path(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode())
            return {"java": java_major_version(path), "java_path": str(path)}
        path, major = find_java()
        return {"java": major, "java_path": str(path)}
    except (OSError, LauncherError):
        return {"java": None, "java_path": None}


def status_text(info: dict) -> str:
    from graphstrata.neo4j_dist import GDS_VERSION, NEO4J_VERSION

    """`key  value` lines a person reads: yes/no, versions with what they are, nothing printed as None."""
    running = f"yes (pid {info['pid']})" if info["running"] else "no"
    pinned = "" if info["answering"] else " (the installed version; the server is not answering)"
    java = f"{info['java']} ({info['java_path']})" if info.get("java") else "none found (a start needs Java 21 or 25)"
    neo4j = f"{info.get('neo4j') or NEO4J_VERSION}{' ' + info['edition'] if info.get('edition') else ''}{pinned}"
    rows = [
        ("instance", info["instance"]),
        ("running", running),
        ("answering", "yes" if info["answering"] else "no"),
        ("bolt", info["bolt"]),
        ("browser", info["browser"]),
        ("home", info["home"]),
        ("java", java),
        ("neo4j", neo4j),
        ("gds", f"{info.get('gds') or GDS_VERSION}{pinned}"),
        ("apoc", f"{info['apoc']}{pinned}"),
    ]
    return "\n".join(f"{k:10} {v}" for k, v in rows)


@neo4j_app.command("logs")
def neo4j_logs(
    instance: InstanceOpt = None, lines: Annotated[int, typer.Option("-n", help="Lines per log.")] = 40
) -> None:
    """Print the end of the server's logs."""
    from graphstrata.neo4j_local import Instance

    print(Instance.from_settings(_settings(instance)).log_tail(lines))


# --- database ---------------------------------------------------------------------------------
