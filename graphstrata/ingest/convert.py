"""PDF, HTML and DOCX to text, keeping where each part came from (page numbers, headings).

Converters: pypdf (pure Python, PDF text layers), BeautifulSoup with the standard library's HTML
parser, python-docx. Each returns the text and its *sections*: ``(character offset, label)`` pairs
in text order — ``p. 3`` for a PDF page, the heading's text for HTML and DOCX — from which every
chunk gets the labels of the sections it overlaps (``Chunk.provenance``).

Anything that cannot give text raises :class:`~graphstrata.ingest.load.LoadError` naming the file,
before anything is written: a corrupt file, an encrypted PDF, a PDF without a text layer (scanned
pages need OCR first), a document with no text at all.

Hostile files get the same clear error, within bounded time and memory (docs/limits.md): a PDF whose
streams inflate past pypdf's limits, a DOCX whose XML is malformed or declares entities, a DOCX whose
zip members would unpack to more than :data:`DOCX_MAX_UNPACKED` bytes (or at a ratio no document
needs), text longer than the caller's byte limit (conversion stops there), and any conversion that
takes longer than its deadline (``CONVERT_SECONDS``).
"""

from __future__ import annotations

import io
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

CONVERTED_SUFFIXES = {".pdf", ".html", ".htm", ".xhtml", ".docx"}
Section = tuple[int, str]
#: Seconds a conversion may take: a server stops converting a file its client may have given up on.
CONVERT_SECONDS = 60.0
#: Bytes a DOCX's zip members may unpack to in all (its XML, styles and media), read with this cap.
DOCX_MAX_UNPACKED = 128 * 1024 * 1024
#: Largest ratio of unpacked to packed size of a member over 1 MiB: XML deflates ~5-20x; a zip bomb ~1000x.
DOCX_MAX_RATIO = 200


@dataclass(frozen=True)
class Converted:
    title: str
    text: str
    sections: tuple[Section, ...] = field(default_factory=tuple)


class ConvertError(ValueError):
    """Why a file gives no text (the loader adds the file's name)."""


def convert(path: Path, data: bytes, max_text_bytes: int | None = None, seconds: float = CONVERT_SECONDS) -> Converted:
    """The text of a PDF, HTML or DOCX file's bytes; ConvertError when there is none to be had, when
    its text is over ``max_text_bytes`` (UTF-8) or when converting takes over ``seconds``."""
    suffix = path.suffix.lower()
    out_ = _Builder(max_text_bytes, time.monotonic() + seconds, seconds)
    if suffix == ".pdf":
        out = _pdf(path, data, out_)
    elif suffix == ".docx":
        out = _docx(path, data, out_)
    else:
        out = _html(path, data, out_)
    if not out.text.strip():
        raise ConvertError("no text in it")
    return out


class _Builder:
    """Text assembled block by block, remembering where each section starts; it refuses text over
    its byte limit as it grows (so a small file holding a huge text is never held whole) and work
    past its deadline (:meth:`check`, called by the converters' loops)."""

    def __init__(self, max_bytes: int | None = None, deadline: float = float("inf"), seconds: float = 0.0) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.bytes = 0
        self.sections: list[Section] = []
        self._label: str | None = None
        self.max_bytes = max_bytes
        self.deadline = deadline
        self.seconds = seconds

    def check(self) -> None:
        if time.monotonic() > self.deadline:
            raise ConvertError(f"conversion took over {self.seconds:g} s (a file this complex is refused)")

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
        self.bytes += len(block.encode("utf-8", "surrogatepass")) + 2
        if self.max_bytes is not None and self.bytes > self.max_bytes:
            raise ConvertError(
                f"its text is over the limit of {self.max_bytes} bytes (GRAPHSTRATA_MAX_DOCUMENT_BYTES; "
                "the limit applies to the extracted text, not only the file)"
            )

    def build(self, title: str) -> Converted:
        return Converted(title=" ".join(title.split()), text="".join(self.parts), sections=tuple(self.sections))


