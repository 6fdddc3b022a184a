"""Cypher lives in ``*.cypher`` files next to this module, never in Python strings.

A file holds named statements, each introduced by a ``// name: <name>`` line; the comment lines
that follow the marker document it. ``query("ingest.write_chunks")`` returns the text of the
statement ``write_chunks`` of ``ingest.cypher``; analysts' queries are under ``queries/``.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

HERE = Path(__file__).parent
_MARKER = re.compile(r"^//\s*name:\s*([A-Za-z0-9_]+)\s*$")


class NamedQuery(str):
    """A query's text, with its documentation comment attached."""

    doc: str
    name: str


def _parse(text: str) -> dict[str, NamedQuery]:
    out: dict[str, NamedQuery] = {}
    name: str | None = None
    doc: list[str] = []
    body: list[str] = []

    def flush() -> None:
        if name is not None:
            q = NamedQuery("\n".join(body).strip().rstrip(";").strip())
            q.name, q.doc = name, "\n".join(doc).strip()
            out[name] = q

    for line in text.splitlines():
        m = _MARKER.match(line.strip())
        if m:
            flush()
            name, doc, body = m.group(1), [], []
        elif name is not None and not body and line.strip().startswith("//"):
            doc.append(line.strip()[2:].strip())
        elif name is not None:
            body.append(line)
    flush()
    return out


@cache
def load(file: str) -> dict[str, NamedQuery]:
    """All named statements of ``<file>.cypher`` (``file`` may contain a ``/``, e.g. ``queries/analyst``)."""
    path = HERE / f"{file}.cypher"
    if not path.exists():
        raise KeyError(f"no Cypher file {path}")
    return _parse(path.read_text())


def query(ref: str) -> NamedQuery:
    """``"file.name"`` → statement text."""
    file, _, name = ref.rpartition(".")
    queries = load(file)
    if name not in queries:
        raise KeyError(f"no statement {name!r} in {file}.cypher (has: {', '.join(sorted(queries))})")
    return queries[name]
