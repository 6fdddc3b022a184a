"""The analysts' Cypher library: documented, parameterised READ queries over graphstrata's graph.

Each ``*.cypher`` file in ``graphstrata/cypher/queries/`` holds named queries (``// name: <name>`` blocks, as everywhere
in ``graphstrata/cypher/``). The comment lines after the marker document the query; a ``params:``
line starts the list of its parameters, one per comment line::

    // name: entity_provenance
    // Where an entity comes from: ...
    // params:
    //   entity  string      entity id, name or normalised name (case-insensitive)
    //   limit   int = 100   most rows

A parameter line is ``NAME TYPE [= DEFAULT] DESCRIPTION``; TYPE is one of ``string``, ``int``,
``float``, ``bool``, ``list``, ``map`` or ``any``; DEFAULT is JSON (``null`` allowed). The queries
are plain Cypher with ``$parameters``, so they can be pasted into Neo4j Browser after setting the
parameters with ``:params {...}`` (``graphstrata cypher NAME --show`` prints both).

:func:`run` executes a query (a library query or ad-hoc Cypher) **read-only**: it refuses anything
that the server's planner does not classify as a read (``EXPLAIN`` → query type ``r``), then runs it
in a READ transaction, in which the server itself rejects writes (``Neo.ClientError.Statement.AccessMode``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, time
from functools import cache
from pathlib import Path
from typing import Any

from neo4j import READ_ACCESS
from neo4j.exceptions import Neo4jError
from neo4j.graph import Node, Relationship
from neo4j.graph import Path as GraphPath

from graphstrata.cypher import load
from graphstrata.db import Database

HERE = Path(__file__).parent / "cypher" / "queries"
TYPES = ("string", "int", "float", "bool", "list", "map", "any")
_PARAM_LINE = re.compile(r"^(\w+)\s+(\w+)\s*(=)?\s*(.*)$")
_PARAM_USE = re.compile(r"\$(\w+)")
HIDDEN_PROPERTIES = {"embedding"}  # vectors are noise in a table or a JSON dump


class LibraryError(ValueError):
    """An unknown query, a missing or malformed parameter."""


class WriteRefused(PermissionError):
    """The statement is not a read (``graphstrata cypher`` only reads)."""


@dataclass(frozen=True)
class Param:
    name: str
    type: str = "any"
    default: Any = None
    required: bool = True
    description: str = ""

    def coerce(self, raw: str) -> Any:
        """A command-line value → the declared type (JSON where the type allows it)."""
        try:
            if self.type == "string":
                return raw
            if self.type == "int":
                return int(raw)
            if self.type == "float":
                return float(raw)
            if self.type == "bool":
                if raw.lower() in ("true", "1", "yes"):
                    return True
                if raw.lower() in ("false", "0", "no"):
                    return False
                raise ValueError(raw)
            if self.type == "list":
                if raw.lstrip().startswith("["):
                    value = json.loads(raw)
                    if not isinstance(value, list):
                        raise ValueError(raw)
                    return value
                return [x.strip() for x in raw.split(",") if x.strip()]  # a,b,c
            if self.type == "map":
                value = json.loads(raw)
                if not isinstance(value, dict):
                    raise ValueError(raw)
                return value
        except ValueError as e:
            raise LibraryError(f"parameter {self.name} wants {self.type}, got {raw!r}") from e
        return json_or_string(raw)


def json_or_string(raw: str) -> Any:
    """Parameters of ad-hoc queries: JSON when the value parses as JSON, else the text itself."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


