#!/usr/bin/env python
"""Draw graphstrata's data model from a live database: docs/data-model.svg.

Reads what is really there — nodes per label, relationships per (start label, type, end label),
and the property keys of each label and type (``db.schema.nodeTypeProperties()`` /
``db.schema.relTypeProperties()``) — and lays it out with Graphviz ``dot`` (Debian: ``apt-get
install graphviz``), one cluster per layer, coloured as in Neo4j Browser's style sheet
(graphstrata/browser/graphstrata.grass). Without ``dot`` it writes a plainer SVG itself.

    .venv/bin/python scripts/schema_diagram.py                 # the configured server (NEO4J_URI or local)
    .venv/bin/python scripts/schema_diagram.py --out docs/data-model.svg --dot docs/data-model.dot

The connection comes from the usual settings (NEO4J_URI/NEO4J_PASSWORD, or GRAPHSTRATA_INSTANCE and
its ports for the local server). Counting relationships scans them all: fine for the sample corpus
and graphs of a few million relationships; `--no-counts` uses db.schema.visualization() instead.
"""

from __future__ import annotations

import argparse
import html
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphstrata.browser import label_colours  # noqa: E402
from graphstrata.config import get_settings  # noqa: E402
from graphstrata.db import Database  # noqa: E402

# Layers of the model (docs/data-model.md): cluster title and labels, in drawing order.
LAYERS = [
    ("Text (every method)", ["Document", "Chunk"]),
    ("KET-RAG", ["SubChunk", "Keyword"]),
    ("E2GraphRAG summary tree and terms", ["Summary", "Term"]),
    ("Knowledge graph", ["Entity", "Relation"]),
    ("NodeRAG", ["SemanticUnit", "Attribute"]),
    ("Communities (NodeRAG)", ["Community", "HighLevel", "Overview"]),
    ("Meta", ["GraphStrata"]),
]
DARK_TEXT = {"SubChunk", "Relation", "SemanticUnit", "Term"}
MAX_PATTERNS = 4  # a type linking more (start, end) label pairs is listed in a note, not drawn

NODE_COUNTS = "MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS n ORDER BY label"
REL_COUNTS = (
    "MATCH (a)-[r]->(b) RETURN labels(a)[0] AS a, type(r) AS type, labels(b)[0] AS b, count(*) AS n ORDER BY type, a, b"
)
SCHEMA = (
    "CALL db.schema.visualization() YIELD relationships UNWIND relationships AS r "
    "RETURN startNode(r).name AS a, type(r) AS type, endNode(r).name AS b, null AS n"
)
NODE_PROPS = (
    "CALL db.schema.nodeTypeProperties() YIELD nodeLabels, propertyName "
    "WITH nodeLabels, propertyName WHERE propertyName IS NOT NULL "
    "UNWIND nodeLabels AS label RETURN label, collect(DISTINCT propertyName) AS props"
)
REL_PROPS = (
    "CALL db.schema.relTypeProperties() YIELD relType, propertyName "
    "WITH relType, propertyName WHERE propertyName IS NOT NULL "
    "RETURN substring(relType, 2, size(relType) - 3) AS type, collect(DISTINCT propertyName) AS props"
)


def read_model(db: Database, counts: bool = True) -> dict:
    nodes = {r["label"]: r["n"] for r in db.read(NODE_COUNTS)}
    rels = db.read(REL_COUNTS if counts else SCHEMA)
    node_props = {r["label"]: sorted(r["props"]) for r in db.read(NODE_PROPS)}
    rel_props = {r["type"]: sorted(r["props"]) for r in db.read(REL_PROPS)}
    return {"nodes": nodes, "rels": rels, "node_props": node_props, "rel_props": rel_props}


def _props_text(props: list[str], width: int = 34) -> list[str]:
    """Property keys wrapped into lines of about `width` characters."""
    lines, line = [], ""
    for p in props:
        if line and len(line) + len(p) + 2 > width:
            lines.append(line + ",")
            line = p
        else:
            line = f"{line}, {p}" if line else p
    return [*lines, line] if line else lines


def to_dot(model: dict) -> str:
    colours = label_colours()
    present = set(model["nodes"])
    out = [
        "digraph graphstrata {",
        '  graph [rankdir=LR, fontname="Helvetica", fontsize=12, nodesep=0.35, ranksep=0.9, '
        'label="graphstrata data model (live counts)", labelloc=t, fontsize=16, bgcolor="white"];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, margin="0.12,0.06"];',
        '  edge [fontname="Helvetica", fontsize=8, color="#6B7280", arrowsize=0.7];',
    ]
    placed = set()
    for i, (title, labels) in enumerate(LAYERS):
        labels = [lb for lb in labels if lb in present]
        if not labels:
            continue
        out.append(f'  subgraph cluster_{i} {{ label="{title}"; style="rounded,dashed"; color="#9CA3AF";')
        for lb in labels:
            out.append("    " + _dot_node(lb, model, colours))
            placed.add(lb)
        out.append("  }")
    for lb in sorted(present - placed):  # a label the model does not know yet: still drawn
        out.append("  " + _dot_node(lb, model, colours))
    patterns: dict[str, list[dict]] = {}
    for r in model["rels"]:
        if r["a"] is not None and r["b"] is not None:
            patterns.setdefault(r["type"], []).append(r)
    notes = []
    for typ, rs in patterns.items():
        props = model["rel_props"].get(typ, [])
        if len(rs) > MAX_PATTERNS:  # a k-NN type among many labels: one note instead of a web of edges
            total = sum(r["n"] or 0 for r in rs)
            ends = sorted({x for r in rs for x in (r["a"], r["b"])})
            notes.append(f"{typ} ({total}): among {', '.join(ends)}" + (f" {{{', '.join(props)}}}" if props else ""))
            continue
        for r in rs:
            label = typ if r["n"] is None else f"{typ} ({r['n']})"
            if props:
                label += "\\n{" + ", ".join(props) + "}"
            colour = colours.get(r["a"], "#6B7280")
            out.append(f'  "{r["a"]}" -> "{r["b"]}" [label="{label}", color="{colour}", fontcolor="#374151"];')
    if notes:
        text = "<BR ALIGN='LEFT'/>".join(html.escape(n) for n in ["not drawn, too many label pairs:", *notes])
        out.append(f"  notes [shape=plaintext, style=\"\", fontsize=9, label=<{text}<BR ALIGN='LEFT'/>>];")
    out.append("}")
    return "\n".join(out) + "\n"


