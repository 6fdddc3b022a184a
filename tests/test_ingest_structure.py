"""The ingest package's shape: no module over 450 lines, and no import cycle among its modules —
counting every import (module level, inside functions, and under TYPE_CHECKING), because each is a
dependency a reader must follow both ways."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "graphstrata" / "ingest"


def imports_of(path: Path) -> set[str]:
    """The graphstrata.ingest modules ``path`` imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n.split(".")[2] for n in names if n.startswith("graphstrata.ingest.") and n.count(".") >= 2}
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    return (found & modules) - {path.stem}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary cycle's smallest representative, by depth-first search from each module."""
    out: set[tuple[str, ...]] = set()

    def walk(start: str, node: str, trail: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                i = trail.index(min(trail))
                out.add(tuple(trail[i:] + trail[:i]))
            elif nxt not in trail and nxt > start:
                walk(start, nxt, [*trail, nxt])

    for start in sorted(graph):
        walk(start, start, [start])
    return [list(c) for c in sorted(out)]


def test_cycle_finder_finds_a_known_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_ingest() -> None:
    graph = {p.stem: imports_of(p) for p in PACKAGE.glob("*.py")}
    assert "load" in graph["identity"] or "document" in graph["identity"]  # the parser sees real imports
    assert cycles(graph) == []


def test_no_ingest_module_over_450_lines() -> None:
    sizes = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 450} == {}
