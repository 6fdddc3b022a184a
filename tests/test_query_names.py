"""Every named Cypher statement the code asks for exists: a renamed or deleted statement fails here,
not in the first request that reaches it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphstrata.cypher import query

PACKAGE = Path(__file__).resolve().parents[1] / "graphstrata"
LITERAL = re.compile(r'\bquery\(\s*"([A-Za-z0-9_/]+\.[A-Za-z0-9_]+)"\s*\)')
# ingest's statements are run by name through helpers (ingest/write.py: _run, _check_present, _lock)
INGEST_RUN = re.compile(r'\b_(?:run|check_present)\(tx, "([a-z_]+)"')
INGEST_LOCK = re.compile(r'\b_lock\(tx, "([a-z_]+)"')
# names built at run time: the f-string's template -> every value it takes (read off the code)
DYNAMIC = {
    'f"{name}_nodes"': ["hipporag.passage_graph_nodes", "noderag.heterograph_nodes"],
    'f"{name}_edges"': ["hipporag.passage_graph_edges", "noderag.heterograph_edges"],
    # augment/similarity.py replace_edges: edges = similar | semantic_edges
    'f"augment.{edges}_pairs"': ["augment.similar_pairs", "augment.semantic_edges_pairs"],
    'f"augment.delete_{edges}_pairs"': ["augment.delete_similar_pairs", "augment.delete_semantic_edges_pairs"],
    'f"augment.write_{edges}"': ["augment.write_similar", "augment.write_semantic_edges"],
    # augment/knn_index.py: a top-k layer's new nodes, stored lists and linked count (similar | semantic_edges)
    'f"augment.{stored}_new"': ["augment.similar_new", "augment.semantic_edges_new"],
    'f"augment.{stored}_lists"': ["augment.similar_lists", "augment.semantic_edges_lists"],
    'f"augment.{stored}_linked"': ["augment.similar_linked", "augment.semantic_edges_linked"],
    # ingest/write.py _aggregate: kind = entities | terms | related (and _run(tx, f"set_{kind}"))
    'f"ingest.{kind}_tallies"': [f"ingest.{k}_tallies" for k in ("entities", "terms", "related")],
    'f"ingest.{kind}_records"': [f"ingest.{k}_records" for k in ("entities", "terms", "related")]
    + [f"ingest.set_{k}" for k in ("entities", "terms", "related")],
}


# the ingest helpers' templates, whose names the scan reads off their call sites
INGEST_TEMPLATES = {'f"ingest.{name}"', 'f"ingest.lock_{what}"'}


def _references() -> dict[str, list[str]]:
    refs: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            names = LITERAL.findall(line) + [f"ingest.{x}" for x in INGEST_RUN.findall(line)]
            names += [f"ingest.{kind}_{x}" for x in INGEST_LOCK.findall(line) for kind in ("lock", "missing")]
            for name in names:
                refs.setdefault(name, []).append(f"{path.relative_to(PACKAGE.parent)}:{n}")
    return refs


REFS = _references()


def test_the_scan_finds_the_code_s_queries() -> None:
    assert len(REFS) > 100 and {"meta.touch", "retrieval.vector_chunks", "ingest.write_chunks"} <= set(REFS)
    assert {"ingest.lock_entities", "ingest.missing_terms"} <= set(REFS)


@pytest.mark.parametrize("name", sorted(REFS))
def test_named_query_resolves(name: str) -> None:
    assert query(name).strip(), REFS[name]


def test_dynamic_names_resolve_and_are_all_listed() -> None:
    templates = set()
    for path in PACKAGE.rglob("*.py"):
        templates |= set(re.findall(r'\bquery\((f"[^"]+")\)', path.read_text()))
    assert templates == set(DYNAMIC) | INGEST_TEMPLATES
    for names in DYNAMIC.values():
        for name in names:
            assert query(name).strip()


VECTOR_CALL = re.compile(r"db\.index\.vector\.queryNodes\(\s*[^,]+,\s*\$(\w+)\s*,")


def test_every_vector_index_query_over_fetches() -> None:
    """Lucene's HNSW uses k as its beam width, so a small k can miss a true nearest neighbour: every
    vector-index call asks for `hnsw_candidates(k)` (a `$...candidates` parameter) and keeps its k best
    (a LIMIT after it), never for k itself."""
    calls = 0
    for path in sorted((PACKAGE / "cypher").rglob("*.cypher")):
        text = path.read_text()
        for m in VECTOR_CALL.finditer(text):
            calls += 1
            assert m.group(1).endswith("candidates"), f"{path.name}: queryNodes(..., ${m.group(1)}, ...)"
            assert "LIMIT" in text[m.end() : m.end() + 600], f"{path.name}: no LIMIT after the over-fetch"
    assert calls >= 8
