"""Chunk provenance by position on repeated text: a running header on every page and two pages with
identical openings. Each chunk must get the labels of the sections where the chunker cut it, checked
against an independent reckoning (the length of the decoded token prefix) and end to end on a PDF
ingested into the real Neo4j."""

from __future__ import annotations

from pathlib import Path

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.chunk import semantic_chunks, token_chunks
from graphstrata.ingest.convert import chunk_provenance
from graphstrata.ingest.pipeline import IngestOptions
from graphstrata.ingest.provenance import piece_provenance
from graphstrata.text.tokens import encode, encoder

try:
    from tests.test_convert import make_pdf
except ModuleNotFoundError:  # tests/ is no package
    from test_convert import make_pdf  # type: ignore[no-redef]

HEADER = "Acme Corporation quarterly report. Confidential, do not distribute. "
PAGES = [
    HEADER + "The first quarter saw sales of copper wire in Lyon rise by a tenth.",
    HEADER + "The second quarter opened a warehouse in Porto for the southern market.",
    HEADER + "The third quarter closed the Lyon office after the lease ran out.",
]


def document() -> tuple[str, tuple[tuple[int, str], ...]]:
    text, sections = "", []
    for i, page in enumerate(PAGES, 1):
        sections.append((len(text), f"p. {i}"))
        text += page + "\n\n"
    return text, tuple(sections)


def expected(text: str, sections: tuple[tuple[int, str], ...], start_token: int, tokens: int) -> list[str]:
    """The labels of the sections overlapping the window, its characters counted by decoding the
    token prefix (ASCII text: one character per byte)."""
    ids = encode(text)
    start = len(encoder().decode(ids[:start_token]))
    end = len(encoder().decode(ids[: start_token + tokens]))
    bounds = [*(o for o, _ in sections[1:]), len(text) + 1]
    return [label for (o, label), nxt in zip(sections, bounds, strict=True) if o < end and nxt > start]


def test_windows_on_repeated_openings_get_their_own_pages() -> None:
    text, sections = document()
    per_page = len(encode(PAGES[0] + "\n\n"))
    # one window per page, overlapping the previous page's end: each window opens with the header
    pieces = token_chunks(text, size=per_page, overlap=2)
    got = piece_provenance(text, sections, pieces, windows=True)
    want = [expected(text, sections, p.start, p.tokens) for p in pieces]
    assert got == want
    assert got[-1][-1] == "p. 3" and any(g[-1] == "p. 2" for g in got)


def test_identical_openings_exactly_on_page_starts() -> None:
    opening = "Same opening words on every page of this report. " * 5  # longer than a search's 200-character head
    first, second = f"{opening}Alpha.\n\n", f"{opening}Beta, the longer ending of the second page.\n\n"
    text = first + second
    sections = ((0, "p. 1"), (len(first), "p. 2"))
    pieces = token_chunks(text, size=len(encode(first)), overlap=0)
    assert pieces[1].text.startswith(opening)
    got = piece_provenance(text, sections, pieces, windows=True)
    assert got[0] == ["p. 1"] and got[1] == ["p. 2"]
    # searching for the text finds the second page's opening on the first page: the old way was wrong
    assert chunk_provenance(text, sections, [first, second]) == [["p. 1"], ["p. 1", "p. 2"]]
    # semantic chunks (no overlap, in order): each found after the previous one, not at the first match
    semantic = semantic_chunks(text, size=8)
    labels = piece_provenance(text, sections, semantic, windows=False)
    assert labels[0] == ["p. 1"] and labels[-1] == ["p. 2"]
    beta = next(i for i, p in enumerate(semantic) if "Beta" in p.text)
    assert labels[beta] == ["p. 2"]


def test_pdf_with_a_running_header_ingested(graph: Database, neo4j_settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    path.write_bytes(make_pdf(PAGES, "Acme report"))
    gs = GraphStrata(neo4j_settings, db=graph)
    size = len(encode(PAGES[0])) // 2  # two or three chunks per page, several opening with the header
    report = gs.ingest([path], IngestOptions(extractor="spacy", chunk_size=size, chunk_overlap=0))
    assert report.documents_new == 1
    chunks = graph.read(
        "MATCH (:Document {title: 'Acme report'})-[:HAS_CHUNK]->(c:Chunk) RETURN c.text AS text, c.provenance AS p "
        "ORDER BY c.ordinal"
    )
    assert len(chunks) >= 4
    for c in chunks:  # a chunk holding a page's own words names that page
        for number, page in enumerate(PAGES, 1):
            own = page.removeprefix(HEADER).split(" ")[1:4]  # "first quarter saw", "second quarter opened", …
            if " ".join(own) in c["text"]:
                assert f"p. {number}" in c["p"], c
    # in document order the pages never go back, and a later header is never the first page's
    firsts = [int(c["p"][0].split()[-1]) for c in chunks]
    assert firsts == sorted(firsts) and chunks[-1]["p"] == ["p. 3"], chunks
    for c in chunks[1:]:
        if "Acme Corporation" in c["text"]:
            assert c["p"] != ["p. 1"], chunks