def _pdf(path: Path, data: bytes, out: _Builder) -> Converted:
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError, PdfReadError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ConvertError("encrypted PDF (it needs a password); decrypt it first")
        for number, page in enumerate(reader.pages, 1):
            out.check()
            text = page.extract_text() or ""
            if text.strip():
                out.section(f"p. {number}")
                out.add(text)
        meta = reader.metadata
        title = (meta.title if meta is not None else None) or ""
    except ConvertError:
        raise
    except LimitReachedError as e:  # a decompression bomb: pypdf stops inflating at its output limits
        raise ConvertError(f"PDF refused: a stream inflates past the converter's limits ({e})") from e
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError, OSError, RecursionError) as e:
        raise ConvertError(f"corrupt or unreadable PDF ({type(e).__name__}: {e})") from e
    if not out.parts:
        pages = len(reader.pages)
        raise ConvertError(f"no text layer in its {pages} page(s) (a scanned or image-only PDF needs OCR first)")
    return out.build(title.strip() or path.stem)


def _html(path: Path, data: bytes, out: _Builder) -> Converted:
    from graphstrata.ingest.convert_html import html_blocks

    title, blocks = html_blocks(data, out.check)
    first_heading = ""
    for text, heading in blocks:
        if heading:
            out.section(text)
            first_heading = first_heading or text
        out.add(text)
    return out.build(title or first_heading or path.stem)


def _docx_members(data: bytes) -> None:
    """Refuse a DOCX package that would unpack to more than DOCX_MAX_UNPACKED bytes, or whose XML
    declares a DTD or entities (WordprocessingML never does; "billion laughs" does), before python-docx
    reads it: declared sizes and ratios first, then every member read in pieces against the same cap
    (a member inflating past its declared size stops there)."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as e:
        raise ConvertError(f"corrupt or unreadable DOCX ({type(e).__name__}: {e})") from e
    declared = 0
    for info in infos:
        declared += info.file_size
        if info.file_size > 1 << 20 and info.file_size > DOCX_MAX_RATIO * max(1, info.compress_size):
            raise ConvertError(
                f"DOCX refused: member {info.filename!r} unpacks {info.file_size} bytes from "
                f"{info.compress_size} (a zip bomb; a document's parts deflate at most ~{DOCX_MAX_RATIO}x)"
            )
        if declared > DOCX_MAX_UNPACKED:
            raise ConvertError(f"DOCX refused: its parts unpack to over {DOCX_MAX_UNPACKED} bytes")
    unpacked = 0
    try:
        for info in infos:
            with zf.open(info) as member:
                tail = b""
                while piece := member.read(1 << 20):
                    unpacked += len(piece)
                    if unpacked > DOCX_MAX_UNPACKED:
                        raise ConvertError(f"DOCX refused: its parts unpack to over {DOCX_MAX_UNPACKED} bytes")
                    window = tail + piece
                    if info.filename.endswith((".xml", ".rels")) and (b"<!DOCTYPE" in window or b"<!ENTITY" in window):
                        raise ConvertError(f"DOCX refused: {info.filename!r} declares a DTD or entities")
                    tail = piece[-16:]
    except ConvertError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, ValueError, OSError, EOFError) as e:
        raise ConvertError(f"corrupt or unreadable DOCX ({type(e).__name__}: {e})") from e


def _docx(path: Path, data: bytes, out: _Builder) -> Converted:
    from docx import Document
    from docx.opc.exceptions import OpcError
    from docx.table import Table
    from lxml.etree import LxmlError

    _docx_members(data)
    try:
        doc = Document(io.BytesIO(data))
        first_heading = ""
        for block in doc.iter_inner_content():
            out.check()
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
    except ConvertError:
        raise
    except LxmlError as e:  # XMLSyntaxError: malformed XML, or an entity expansion libxml2 stopped
        raise ConvertError(f"DOCX with malformed XML ({type(e).__name__}: {e})") from e
    except (OpcError, zipfile.BadZipFile, KeyError, ValueError, TypeError, AttributeError, RecursionError) as e:
        raise ConvertError(f"corrupt or unreadable DOCX ({type(e).__name__}: {e})") from e
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