@dataclass(frozen=True)
class LibraryQuery:
    name: str
    file: str
    text: str
    summary: str
    doc: str
    params: tuple[Param, ...] = field(default_factory=tuple)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def bind(self, given: dict[str, Any]) -> dict[str, Any]:
        """Declared defaults plus `given`; raises LibraryError for unknown or missing parameters."""
        unknown = sorted(set(given) - {p.name for p in self.params})
        if unknown:
            raise LibraryError(
                f"{self.name} has no parameter {', '.join(unknown)} (it takes: {self.signature() or 'none'})"
            )
        merged = {p.name: p.default for p in self.params if not p.required} | given
        missing = [p.name for p in self.params if p.required and p.name not in merged]
        if missing:
            raise LibraryError(f"{self.name} needs --param {' --param '.join(m + '=…' for m in missing)}")
        return {p.name: merged[p.name] for p in self.params}  # in declaration order

    def signature(self) -> str:
        return " ".join(
            f"{p.name}:{p.type}" if p.required else f"[{p.name}:{p.type}={json.dumps(p.default)}]" for p in self.params
        )

    def browser_text(self, params: dict[str, Any]) -> str:
        """A `:params` line and the query, ready to paste into Neo4j Browser."""
        return f":params {json.dumps(params)}\n\n{self.text};"


def _parse_doc(name: str, file: str, doc: str) -> tuple[str, str, tuple[Param, ...]]:
    lines = doc.splitlines()
    text_lines, params = [], []
    in_params = False
    for line in lines:
        if line.strip() == "params:":
            in_params = True
            continue
        if not in_params:
            text_lines.append(line)
            continue
        m = _PARAM_LINE.match(line.strip())
        if not m or m.group(2) not in TYPES:
            raise LibraryError(f"{file}.cypher {name}: bad parameter line {line!r} (NAME TYPE [= DEFAULT] TEXT)")
        pname, ptype, has_default, rest = m.groups()
        if not has_default:
            params.append(Param(pname, ptype, None, True, rest.strip()))
            continue
        try:  # the default is the JSON value at the start of the rest, the description follows
            default, end = json.JSONDecoder().raw_decode(rest)
        except ValueError as e:
            raise LibraryError(f"{file}.cypher {name}: default of {pname} is not JSON: {rest!r}") from e
        params.append(Param(pname, ptype, default, False, rest[end:].strip()))
    body = "\n".join(text_lines).strip()
    flat = " ".join(body.split())
    first = re.match(r"(.+?\.)(\s|$)", flat)
    summary = first.group(1) if first else flat
    summary = summary if len(summary) <= 110 else summary[:109] + "…"
    return summary, body, tuple(params)


@cache
def library() -> dict[str, LibraryQuery]:
    """Every library query by name (names are unique across the files)."""
    out: dict[str, LibraryQuery] = {}
    for path in sorted(HERE.glob("*.cypher")):
        file = path.stem
        for name, q in load(f"queries/{file}").items():
            if name in out:
                raise LibraryError(f"query name {name!r} is in both {out[name].file}.cypher and {file}.cypher")
            summary, doc, params = _parse_doc(name, file, q.doc)
            used = set(_PARAM_USE.findall(str(q)))
            declared = {p.name for p in params}
            if used != declared:
                raise LibraryError(
                    f"{file}.cypher {name}: parameters used {sorted(used)} but declared {sorted(declared)}"
                )
            out[name] = LibraryQuery(name, file, str(q), summary, doc, params)
    return out


def get(name: str) -> LibraryQuery:
    lib = library()
    if name not in lib:
        close = [n for n in lib if name.lower() in n or n in name.lower()]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise LibraryError(f"no library query {name!r}{hint}; `graphstrata cypher --list` lists them")
    return lib[name]


