"""How the CLI prints summaries and evidence so they read well in a wide terminal, a narrow one and a
log file: a table only when it fits, else one ``key  value`` line per field; evidence numbered as
the answer cites it, each text shown once, with its documents' titles, folded to the width."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.retrieval.base import ContextItem

#: Lines of one evidence item's text before it is cut with "…".
EVIDENCE_LINES = 6
_CELL_PADDING = 3  # rich's default: one space either side and a border


def table_fits(out: Console, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> bool:
    """Whether a table shows every header and cell in full: on a terminal wide enough. In a log (not a
    terminal) key/value lines are kept, since a log reader greps them and has no columns to align."""
    if not out.is_terminal:
        return False
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return sum(w + _CELL_PADDING for w in widths) + 1 <= out.width


def print_summary(
    out: Console, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], keyed: bool = False
) -> None:
    """``rows`` under ``headers`` as a table if it fits, else as records: one ``header  value`` line per
    field; a row's first field heads its record when there are several rows or ``keyed`` (the first
    column names the row, e.g. a stage)."""
    cells = [[str(c) for c in r] for r in rows]
    if table_fits(out, headers, cells):
        table = Table(*headers, title=title)
        for r in cells:
            table.add_row(*r)
        out.print(table)
        return
    key_width = max(len(h) for h in headers)
    out.print(Text(f"{title}:", style="bold"))
    for r in cells:
        fields = list(zip(headers, r, strict=True))
        if (keyed or len(cells) > 1) and len(fields) > 1:
            out.print(Text(f"  {fields[0][1]}:"))
            fields, indent = fields[1:], "    "
        else:
            indent = "  "
        for h, v in fields:
            out.print(Text(f"{indent}{h:<{key_width}}  {v}"), overflow="fold")


def collect_warnings(notes: object) -> list[str]:
    """Every ``warnings`` entry in a result's notes, nested ones included (auto and fusion keep the
    notes of the methods they ran), each once."""
    found: list[str] = []
    if isinstance(notes, dict):
        for key, value in notes.items():
            if key == "warnings" and isinstance(value, list):
                found += [str(w) for w in value]
            else:
                found += collect_warnings(value)
    elif isinstance(notes, list):
        for value in notes:
            found += collect_warnings(value)
    return list(dict.fromkeys(found))


def _norm(text: str) -> str:
    return re.sub(r"\W+", " ", text.casefold()).strip()


def repeats(items: Sequence[ContextItem]) -> dict[int, int]:
    """Item index → the index of an earlier item whose text already holds all of its text."""
    seen: list[tuple[int, str]] = []
    out: dict[int, int] = {}
    for i, item in enumerate(items):
        text = _norm(item.text)
        holder = next((j for j, t in seen if text and text in t), None)
        if holder is None:
            seen.append((i, text))
        else:
            out[i] = holder
    return out


def fold(text: str, width: int, indent: str = "    ", max_lines: int = EVIDENCE_LINES) -> str:
    """``text`` wrapped to ``width`` under ``indent``, at most ``max_lines`` lines (cut with "…")."""
    lines = textwrap.wrap(" ".join(text.split()), width=max(20, width - len(indent))) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: max(0, width - len(indent) - 2)].rstrip() + " …"
    return "\n".join(indent + line for line in lines)


def fill_titles(db: Database, items: Sequence[ContextItem]) -> None:
    """Give items that name no document the titles of their source chunks' documents."""
    ids = sorted({c for it in items if not it.doc_titles for c in it.chunk_ids})
    if not ids:
        return
    titles = {r["id"]: r["title"] for r in db.read(query("meta.chunk_titles"), ids=ids)}
    for it in items:
        if not it.doc_titles:
            it.doc_titles = list(dict.fromkeys(titles[c] for c in it.chunk_ids if titles.get(c)))


def print_evidence(out: Console, items: Sequence[ContextItem]) -> None:
    """Evidence numbered as the answer's [n] citations; an item whose text an earlier one already
    holds is one line pointing to that item."""
    dup = repeats(items)
    for i, item in enumerate(items):
        head = Text(f"[{i + 1}] ", style="bold")
        head.append(f"{item.label} {item.node_id}")
        if item.doc_titles:
            head.append(" · " + "; ".join(dict.fromkeys(item.doc_titles)), style="cyan")
        head.append(f" · score {item.score:.3f}", style="dim")
        if i in dup:
            head.append(f" · same text as [{dup[i] + 1}]", style="dim")
            out.print(head, overflow="fold")
            continue
        out.print(head, overflow="fold")
        out.print(Text(fold(item.text, out.width)), overflow="fold")
        out.print(Text(fold(f"why: {item.why}", out.width, max_lines=2), style="dim"), overflow="fold")


def entities_not_in_graph(db: Database, question: str) -> tuple[list[str], list[str]] | None:
    """The question's entities (as every method finds them without an LLM) and those of them no
    entity in the graph matches, or None when the question names none or all are found."""
    from graphstrata.retrieval.linking import link_entities, spacy_query_entities

    names = spacy_query_entities(question)
    if not names:
        return None
    found = {e.query_name for e in link_entities(db, names).entities}
    missing = [n for n in names if n not in found]
    return (names, missing) if missing else None


def not_in_graph_note(names: Sequence[str], missing: Sequence[str]) -> str:
    if len(missing) == len(names):
        return (
            f"note: no entity of the question ({', '.join(missing)}) is in the graph; the evidence below is "
            "what is most similar to the question and may not be about it"
        )
    return f"note: not in the graph: {', '.join(missing)} (the evidence follows the question's other entities)"
