"""Which input records are the same document: the identity rules of every input format.

A document's identity (``SourceDocument.source``, hashed into ``Document.id``) decides what a
re-ingest does: same identity and text is a no-op, same identity and new text replaces the stored
version. The rules, applied to everything one ingest reads (all files, or one HTTP request):

1. An explicit identity is used as given: the ``id`` field of a JSON/JSONL record, of a
   bring-your-own extractions line (else its ``source``), of an HTTP document (else its
   ``source``); the path of a .txt/.md file; ``upload:<file name>`` of an uploaded text file.
   Two records with one explicit identity are one document: the later replaces the earlier (and
   the report says so) unless their texts are equal.
2. A record without one is identified by its title. The first record with a title gets the title
   itself; each later record with the same title and a *different* text is another document,
   ``"<title> [2]"``, ``"<title> [3]"`` … in input order (stable as long as the input keeps its
   order; an edited record replaces its own version). A record repeating an earlier one's title
   and text is the same document, ingested once. A name already taken by rule 1 is skipped.

Every merge, replacement and renaming is a line of the ingest report (``identity_notes``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from graphstrata.ingest.document import SourceDocument


@dataclass(frozen=True)
class Candidate:
    """A record before the rules: ``doc.source`` holds its explicit identity, or its title when
    ``explicit`` is false; ``where`` names it in reports (``corpus.jsonl:12``, ``documents[3]``)."""

    doc: SourceDocument
    explicit: bool
    where: str


def resolve_identities(candidates: Iterable[Candidate]) -> tuple[list[SourceDocument], list[str]]:
    """The documents of `candidates` (input order) under the module's rules, and the report's notes."""
    cands = list(candidates)
    chosen: dict[str, tuple[int, SourceDocument, str]] = {}  # identity -> (input index, doc, where)
    notes: list[str] = []
    for i, c in enumerate(cands):
        if not c.explicit:
            continue
        prev = chosen.get(c.doc.source)
        if prev is not None and prev[1].sha256 == c.doc.sha256:
            notes.append(f"{c.where}: same id {c.doc.source!r} and text as {prev[2]}: ingested once")
            continue
        if prev is not None:
            notes.append(
                f"{c.where}: same id {c.doc.source!r} as {prev[2]} with another text: replaces it "
                "(an id names one document; give the records different ids to keep both)"
            )
        chosen[c.doc.source] = (i, c.doc, c.where)
    versions: dict[str, dict[str, tuple[str, str]]] = {}  # title -> sha256 -> (identity, where)
    for i, c in enumerate(cands):
        if c.explicit:
            continue
        title = c.doc.source
        seen = versions.setdefault(title, {})
        if c.doc.sha256 in seen:
            identity, where = seen[c.doc.sha256]
            notes.append(f"{c.where}: same title {title!r} and text as {where}: ingested once")
            continue
        k = len(seen) + 1
        identity = title if k == 1 else f"{title} [{k}]"
        while identity in chosen:
            k += 1
            identity = f"{title} [{k}]"
        if identity != title:
            clash = (
                f"is also the title of {next(iter(seen.values()))[1]} with another text"
                if seen
                else "is another record's id"
            )
            notes.append(
                f"{c.where}: title {title!r} {clash}: a separate document, identity {identity!r} "
                "(give records an `id` to choose identities)"
            )
        seen[c.doc.sha256] = (identity, c.where)
        chosen[identity] = (i, c.doc if identity == title else replace(c.doc, source=identity), c.where)
    ordered = sorted(chosen.values(), key=lambda x: x[0])
    return [doc for _, doc, _ in ordered], notes


__all__ = ["Candidate", "resolve_identities"]