def _dot_node(label: str, model: dict, colours: dict[str, str]) -> str:
    fill = colours.get(label, "#A5ABB6")
    font = "#1F2937" if label in DARK_TEXT else "#FFFFFF"
    rows = [f'<B><FONT POINT-SIZE="12">{label}</FONT></B>', f"{model['nodes'].get(label, 0)} nodes"]
    rows += [html.escape(x) for x in _props_text(model["node_props"].get(label, []))]
    body = "<BR/>".join(rows)
    return f'"{label}" [label=<{body}>, fillcolor="{fill}", fontcolor="{font}", color="{fill}"];'


def fallback_svg(model: dict) -> str:
    """A plain SVG without Graphviz: layers as columns, labels as boxes, relationships as lines."""
    colours = label_colours()
    present = set(model["nodes"])
    cols = [[lb for lb in labels if lb in present] for _, labels in LAYERS]
    cols = [c for c in cols if c] + [sorted(present - {x for c in cols for x in c})]
    cols = [c for c in cols if c]
    box_w, box_h, gap_x, gap_y = 190, 70, 120, 50
    pos = {}
    for i, col in enumerate(cols):
        for j, lb in enumerate(col):
            pos[lb] = (40 + i * (box_w + gap_x), 60 + j * (box_h + gap_y))
    width = 80 + len(cols) * (box_w + gap_x)
    height = 120 + max(len(c) for c in cols) * (box_h + gap_y)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="Helvetica" '
        'font-size="10">',
        '<rect width="100%" height="100%" fill="white"/>',
        '<text x="20" y="30" font-size="16">graphstrata data model (live counts)</text>',
    ]
    for r in model["rels"]:
        if r["a"] not in pos or r["b"] not in pos:
            continue
        (x1, y1), (x2, y2) = pos[r["a"]], pos[r["b"]]
        x1, y1, x2, y2 = x1 + box_w / 2, y1 + box_h / 2, x2 + box_w / 2, y2 + box_h / 2
        if r["a"] == r["b"]:
            parts.append(f'<path d="M{x1 + 40},{y1 - box_h / 2} c 30,-40 60,-10 50,20" fill="none" stroke="#9CA3AF"/>')
            mx, my = x1 + 80, y1 - box_h / 2 - 12
        else:
            parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#9CA3AF"/>')
            mx, my = (x1 + x2) / 2, (y1 + y2) / 2 - 3
        text = r["type"] if r["n"] is None else f"{r['type']} ({r['n']})"
        parts.append(f'<text x="{mx:.0f}" y="{my:.0f}" text-anchor="middle" fill="#374151">{text}</text>')
    for lb, (x, y) in pos.items():
        fill = colours.get(lb, "#A5ABB6")
        font = "#1F2937" if lb in DARK_TEXT else "#FFFFFF"
        parts.append(f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="10" fill="{fill}"/>')
        parts.append(f'<text x="{x + 10}" y="{y + 18}" font-size="12" font-weight="bold" fill="{font}">{lb}</text>')
        parts.append(f'<text x="{x + 10}" y="{y + 32}" fill="{font}">{model["nodes"].get(lb, 0)} nodes</text>')
        for k, line in enumerate(_props_text(model["node_props"].get(lb, []), 36)[:2]):
            parts.append(f'<text x="{x + 10}" y="{y + 46 + 12 * k}" fill="{font}">{html.escape(line)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "data-model.svg")
    ap.add_argument("--dot", type=Path, default=None, help="also keep the Graphviz source here")
    ap.add_argument("--no-counts", action="store_true", help="db.schema.visualization() instead of counting")
    ap.add_argument("--plain", action="store_true", help="the built-in SVG writer even if dot is installed")
    args = ap.parse_args(argv)
    with Database.from_settings(get_settings()) as db:
        model = read_model(db, counts=not args.no_counts)
    if not model["nodes"]:
        print("the database is empty: ingest and augment something first", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    dot_src = to_dot(model)
    if args.dot:
        args.dot.write_text(dot_src)
    if shutil.which("dot") and not args.plain:
        svg = subprocess.run(["dot", "-Tsvg"], input=dot_src, capture_output=True, text=True, check=True).stdout
    else:
        svg = fallback_svg(model)
    args.out.write_text(svg)
    n_rels = sum(r["n"] or 0 for r in model["rels"])
    print(f"wrote {args.out} ({len(model['nodes'])} labels, {len(model['rels'])} patterns, {n_rels} relationships)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
