"""Hostile files built in memory for the tests (nothing binary is checked in): decompression and zip
bombs, entity expansion, malformed XML, deeply nested HTML."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

from docx import Document as DocxDocument


def deflated_zeros(size: int) -> bytes:
    """``size`` bytes of b"0" deflated, built in pieces (never held inflated)."""
    z = zlib.compressobj(9)
    piece = b"0" * (1 << 20)
    parts = [z.compress(piece) for _ in range(size >> 20)]
    return b"".join([*parts, z.flush()])


def pdf_bomb(inflated: int = 200 * 1024 * 1024) -> bytes:
    """A PDF 1.5 whose one page lives in an object stream of ~200 KB that inflates to ``inflated``
    bytes (past pypdf's 75 MB limit: LimitReachedError when the page is read)."""
    stream = deflated_zeros(inflated)
    body = b"%PDF-1.7\n"
    offsets = {1: len(body)}
    body += b"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
    offsets[2] = len(body)
    body += b"2 0 obj\n<< /Type /Pages /Kids [4 0 R] /Count 1 >>\nendobj\n"
    offsets[3] = len(body)
    body += b"3 0 obj\n<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length %d >>\nstream\n" % len(stream)
    body += stream + b"\nendstream\nendobj\n"
    # cross-reference stream: object 4 (the page) is object 0 of object stream 3
    entries = [(0, 0, 255), (1, offsets[1], 0), (1, offsets[2], 0), (1, offsets[3], 0), (2, 3, 0), (1, len(body), 0)]
    rows = b"".join(bytes([kind]) + struct.pack(">I", where) + bytes([index]) for kind, where, index in entries)
    xref = len(body)
    body += b"5 0 obj\n<< /Type /XRef /Size 6 /W [1 4 1] /Root 1 0 R /Length %d >>\nstream\n" % len(rows)
    body += rows + b"\nendstream\nendobj\n"
    return body + b"startxref\n%d\n%%%%EOF\n" % xref


def plain_docx(paragraphs: list[str]) -> bytes:
    doc = DocxDocument()
    for p in paragraphs:
        doc.add_paragraph(p)
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def docx_with(member: str, content: bytes | None = None, *, zeros: int = 0) -> bytes:
    """A valid DOCX with ``member`` replaced by ``content``, or by an XML comment padded with ``zeros``
    bytes of b"0" written in pieces (a zip bomb: ~1000x deflate)."""
    src = zipfile.ZipFile(io.BytesIO(plain_docx(["A harmless paragraph."])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
        for info in src.infolist():
            if info.filename != member:
                dst.writestr(info, src.read(info))
                continue
            if content is not None:
                dst.writestr(member, content)
                continue
            original = src.read(info)
            with dst.open(member, "w", force_zip64=True) as f:
                head, _, tail = original.partition(b"<w:body>")
                f.write(head + b"<w:body><!--")
                piece = b"0" * (1 << 20)
                for _ in range(zeros >> 20):
                    f.write(piece)
                f.write(b"-->" + tail)
    return out.getvalue()


BILLION_LAUGHS = b"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r>
<w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>"""

MALFORMED_XML = b"""<?xml version="1.0" encoding="UTF-8"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>open"""


def nested_html(tag: str, depth: int) -> bytes:
    """``depth`` nested ``tag`` elements, each holding a word."""
    return (f"<html><body>{''.join(f'<{tag}>w{i} ' for i in range(depth))}{f'</{tag}>' * depth}</body></html>").encode()
