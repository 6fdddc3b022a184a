"""Load documents from .txt, .md, .json and .jsonl files, refusing anything that is not text, and
from PDF, HTML and DOCX files through their converters (graphstrata/ingest/convert.py).

A document's identity (``Document.id``) is its source: the file path for .txt/.md; for a record
of a JSON/JSONL corpus its ``id`` field, else its title — with the rules for repeated titles and
ids of :mod:`graphstrata.ingest.identity`. Its content hash (``sha256``) decides whether a
re-ingest is a no-op (same hash) or a replacement (new hash).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from graphstrata.ingest.convert import CONVERTED_SUFFIXES, ConvertError, convert
from graphstrata.ingest.document import SourceDocument
from graphstrata.ingest.identity import Candidate, resolve_identities
from graphstrata.limits import is_blank

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".text"}
JSON_SUFFIXES = {".json", ".jsonl", ".ndjson"}
SUPPORTED = TEXT_SUFFIXES | JSON_SUFFIXES | CONVERTED_SUFFIXES
DEFAULT_MAX_BYTES = 50 * 1024 * 1024


class LoadError(ValueError):
    """A file (or a record in it) that cannot be ingested; the message names it."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


def _decode(path: Path, data: bytes) -> str:
    if not data.strip():
        raise LoadError(str(path), "empty file")
    if b"\x00" in data[:65536]:
        raise LoadError(str(path), "binary data (NUL bytes), not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise LoadError(str(path), f"not UTF-8 text (byte {e.start}: {data[e.start : e.start + 1]!r})") from e
    controls = sum(1 for ch in text[:65536] if ord(ch) < 32 and ch not in "\n\r\t\f")
    if controls > 0.01 * min(len(text), 65536):
        raise LoadError(str(path), "binary data (control characters), not text")
    if is_blank(text):
        raise LoadError(str(path), "empty file (only white space)")
    return text


def _title_of_text(path: Path, text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            stripped = line.strip()
            if stripped.startswith("#"):
                return stripped.lstrip("#").strip() or path.stem
            break
    return path.stem


def _over_limit(size: int, max_bytes: int, what: str) -> str:
    return f"{what} is {size} bytes, over the limit of {max_bytes} (GRAPHSTRATA_MAX_DOCUMENT_BYTES)"


def _record(path: Path, where: str, obj: object, max_bytes: int) -> Candidate:
    if not isinstance(obj, dict):
        raise LoadError(f"{path}{where}", "expected an object with 'title' and 'text'")
    text, title, rid = obj.get("text"), obj.get("title"), obj.get("id")
    if not isinstance(text, str) or is_blank(text):
        raise LoadError(f"{path}{where}", "missing or empty 'text'")
    if (size := len(text.encode("utf-8", "surrogatepass"))) > max_bytes:
        raise LoadError(f"{path}{where}", _over_limit(size, max_bytes, "its 'text'"))
    if title is not None and not isinstance(title, str):
        raise LoadError(f"{path}{where}", "'title' must be a string")
    if rid is not None and (isinstance(rid, bool) or not isinstance(rid, str | int) or not str(rid).strip()):
        raise LoadError(f"{path}{where}", "'id' must be a non-empty string or an integer")
    title = (title or "").strip() or f"{path.stem}{where}"
    identity = str(rid).strip() if rid is not None else title
    return Candidate(SourceDocument(source=identity, title=title, text=text), rid is not None, f"{path.name}{where}")


def file_candidates(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> list[Candidate]:
    """The records of one file before the identity rules; LoadError if the file (or any record in
    it) is unusable."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED:
        raise LoadError(str(path), f"unsupported file type {suffix or '(none)'}; use {', '.join(sorted(SUPPORTED))}")
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise LoadError(str(path), _over_limit(size, max_bytes, "the file"))
        data = path.read_bytes()
    except OSError as e:
        raise LoadError(str(path), f"cannot read: {e.strerror or e}") from e
    if suffix in CONVERTED_SUFFIXES:
        try:
            c = convert(path, data, max_text_bytes=max_bytes)  # the limit is on the text it holds
        except ConvertError as e:
            raise LoadError(str(path), str(e)) from e
        doc = SourceDocument(source=str(path.resolve()), title=c.title, text=c.text, sections=c.sections)
        return [Candidate(doc, True, path.name)]
    text = _decode(path, data)
    if suffix in TEXT_SUFFIXES:
        doc = SourceDocument(source=str(path.resolve()), title=_title_of_text(path, text), text=text)
        return [Candidate(doc, True, path.name)]
    if suffix == ".json":
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise LoadError(str(path), f"invalid JSON at line {e.lineno}: {e.msg}") from e
        except RecursionError as e:  # "[" * 100_000: one bad file must not stop the others
            raise LoadError(str(path), "JSON nested too deeply") from e
        if obj == []:  # a corpus with no records is a mistake to report, not an ingest of nothing
            raise LoadError(str(path), "no records (an empty JSON array)")
        items = obj if isinstance(obj, list) else [obj]
        return [
            _record(path, f"[{i}]" if isinstance(obj, list) else "", item, max_bytes) for i, item in enumerate(items)
        ]
    docs = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise LoadError(f"{path}:{lineno}", f"invalid JSON: {e.msg}") from e
        except RecursionError as e:
            raise LoadError(f"{path}:{lineno}", "JSON nested too deeply") from e
        docs.append(_record(path, f":{lineno}", obj, max_bytes))
    if not docs:
        raise LoadError(str(path), "no records")
    return docs


def load_file(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> list[SourceDocument]:
    """The documents of one file; LoadError if the file (or any record in it) is unusable."""
    return resolve_identities(file_candidates(path, max_bytes))[0]


def iter_files(paths: Iterable[str | Path]) -> Iterator[Path | LoadError]:
    """Files named, and supported files below folders named (sorted, hidden files skipped); a folder
    holding none is a LoadError (an ingest of nothing is a mistake to report)."""
    for p in map(Path, paths):
        if p.is_dir():
            found = False
            for f in sorted(p.rglob("*")):
                if f.is_file() and f.suffix.lower() in SUPPORTED and not any(s.startswith(".") for s in f.parts):
                    found = True
                    yield f
            if not found:
                yield LoadError(str(p), f"no files to ingest in this folder ({', '.join(sorted(SUPPORTED))})")
        else:
            yield p


def load_paths(
    paths: Iterable[str | Path], max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[list[SourceDocument], list[LoadError], list[str]]:
    """All documents under `paths` (identities by the rules of identity.py, over all files together),
    the files that could not be loaded (each a clear error), and the identity notes for the report."""
    candidates: list[Candidate] = []
    errors: list[LoadError] = []
    for f in iter_files(paths):
        if isinstance(f, LoadError):
            errors.append(f)
            continue
        if not f.exists():
            errors.append(LoadError(str(f), "no such file or folder"))
            continue
        try:
            candidates += file_candidates(f, max_bytes)
        except LoadError as e:
            errors.append(e)
    docs, notes = resolve_identities(candidates)
    return docs, errors, notes
