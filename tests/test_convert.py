"""PDF, HTML and DOCX input: files made here (reportlab, pypdf, python-docx; nothing downloaded)
load with their text, title and sections (pages, headings), ingest into the real Neo4j with chunk
provenance, and unusable files (encrypted, corrupt, image-only PDF; corrupt DOCX) are refused with a
clear error naming the file, nothing written. The CLI is exercised too."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from docx import Document as DocxDocument
from pypdf import PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from graphstrata.client import GraphStrata
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.ingest.convert import chunk_provenance
from graphstrata.ingest.load import LoadError, load_file
from graphstrata.ingest.pipeline import IngestOptions

ROOT = Path(__file__).resolve().parents[1]

PAGES = [
    "Kur is the Sumerian underworld. The goddess Ereshkigal rules Kur from her palace Ganzir.",
    "The Utukku are spirits of the underworld. Some of them are good and some of them are evil.",
    "Enki sails to Kur to fight the dragon. The battle is told in the poem of Gilgamesh.",
]


def make_pdf(pages: list[str], title: str = "Underworld notes") -> bytes:
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    c.setTitle(title)
    for text in pages:
        y = 800
        for sentence in text.split(". "):
            c.drawString(72, y, sentence.strip().rstrip(".") + ".")
            y -= 16
        c.showPage()
    c.save()
    return buf.getvalue()


def encrypted_pdf() -> bytes:
    writer = PdfWriter(clone_from=io.BytesIO(make_pdf(PAGES[:1])))
    writer.encrypt(user_password="secret", owner_password="owner")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def image_only_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=595, height=842)  # a scanned page without OCR has no text layer either
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


HTML = b"""<!doctype html><html><head><title>Mesopotamian demons</title>
<style>body { color: red }</style><script>var notText = "should not appear";</script></head>
<body><nav><a href="/">Home</a></nav>
<h1>Demons</h1><p>Alu is a vengeful spirit that <b>has no mouth</b>.</p>
<h2>Lilu</h2><ul><li><p>Lilu is a masculine Akkadian word for a spirit.</p></li><li>It roams at night.</li></ul>
<div>Loose text in a div.</div>
</body></html>"""


def make_docx() -> bytes:
    doc = DocxDocument()
    doc.core_properties.title = "Gods of Sumer"
    doc.add_heading("Enki", level=1)
    doc.add_paragraph("Enki is the god of water, knowledge and crafts.")
    doc.add_heading("Ereshkigal", level=1)
    doc.add_paragraph("Ereshkigal is the queen of Kur, the underworld.")
    table = doc.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "city"
    table.rows[0].cells[1].text = "Eridu"
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


# ------------------------------------------------------------------------------------------------
# loading
# ------------------------------------------------------------------------------------------------


def test_pdf_text_title_and_pages(tmp_path: Path) -> None:
    [doc] = load_file(write(tmp_path, "notes.pdf", make_pdf(PAGES)))
    assert doc.title == "Underworld notes" and doc.source == str((tmp_path / "notes.pdf").resolve())
    assert [label for _, label in doc.sections] == ["p. 1", "p. 2", "p. 3"]
    for (offset, _), page in zip(doc.sections, PAGES, strict=True):
        assert doc.text[offset:].startswith(page.split(".")[0])  # each page starts where its section says


def test_html_blocks_headings_and_no_script(tmp_path: Path) -> None:
    [doc] = load_file(write(tmp_path, "demons.html", HTML))
    assert doc.title == "Mesopotamian demons"
    assert "has no mouth" in doc.text and "roams at night" in doc.text and "Loose text in a div." in doc.text
    assert "should not appear" not in doc.text and "color: red" not in doc.text
    assert doc.text.count("Lilu is a masculine") == 1  # a <p> inside an <li> is read once
    assert [label for _, label in doc.sections] == ["Demons", "Lilu"]
    assert doc.text[doc.sections[1][0] :].startswith("Lilu\n\nLilu is a masculine")


def test_docx_headings_paragraphs_and_tables(tmp_path: Path) -> None:
    [doc] = load_file(write(tmp_path, "gods.docx", make_docx()))
    assert doc.title == "Gods of Sumer"
    assert "god of water" in doc.text and "queen of Kur" in doc.text and "city | Eridu" in doc.text
    assert [label for _, label in doc.sections] == ["Enki", "Ereshkigal"]


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("locked.pdf", encrypted_pdf(), "encrypted PDF"),
        ("scan.pdf", image_only_pdf(), "no text layer"),
        ("broken.pdf", make_pdf(PAGES)[:400], "corrupt or unreadable PDF"),
        ("noise.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 8, "corrupt or unreadable PDF"),
        ("broken.docx", b"PK\x03\x04 this is not a zip", "corrupt or unreadable DOCX"),
    ],
)
def test_unusable_files_are_refused_by_name(tmp_path: Path, name: str, data: bytes, reason: str) -> None:
    path = write(tmp_path, name, data)
    with pytest.raises(LoadError) as e:
        load_file(path)
    assert str(path) in str(e.value) and reason in e.value.reason


def test_chunk_provenance_spans_sections() -> None:
    text = "aaaa bbbb cccc dddd"
    sections = ((0, "p. 1"), (10, "p. 2"))
    assert chunk_provenance(text, sections, ["aaaa bbbb ", "bbbb cccc", "dddd"]) == [
        ["p. 1"],
        ["p. 1", "p. 2"],
        ["p. 2"],
    ]
    assert chunk_provenance(text, (), ["aaaa"]) == [None]


# ------------------------------------------------------------------------------------------------
# ingesting into Neo4j, and the CLI
# ------------------------------------------------------------------------------------------------


def test_ingest_with_provenance_and_a_corrupt_pdf_writes_nothing_of_it(
    graph: Database, neo4j_settings: Settings, tmp_path: Path
) -> None:
    write(tmp_path, "notes.pdf", make_pdf(PAGES))
    write(tmp_path, "demons.html", HTML)
    write(tmp_path, "gods.docx", make_docx())
    write(tmp_path, "broken.pdf", make_pdf(PAGES)[:400])
    gs = GraphStrata(neo4j_settings, db=graph)
    report = gs.ingest([tmp_path], IngestOptions(extractor="spacy", chunk_size=24, chunk_overlap=4))
    assert report.documents_new == 3
    assert len(report.errors) == 1 and "broken.pdf" in report.errors[0] and "corrupt" in report.errors[0]
    titles = {r["t"] for r in graph.read("MATCH (d:Document) RETURN d.title AS t")}
    assert titles == {"Underworld notes", "Mesopotamian demons", "Gods of Sumer"}
    chunks = graph.read(
        "MATCH (:Document {title: $t})-[:HAS_CHUNK]->(c:Chunk) RETURN c.text AS text, c.provenance AS p "
        "ORDER BY c.ordinal",
        t="Underworld notes",
    )
    assert len(chunks) >= 3
    assert chunks[0]["p"][0] == "p. 1" and chunks[-1]["p"][-1] == "p. 3"
    for c in chunks:  # each chunk names the pages its text comes from
        for number, page in enumerate(PAGES, 1):
            if page.split(".")[0] in c["text"]:
                assert f"p. {number}" in c["p"], c
    html = graph.read(
        "MATCH (:Document {title: 'Mesopotamian demons'})-[:HAS_CHUNK]->(c:Chunk) RETURN c.provenance AS p"
    )
    assert {label for c in html for label in c["p"]} == {"Demons", "Lilu"}
    # retrieval finds the PDF's text
    hit = gs.retrieve("Who rules Kur from her palace?", "fulltext").items[0]
    assert hit.doc_titles == ["Underworld notes"]


def test_cli_ingest_refuses_an_encrypted_pdf(graph: Database, neo4j_settings: Settings, tmp_path: Path) -> None:
    path = write(tmp_path, "locked.pdf", encrypted_pdf())
    env = neo4j_settings.subprocess_env(PYTHONPATH=str(ROOT))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GRAPHSTRATA_CHAT_MODEL"):
        env.pop(name, None)
    cmd = [sys.executable, "-c", "from graphstrata.cli import app; app()", "ingest", str(path)]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert "locked.pdf" in out.stdout + out.stderr and "encrypted PDF" in out.stdout + out.stderr
    assert graph.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"] == 0