def parse_params(items: list[str], query: LibraryQuery | None = None) -> dict[str, Any]:
    """``["k=v", …]`` → typed parameters (declared types for a library query, else JSON-or-text)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise LibraryError(f"--param takes name=value, got {item!r}")
        spec = query.param(key) if query is not None else None
        out[key] = spec.coerce(raw) if spec is not None else json_or_string(raw)
    return out


# --- execution ------------------------------------------------------------------------------------
@dataclass
class Result:
    keys: list[str]
    rows: list[dict[str, Any]]  # JSON-ready values (nodes, relationships and paths as dicts)
    capped: bool = False  # more rows matched than ``max_rows``; they were never fetched


class QueryTimeout(TimeoutError):
    """The query ran past its transaction timeout and the server stopped it."""


def run(
    db: Database,
    text: str,
    params: dict[str, Any] | None = None,
    *,
    timeout: float | None = None,
    max_rows: int | None = None,
    check_plan: Callable[[str | None, dict[str, Any] | None], None] | None = None,
) -> Result:
    """Run `text` read-only: refused unless the planner calls it a read (``check_plan(query_type, plan)``
    may refuse more), then run in a READ transaction of at most ``timeout`` seconds (the server stops
    it: :class:`QueryTimeout`), fetching at most ``max_rows`` rows (``Result.capped`` says more matched)."""
    params = params or {}
    fetch = min(max_rows + 1, 1000) if max_rows else 1000  # the server streams in batches: no row past the cap
    with db.driver.session(database=db.database, default_access_mode=READ_ACCESS, fetch_size=fetch) as session:
        summary = session.run(f"EXPLAIN {text}", params).consume()
        kind = summary.query_type
        if check_plan is not None:
            check_plan(kind, summary.plan)
        if kind != "r":
            what = {"w": "writes data", "rw": "reads and writes data", "s": "changes the schema"}.get(kind, kind)
            raise WriteRefused(f"refused: this statement {what}; `graphstrata cypher` runs read-only queries only")
        try:
            with session.begin_transaction(timeout=timeout) as tx:
                res = tx.run(text, params)
                keys, rows, capped = list(res.keys()), [], False
                for record in res:
                    if max_rows is not None and len(rows) == max_rows:
                        capped = True
                        break
                    rows.append({k: to_jsonable(record[k]) for k in keys})
                tx.rollback()  # a read: nothing to keep; the unread rest is discarded, not streamed
        except Neo4jError as e:
            stopped = "TransactionTimedOut" in (e.code or "") or "Transaction.Terminated" in (e.code or "")
            if stopped and timeout is not None:  # with no timeout of ours, a stop is the server's own error
                raise QueryTimeout(
                    f"the query ran past its limit of {timeout:g} s (GRAPHSTRATA_CYPHER_TIMEOUT) and was stopped"
                ) from e
            raise
    return Result(keys, rows, capped)


def run_library(db: Database, name: str, params: dict[str, Any] | None = None, **limits: Any) -> Result:
    """A library query by name (``limits``: :func:`run`'s ``timeout`` and ``max_rows``)."""
    q = get(name)
    return run(db, q.text, q.bind(params or {}), **limits)


def to_jsonable(value: Any) -> Any:
    """Driver values → plain JSON values; nodes keep their labels and graphstrata `id`, never vectors."""
    if isinstance(value, Node):
        props = {k: to_jsonable(v) for k, v in value.items() if k not in HIDDEN_PROPERTIES}
        return {"labels": sorted(value.labels), "id": props.pop("id", None), "properties": props}
    if isinstance(value, Relationship):
        props = {k: to_jsonable(v) for k, v in value.items() if k not in HIDDEN_PROPERTIES}
        return {
            "type": value.type,
            "start": value.start_node.get("id") if value.start_node is not None else None,
            "end": value.end_node.get("id") if value.end_node is not None else None,
            "properties": props,
        }
    if isinstance(value, GraphPath):
        return {"nodes": [to_jsonable(n) for n in value.nodes], "relationships": [to_jsonable(r) for r in value]}
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if hasattr(value, "iso_format"):  # neo4j.time types
        return value.iso_format()
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return str(value)


def caption(value: Any) -> str:
    """A short cell for a table: nodes as (:Label name), relationships as [:TYPE], paths as chains."""
    if isinstance(value, dict) and "labels" in value and "properties" in value:
        p = value["properties"]
        name = next((p[k] for k in ("name", "title", "term", "predicate", "doc_title") if p.get(k)), None)
        return f"(:{':'.join(value['labels'])} {name if name is not None else value['id']})"
    if isinstance(value, dict) and "type" in value and "start" in value:
        return f"[:{value['type']}]"
    if isinstance(value, dict) and set(value) == {"nodes", "relationships"}:
        parts = [caption(value["nodes"][0])] if value["nodes"] else []
        for rel, node in zip(value["relationships"], value["nodes"][1:], strict=False):
            parts.append(f"-{caption(rel)}-{caption(node)}")
        return "".join(parts)
    if isinstance(value, list):
        return ", ".join(caption(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
