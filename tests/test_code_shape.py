"""The package's shape: no import cycle among graphstrata's modules and no module over 450 lines.

Imports are read from the source (AST), including those inside functions — a function-level import
is still a cycle at run time, only a later one. Imports under ``if TYPE_CHECKING:`` never run and
do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "graphstrata"
MAX_LINES = 450


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_only(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The graphstrata modules ``name`` imports anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking_only(node):
            for child in node.orelse:  # type: ignore[attr-defined]
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return {m for m in found if m in known and m != name}


def import_graph() -> nx.DiGraph:
    known = modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    for name, path in known.items():
        graph.add_edges_from((name, target) for target in imported(name, path, known))
    return graph


def test_the_import_reader_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    src = tmp_path / "graphstrata" / "pkg"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("")
    (src / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\n")
    (src / "b.py").write_text("def f():\n    from .a import thing\n    import graphstrata.pkg.c\n")
    (src / "c.py").write_text("")
    known = {f"graphstrata.pkg.{n}": src / f"{n}.py" for n in ("a", "b", "c")} | {
        "graphstrata.pkg": src / "__init__.py"
    }
    assert imported("graphstrata.pkg.b", src / "b.py", known) == {"graphstrata.pkg.a", "graphstrata.pkg.c"}
    assert imported("graphstrata.pkg.a", src / "a.py", known) == set()  # TYPE_CHECKING only


def test_no_import_cycle() -> None:
    graph = import_graph()
    assert graph.number_of_edges() > 100  # the reader sees the package's imports at all
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, "modules that import each other (directly or around a loop):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def test_no_module_over_450_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n for p in modules().values() if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"
