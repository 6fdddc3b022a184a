"""PDF, HTML and DOCX to text, keeping where each part came from (page numbers, headings).

Converters: pypdf (pure Python, PDF text layers), BeautifulSoup with the standard library's HTML
parser, python-docx. Each returns the text and its *sections*: ``(character offset, label)`` pairs
in text order — ``p. 3`` for a PDF page, the heading's text for HTML and DOCX — from which every
chunk gets the labels of the sections it overlaps (``Chunk.provenance``).

Anything that cannot give text raises :class:`~graphstrata.ingest.load.LoadError` naming the file,
before anything is written: a corrupt file, an encrypted PDF, a PDF without a text layer (scanned
pages need OCR first), a document with no text at all.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path

CONVERTED_SUFFIXES = {".pdf", ".html", ".htm", ".xhtml", ".docx"}
Section = tuple[int, str]


@dataclass(frozen=True)
class Converted:
    title: str
    text: str
    sections: tuple[Section, ...] = field(default_factory=tuple)


class ConvertError(ValueError):
    """Why a file gives no text (the loader adds the file's name)."""


def convert(path: Path, data: bytes) -> Converted:
    """The text of a PDF, HTML or DOCX file's bytes; ConvertError when there is none to be had."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        out = _pdf(path, data)
    elif suffix == ".docx":
        out = _docx(path, data)
    else:
        out = _html(path, data)
    if not out.text.strip():
        raise ConvertError("no text in it")
    return out


class _Builder:
    """Text assembled block by block, remembering where each section starts."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.sections: list[Section] = []
        self._label: str | None = None

    def section(self, label: str) -> None:
        """The next block starts a section (a section with no text is not kept)."""
        self._label = " ".join(label.split())[:200] or None

    def add(self, block: str) -> None:
        block = block.strip()
        if not block:
            return
        if self.parts:
            self.parts.append("\n\n")
            self.size += 2
        if self._label:
            self.sections.append((self.size, self._label))
            self._label = None
        self.parts.append(block)
        self.size += len(block)

    def build(self, title: str) -> Converted:
        return Converted(title=" ".join(title.split()), text="".join(self.parts), sections=tuple(self.sections))


def _pdf(path: Path, data: bytes) -> Converted:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ConvertError("encrypted PDF (it needs a password); decrypt it first")
        out = _Builder()
        for number, page in enumerate(reader.pages, 1):
            text = page.extract_text() or ""
            if text.strip():
                out.section(f"p. {number}")
                out.add(text)
        meta = reader.metadata
        title = (meta.title if meta is not None else None) or ""
    except ConvertError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, OSError) as e:
        raise ConvertError(f"corrupt or unreadable PDF ({type(e).__name__}: {e})") from e
    if not out.parts:
        pages = len(reader.pages)
        raise ConvertError(f"no text layer in its {pages} page(s) (a scanned or image-only PDF needs OCR first)")
    return out.build(title.strip() or path.stem)


_HEADING = re.compile(r"^h[1-6]$")
_SKIP = ("script", "style", "noscript", "template", "svg", "head")
_BLOCKS = ("p", "li", "pre", "blockquote", "td", "th", "dt", "dd", "figcaption", "caption", "address")


def _html(path: Path, data: bytes) -> Converted:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(data, "html.parser")
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag else ""
    for tag in soup(_SKIP):
        tag.decompose()
    out = _Builder()
    first_heading = ""
    # a block is a heading or a text element with no text element inside (so nothing is read twice);
    # text outside any block (a bare <div> or <body> text) is collected as its own block
    for el in (soup.body or soup).find_all(True):
        if _HEADING.match(el.name):
            text = el.get_text(" ", strip=True)
            out.section(text)
            out.add(text)
            first_heading = first_heading or text
        elif el.name in _BLOCKS and not el.find(_BLOCKS) and not el.find_parent(_HEADING):
            out.add(el.get_text(" ", strip=True))
        elif el.name in ("div", "section", "article", "main", "body"):
            loose = " ".join(s.strip() for s in el.find_all(string=True, recursive=False) if s.strip())
            out.add(loose)
    return out.build(title or first_heading or path.stem)


def _docx(path: Path, data: bytes) -> Converted:
    import zipfile

    from docx import Document
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    try:
        doc = Document(io.BytesIO(data))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as e:
        raise ConvertError(f"corrupt or unreadable DOCX ({type(e).__name__}: {e})") from e
    out = _Builder()
    first_heading = ""
    for block in doc.iter_inner_content():
        if isinstance(block, Table):
            for row in block.rows:
                out.add(" | ".join(cell.text.strip() for cell in row.cells))
            continue
        style = (block.style.name if block.style is not None else "") or ""
        if style.startswith("Heading") or style == "Title":
            out.section(block.text)
            first_heading = first_heading or block.text.strip()
        out.add(block.text)
    title = (doc.core_properties.title or "").strip()
    return out.build(title or first_heading or path.stem)


def chunk_provenance(text: str, sections: tuple[Section, ...], chunks: list[str]) -> list[list[str] | None]:
    """For each chunk (in document order), the labels of the sections it overlaps; None without sections.

    Chunks are found in the text in order (tokenised windows decode to the text they cover); a chunk
    not found verbatim keeps the section where the previous one ended.
    """
    if not sections:
        return [None] * len(chunks)
    out: list[list[str] | None] = []
    pos = 0
    for chunk in chunks:
        head = chunk[:200]
        at = text.find(head, max(0, pos - len(chunk)))
        start = at if at >= 0 else pos
        end = start + len(chunk)
        labels = [label for i, (offset, label) in enumerate(sections) if offset < end and _next(sections, i) > start]
        out.append(list(dict.fromkeys(labels)) or None)
        pos = end if at >= 0 else pos
    return out


def _next(sections: tuple[Section, ...], i: int) -> int:
    return sections[i + 1][0] if i + 1 < len(sections) else 1 << 62
