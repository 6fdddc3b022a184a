"""Ingest's failures, in words that say what was and was not written and what to do next."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from neo4j.exceptions import (
    ClientError,
    DriverError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from graphstrata.db import TransactionTooLarge
from graphstrata.ingest.document import SourceDocument, doc_name
from graphstrata.ingest.options import IngestReport


class ConcurrentChange(RuntimeError):
    """A document changed between planning and writing (another ingest); the batch is re-planned."""


class IngestWriteError(RuntimeError):
    """The transaction that writes (or deletes) some documents failed.

    Either Neo4j refused it before committing (:attr:`rolled_back`: the per-transaction memory limit,
    a constraint, a timeout …) and nothing of ``documents`` was written; or the outcome is unknown
    until Neo4j is back (the connection was lost, or Neo4j failed inside its commit, as on a full
    disk) and then each document is whole in the graph or absent, never in part: running the same
    ingest again completes it. ``report`` holds what this ingest committed before (whole documents).
    """

    def __init__(self, action: str, documents: list[str], cause: BaseException) -> None:
        super().__init__(action, documents, cause)
        self.action = action  # "write", "delete", or "read" (a read before the writes failed)
        self.documents = documents
        self.cause = cause
        self.report: IngestReport | None = None
        #: ids of documents of the same write group committed before it (a group split into single documents)
        self.committed: set[str] = set()

    @property
    def unavailable(self) -> bool:
        """The connection was lost (the server died or went away) rather than the write refused."""
        return isinstance(self.cause, ServiceUnavailable | SessionExpired)

    @property
    def rolled_back(self) -> bool:
        """Neo4j refused the transaction before its commit, so nothing of it was written. (A DatabaseError
        may come from inside the commit, after the transaction reached the log: then it is not known.)"""
        return self.action == "read" or isinstance(self.cause, TransactionTooLarge | ClientError | TransientError)

    def __str__(self) -> str:
        shown = ", ".join(repr(d) for d in self.documents[:5])
        names = shown + (f" and {len(self.documents) - 5} more" if len(self.documents) > 5 else "")
        noun = "document" if len(self.documents) == 1 else "documents"
        it = "it" if len(self.documents) == 1 else "each"
        what = {"delete": "could not delete", "read": "failed before writing"}.get(self.action, "could not write")
        text = f"Neo4j {what} {noun} {names}: {neo4j_reason(self.cause)}."
        if self.action == "read":
            text += f" Nothing of {'it' if len(self.documents) == 1 else 'them'} was written."
        elif self.rolled_back:
            text += " The transaction was rolled back: " + (
                "nothing was changed." if self.action == "delete" else "nothing of it was written."
            )
        else:
            why = "the connection was lost" if self.unavailable else "Neo4j failed inside the commit"
            state = "deleted or still whole" if self.action == "delete" else "whole in the graph or absent"
            text += (
                f" Neo4j did not confirm the transaction ({why}): once Neo4j is back, {it} is {state}, "
                "never in part; running the same command again completes it."
            )
        if self.report is not None and (done := self.report.documents_new + self.report.documents_replaced):
            text += f" {done} document(s) of this ingest were committed before, whole; a re-run skips them."
        if isinstance(self.cause, TransactionTooLarge):
            text += (
                " The document is too large for one transaction under Neo4j's db.memory.transaction.max: raise "
                "it (local server: `graphstrata neo4j start --conf db.memory.transaction.max=…`, or "
                "GRAPHSTRATA_NEO4J_CONF) or split the document."
            )
        elif needs_restart(self.cause):
            text += (
                " Neo4j stopped after failing to write its transaction log or store, which usually means the disk "
                "holding its data is full (its debug.log says); it refuses every transaction until it is "
                "restarted: free disk space, restart it (`graphstrata neo4j stop` and `start` for the local "
                "server), then run the same command again."
            )
        return text


def neo4j_reason(error: BaseException) -> str:
    if isinstance(error, Neo4jError):
        return f"{error.code}: {error.message}" if error.code else str(error.message or error)
    return f"{type(error).__name__}: {error}"


def needs_restart(error: BaseException) -> bool:
    """Neo4j's answer to a full disk: appending the commit to the transaction log (TransactionLogError) or
    applying it to the store (TransactionCommitFailed) fails and the database stops ("panics"), so every
    later transaction fails to start; the OS error ("No space left on device") is only in Neo4j's log."""
    code = getattr(error, "code", None) or ""
    text = str(error).lower()
    return code.endswith(("TransactionLogError", "TransactionCommitFailed")) or "needs to be restarted" in text


@contextmanager
def before_writes(docs: Sequence[SourceDocument]) -> Iterator[None]:
    """A read that plans a batch failed: nothing of the batch was written, say which documents."""
    try:
        yield
    except (Neo4jError, DriverError) as e:
        raise IngestWriteError("read", [doc_name(d) for d in docs], e) from e


__all__ = ["ConcurrentChange", "IngestWriteError", "before_writes", "doc_name", "needs_restart", "neo4j_reason"]
