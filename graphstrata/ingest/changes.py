"""What an ingest tells the user about documents it meets again: the same text under another
identity (docs/identity.md), and unchanged text whose chunk settings changed (chunked again)."""

from __future__ import annotations

from collections.abc import Sequence

from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.ingest.document import SourceDocument
from graphstrata.ingest.errors import before_writes
from graphstrata.ingest.options import IngestOptions


def same_text_notes(db: Database, new: Sequence[SourceDocument]) -> list[str]:
    """A new document whose title and text a stored document of another identity already has is
    still a document of its own (identities differ on purpose, e.g. two editions' sources), but
    the ingest says so and how to keep one."""
    if not new:
        return []
    by_id = {d.id: d for d in new}
    with before_writes(new):
        rows = db.read(query("ingest.same_text"), rows=[{"id": d.id, "sha256": d.sha256} for d in new])
    return [
        f"{by_id[r['id']].title}: the same text as the stored document {r['source']!r} (id {r['other']}); "
        f"ingested as a second document {by_id[r['id']].source!r}; keep one with "
        f"`graphstrata delete {r['other']}` or `graphstrata delete {r['id']}`"
        for r in rows
    ]


def chunk_setting_changes(options: IngestOptions, stored: dict | None) -> str:
    """What differs between a document's stored chunk settings and this ingest's ('' when none
    does; settings a graph did not record count as the same)."""
    o = options
    now = {"chunk_size": o.chunk_size, "chunk_overlap": o.chunk_overlap, "chunking": o.chunking, "splits": o.splits}
    diff = [f"{k} {stored[k]} -> {v}" for k, v in now.items() if stored and stored.get(k) not in (None, v)]
    return ", ".join(diff)
