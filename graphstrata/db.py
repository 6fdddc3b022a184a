"""The one way graphstrata talks to Neo4j: a driver wrapper with reads, batched UNWIND writes and
all-or-nothing transactions. Every query is parameterised; query text comes from `graphstrata/cypher/`."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from neo4j import READ_ACCESS, Bookmarks, Driver, GraphDatabase, ManagedTransaction, Query, Record
from neo4j.exceptions import AuthError, DriverError, Neo4jError, ServiceUnavailable

from graphstrata import cypher, limits
from graphstrata.config import Settings, get_settings

T = TypeVar("T")
log = logging.getLogger("graphstrata.db")
_retries = threading.local()


def transient_retries() -> int:
    """Write transactions this thread has run again after a transient error (a deadlock between
    concurrent writers, a database briefly unavailable): a caller counts them around its work, as
    augment does per stage (``notes["transaction_retries"]``)."""
    return getattr(_retries, "count", 0)


DEFAULT_BATCH = 1000


class ConnectionError_(RuntimeError):
    """Neo4j cannot be reached or refuses our credentials."""


class TransactionTooLarge(RuntimeError):
    """Neo4j refused a transaction for exceeding its per-transaction memory limit
    (``db.memory.transaction.max``). Not retried: the same work would exceed it again."""


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> bool:
    """Whether ``Record.data()`` would return ``value`` unchanged: no node, relationship or path in it
    (those it turns into maps and tuples). Lists of scalars, embeddings above all, are checked at C
    speed: ``data()`` visits each element through a chain of isinstance checks."""
    t = type(value)
    if t in _SCALARS:
        return True
    if t is list:
        return _SCALARS.issuperset(map(type, value)) or all(_plain(x) for x in value)
    if t is dict:
        return all(_plain(x) for x in value.values())
    return False  # graph types (and temporal or spatial values, which data() keeps: it decides)


def record_dict(record: Record) -> dict[str, Any]:
    """``record.data()``, without its walk over every nested value when nothing would change."""
    values = record.values()
    if all(_plain(v) for v in values):
        return dict(zip(record.keys(), values, strict=True))
    return record.data()


def is_transaction_memory_limit(error: BaseException) -> bool:
    """The per-transaction cap, as opposed to the shared pool (``dbms.memory.transaction.total.max``),
    which is genuinely transient: both come as ``MemoryPoolOutOfMemoryError``; the message names the setting."""
    return (
        isinstance(error, Neo4jError)
        and "MemoryPoolOutOfMemoryError" in (error.code or "")
        and "db.memory.transaction.max" in (error.message or "")
    )


def is_bookmark_ahead(error: BaseException) -> bool:
    """The server never reached the transaction a bookmark names (its store is older than the
    connection's last write): ``Neo.TransientError.Transaction.BookmarkTimeout``."""
    return isinstance(error, Neo4jError) and "BookmarkTimeout" in (error.code or "")


def connection_params(settings: Settings) -> tuple[str, tuple[str, str]]:
    """URI and credentials: an explicit NEO4J_URI, or the local launcher's server and password file."""
    if settings.neo4j_uri:
        if settings.neo4j_password is None:
            raise ConnectionError_("NEO4J_URI is set but NEO4J_PASSWORD is not")
        return settings.neo4j_uri, (settings.neo4j_user, settings.neo4j_password)
    from graphstrata.neo4j_local import Instance

    inst = Instance.from_settings(settings)
    password = settings.neo4j_password or inst.password()
    if password is None:
        raise ConnectionError_(
            f"No Neo4j configured: start the local server with `graphstrata neo4j start` "
            f"(instance {inst.name!r}), or set NEO4J_URI and NEO4J_PASSWORD."
        )
    return inst.bolt_uri, ("neo4j", password)


def _time_left() -> float | None:
    """The current request's deadline (:mod:`graphstrata.limits`) as a transaction timeout: refused once
    it has passed, else what is left of it, so Neo4j stops the work too; None without a deadline."""
    left = limits.remaining()
    if left is None:
        return None
    limits.check()
    return max(left, 0.001)


def _bounded(text: str) -> Query:
    """The query under the current request's deadline (:func:`_time_left`)."""
    left = _time_left()
    return Query(text) if left is None else Query(text, timeout=left)


class Rows(list):
    """A batch of rows as a query parameter. The driver formats every RUN's parameters for its debug
    log whether or not that log is on (neo4j 6.4 ``_bolt6.py``: ``" ".join(map(repr, fields))``);
    for rows of embeddings that repr cost 30% of an ingest's write time. This one is short."""

    def __repr__(self) -> str:
        return f"<{len(self)} rows>"


def batched(rows: Sequence[T] | Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = Rows()
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = Rows()
    if batch:
        yield batch


class Database:
    """A Neo4j driver bound to one database."""

    def __init__(self, uri: str, auth: tuple[str, str], database: str = "neo4j") -> None:
        self.uri = uri
        self.database = database
        # Reads see this connection's own earlier writes (causal consistency through bookmarks).
        # When the store behind the server is replaced by an older one (a restored backup), these
        # bookmarks point past it and every query would wait for a transaction that never comes:
        # such a wait starts the chain again (see _query), and `bookmark_resets` says it happened.
        self._bookmarks = GraphDatabase.bookmark_manager()
        self.bookmark_resets: list[dict[str, Any]] = []
        # Notifications (e.g. "property key does not exist" on an empty graph) are not errors here.
        self.driver: Driver = GraphDatabase.driver(
            uri, auth=auth, max_connection_pool_size=32, notifications_min_severity="OFF"
        )

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Database:
        settings = settings or get_settings()
        uri, auth = connection_params(settings)
        db = cls(uri, auth, settings.neo4j_database)
        try:
            db.driver.verify_connectivity()
        except (ServiceUnavailable, OSError) as e:
            db.close()
            hint = " Is it running? `graphstrata neo4j status`" if not settings.neo4j_uri else ""
            raise ConnectionError_(f"Neo4j at {uri} does not answer: {e}.{hint}") from e
        except AuthError as e:
            db.close()
            raise ConnectionError_(f"Neo4j at {uri} refused the credentials: {e}") from e
        return db

    def close(self) -> None:
        self.driver.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reads and single writes ----------------------------------------------------------
    def _query(self, query: str, params: dict[str, Any], routing: str) -> list[dict[str, Any]]:
        for attempt in (1, 2):
            try:
                records, _, _ = self.driver.execute_query(
                    _bounded(query),
                    params,
                    database_=self.database,
                    routing_=routing,
                    bookmark_manager_=self._bookmarks,
                )
                return [record_dict(r) for r in records]
            except Neo4jError as e:
                if attempt == 2 or not is_bookmark_ahead(e):
                    raise
                self._reset_bookmarks(e)
        raise AssertionError("unreachable")

    def _reset_bookmarks(self, error: Neo4jError) -> None:
        log.warning(
            "Neo4j has not reached this connection's last transaction (%s): the store was replaced by an "
            "older one, e.g. a restored backup; continuing from the store as it is now",
            error.code,
        )
        self._bookmarks = GraphDatabase.bookmark_manager()
        self.bookmark_resets.append(
            {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "error": f"{error.code}: {error.message}"}
        )

    def read(self, query: str, **params: Any) -> list[dict[str, Any]]:
        return self._query(query, params, "r")

    def read_rows(self, query: str, columns: Sequence[str], **params: Any) -> list[list[Any]]:
        """A bulk read of plain values (a whole layer, a walk graph): `query`'s rows, each a list of the
        values of `columns` (names the query returns), in the query's order. Neo4j sends them as one
        list value instead of one record per row, because the driver's work per record, not the
        query, was most of the time of such a read. The list is built in the server's heap: for reads
        whose rows the caller holds in memory anyway."""
        body = query.strip().rstrip(";")
        wrapped = f"CALL () {{\n{body}\n}}\nRETURN collect([{', '.join(columns)}]) AS rows"
        return self._query(wrapped, params, "r")[0]["rows"]

    def read_plain(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """A read for the hot path of a retrieval: one auto-commit statement (RUN and PULL pipelined in
        one round trip, where a managed transaction adds BEGIN and COMMIT), its rows as the driver
        decoded them. ``Record.data()`` walks every nested value again, which on rows of embeddings or
        nested maps costs more than the query; use this only for rows of plain values (ids, texts,
        numbers, lists, maps — no nodes or relationships). Same deadline and bookmarks as :meth:`read`;
        no automatic retry on a transient error (a retrieval is cheap to repeat)."""
        for attempt in (1, 2):
            try:
                with self.driver.session(
                    database=self.database, default_access_mode=READ_ACCESS, bookmark_manager=self._bookmarks
                ) as session:
                    return [dict(zip(r.keys(), r.values(), strict=True)) for r in session.run(_bounded(query), params)]
            except Neo4jError as e:
                if attempt == 2 or not is_bookmark_ahead(e):
                    raise
                self._reset_bookmarks(e)
        raise AssertionError("unreachable")

    def execute(self, query: str, params: dict[str, Any], *, write: bool = False) -> list[dict[str, Any]]:
        """:meth:`read` (or :meth:`write`, retried and counted as every write is) with the parameters as
        one dict: for callers whose parameter names are not ours to choose (the GDS client's,
        graphstrata/gds.py)."""
        if write:
            return self.write_tx(lambda tx: [record_dict(r) for r in tx.run(query, params)])
        return self._query(query, params, "r")

    def bookmarks(self) -> Bookmarks:
        """This connection's bookmarks: what another driver must wait for to see its writes (an Aura
        Graph Analytics session's remote projection, graphstrata/gds.py)."""
        return Bookmarks.from_raw_values(self._bookmarks.get_bookmarks())

    def read_one(self, query: str, **params: Any) -> dict[str, Any] | None:
        rows = self.read(query, **params)
        return rows[0] if rows else None

    def write(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """One write statement in its own transaction, retried as :meth:`write_tx` retries."""
        return self.write_tx(lambda tx: [record_dict(r) for r in tx.run(query, params)])

    def auto(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """An auto-commit (implicit) transaction: needed by `CALL { … } IN TRANSACTIONS`."""
        with self.driver.session(database=self.database) as session:
            return [record_dict(r) for r in session.run(Query(query), params)]

    def wipe(self) -> None:
        """Delete every node and relationship in batches: the relationships first, so that no batch
        holds a dense node's whole neighbourhood (tests, benchmarks and `graphstrata reset`)."""
        self.auto(cypher.query("meta.wipe_relationships"))
        self.auto(cypher.query("meta.wipe"))

    # --- transactions ---------------------------------------------------------------------
    def write_tx(self, work: Callable[[ManagedTransaction], T], max_retry_time: float = 30.0) -> T:
        """Run `work` in one write transaction: all of it commits or none.

        Retried with backoff on transient errors (deadlocks, a database briefly unavailable) for up to
        `max_retry_time` seconds, like the driver's ``execute_write`` — except the per-transaction
        memory limit, which the driver also classes as transient but which the same work would hit
        again: it raises :class:`TransactionTooLarge` at once, whether `work` or the commit hit it.
        (Hence our own loop: ``execute_write`` retries an error raised by the commit unconditionally.)
        """
        deadline = time.monotonic() + max_retry_time
        delay = 1.0
        reset = False
        while True:
            try:
                with (
                    self.driver.session(database=self.database, bookmark_manager=self._bookmarks) as session,
                    session.begin_transaction(timeout=_time_left()) as tx,
                ):
                    result = work(tx)  # a Transaction offers all that a ManagedTransaction does
                    tx.commit()
                    return result
            except (Neo4jError, DriverError) as e:
                if is_transaction_memory_limit(e):
                    raise TransactionTooLarge(getattr(e, "message", None) or str(e)) from e
                if isinstance(e, Neo4jError) and not reset and is_bookmark_ahead(e):
                    self._reset_bookmarks(e)
                    reset = True
                    continue
                wait = delay * random.uniform(0.8, 1.2)  # jitter: concurrent writers must not retry in step
                if not e.is_retryable() or time.monotonic() + wait > deadline:
                    raise
                # one line, counted: a deadlock's message spells out the whole lock cycle
                code = getattr(e, "code", None) or type(e).__name__
                log.warning("write transaction retried in %.1f s after %s", wait, code)
                _retries.count = transient_retries() + 1
                time.sleep(wait)
                delay *= 2

    def write_batches(self, query: str, rows: Sequence[dict], batch_size: int = DEFAULT_BATCH, **params: Any) -> int:
        """`UNWIND $rows` writes, one transaction per batch; for bulk data that need not be atomic."""
        n = 0
        for batch in batched(rows, batch_size):
            self.write(query, rows=batch, **params)
            n += len(batch)
        return n


def tx_write_batches(
    tx: ManagedTransaction, query: str, rows: Sequence[dict], batch_size: int = DEFAULT_BATCH, **params: Any
) -> int:
    """`UNWIND $rows` inside a caller's transaction (all batches commit together)."""
    n = 0
    for batch in batched(rows, batch_size):
        tx.run(query, rows=batch, **params).consume()
        n += len(batch)
    return n
