"""A document as ingest reads it (:class:`SourceDocument`), before any rule or stage applies to it.

The loaders (load.py) make these, the identity rules (identity.py) choose among them, and the errors
and reports (errors.py, options.py) name them (:func:`doc_name`); this module depends on none of them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from graphstrata.ingest.convert import Section


@dataclass(frozen=True)
class SourceDocument:
    source: str  # identity: path of a text file, or a corpus record's id or title (see identity.py)
    title: str
    text: str
    # (character offset, label) where a page or headed section starts: chunk provenance
    sections: tuple[Section, ...] = ()

    @property
    def id(self) -> str:
        return hashlib.sha256(f"doc:{self.source}".encode()).hexdigest()[:32]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(f"{self.title}\n{self.text}".encode()).hexdigest()


def doc_name(doc: SourceDocument) -> str:
    """How reports and errors name a document: its source, and its title when that differs."""
    return doc.source if doc.title == doc.source else f"{doc.title} ({doc.source})"
