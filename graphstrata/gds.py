"""The one GDS helper: graphstrata runs GDS through the official ``graphdatascience`` client.

``GDS(db, settings).client`` is the client's ``GraphDataScience`` object; projections, memory
estimates, the catalogue (listing, drops) and every algorithm run go through it. Reads and writes of
graphstrata's own data stay Cypher (``graphstrata/cypher/``). Two backends (``GRAPHSTRATA_GDS_BACKEND``):

- ``plugin`` (default): the GDS plugin of the Neo4j server. The client speaks Bolt through
  graphstrata's own :class:`~graphstrata.db.Database` (:func:`_plugin_client`): the same driver and
  bookmarks, the request's deadline, and access modes by what a procedure does — GDS declares its
  catalogue, estimate and stream procedures READ, so they run in read transactions (with a
  ``neo4j://`` routing driver they go where retrieval's reads go, a cluster's secondaries, whose
  in-memory catalogues are each their own: docs/configuration.md "Clusters and Aura"); only ``.write`` procedures
  run in write transactions.
- ``aura_sessions``: an Aura Graph Analytics session of the client's ``GdsSessions``
  (:func:`_session_client`), for a database without the plugin (AuraDB). Projections are the
  client's remote projections, which run a Cypher query on the database and stream its rows to the
  session; algorithms run in the session. graphstrata streams every result back and writes it with
  its own Cypher, on both backends: what it writes is derived from the streams (cosines, hashed
  community ids, top-share flags, deduplicated pairs), not the raw values GDS's write procedures
  would store.

Projections are named in-memory graphs (prefix ``gs_``), reused until the stored graph changes:
every write that changes the graph bumps ``(:GraphStrata {id:'meta'}).updated_at``, and a
projection created before that instant is stale and rebuilt on next use. Before building a
projection of at least ``GRAPHSTRATA_GDS_ESTIMATE_MIN_NODES`` nodes, the client's memory estimate is
compared with the memory available (the server's available heap, capped by
``GRAPHSTRATA_GDS_MAX_MEMORY``): :class:`ProjectionTooLarge` then, instead of the server running out
of heap half-way. (GDS guards its native projections itself; a Cypher projection, which the
reproducible stages use, it cannot estimate, so the estimate is that of the native projection of the
same labels, types and properties: an upper bound.)

A GDS node id in graphstrata's projections — native, Cypher, or a session's remote ones — is the
database's ``id()`` of the node: :meth:`GDS.resolve` reads streamed rows back by it.
"""

from __future__ import annotations

import hashlib
import re
import threading
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from neo4j.exceptions import ClientError

from graphstrata.config import Settings, get_settings
from graphstrata.cypher import query
from graphstrata.db import Database, batched

PREFIX = "gs_"
#: GDS's memory estimate wants at least one relationship projection: a type no relationship has.
NO_RELATIONSHIPS = {"none": {"type": "GS_NO_RELATIONSHIPS"}}
#: rows of streamed results read back per query (:meth:`GDS.resolve`)
RESOLVE_BATCH = 10_000
# One lock per projection name: concurrent requests in this process wait for one rebuild instead of
# racing to drop and re-create the same graph.
_LOCKS: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
# One client per Database and backend (the plugin's costs a version check, a session's a session), made on
# first use.
_CLIENTS: weakref.WeakKeyDictionary[Database, dict[str, Any]] = weakref.WeakKeyDictionary()
_CLIENTS_LOCK = threading.Lock()
# A GDS procedure that writes to the database: ``gds.<algorithm>.write``, ``gds.graph.nodeProperties.write`` …
_WRITE_PROCEDURE = re.compile(r"\bgds\.[\w.]*\.write\b")
# An algorithm's stream as the client calls it, with no YIELD: ``CALL gds.kcore.stream($graph_name, $config)``
_STREAM_CALL = re.compile(r"\s*CALL\s+(gds\.[\w.]+\.stream)\s*\(\s*\$\w+\s*,\s*\$\w+\s*\)\s*")


class GDSError(RuntimeError):
    """GDS cannot do what was asked, for a reason the message gives."""


class ProjectionTooLarge(GDSError):
    """A projection would need more memory than is available."""


class NotOnAuraSessions(GDSError):
    """graphstrata cannot run this on an Aura Graph Analytics session."""


@dataclass(frozen=True)
class Projection:
    name: str
    nodes: int
    rels: int
    reused: bool
    #: the client's Graph object, for its algorithm endpoints: ``gds.client.page_rank.stream(p.graph, …)``
    graph: Any = field(default=None, compare=False, repr=False)


class GDS:
    def __init__(self, db: Database, settings: Settings | None = None) -> None:
        self.db = db
        self.settings = settings or get_settings()
        self.settings.check_gds_backend()
        self.concurrency = self.settings.gds_concurrency
        self.remote = self.settings.gds_backend == "aura_sessions"

    @property
    def client(self) -> Any:
        """The ``graphdatascience`` client (``GraphDataScience``, or ``AuraGraphDataScience`` for a session)."""
        with _CLIENTS_LOCK:
            clients = _CLIENTS.setdefault(self.db, {})
            if self._key not in clients:
                clients[self._key] = _session_client(self.settings) if self.remote else _plugin_client(self.db)
            return clients[self._key]

    @property
    def _key(self) -> str:
        return f"aura_sessions:{self.settings.aura_session_name}" if self.remote else "plugin"

    def version(self) -> str:
        """The GDS plugin's version (a session has none to ask for)."""
        if self.remote:
            raise NotOnAuraSessions("an Aura Graph Analytics session reports no GDS version")
        return str(self.client.server_version())

    def exists(self, name: str) -> bool:
        return bool(self.client.graph.exists(name))

    def drop(self, name: str) -> None:
        self.client.graph.drop(name, fail_if_missing=False)

    @contextmanager
    def temporary(self, projection: Projection) -> Iterator[Projection]:
        """``with gds.temporary(gds.project…(…)) as p:`` — a projection for one run of an algorithm,
        dropped afterwards whatever happens (augment's stages; retrieval reuses its projections)."""
        try:
            yield projection
        finally:
            self.drop(projection.name)

    def drop_all(self) -> None:
        """Drop graphstrata's projections. On Aura sessions, those of the session this process has
        open: a session is not started only to find it empty (augment's projections are temporary)."""
        if self.remote and self._key not in _CLIENTS.get(self.db, {}):
            return
        for info in self.client.graph.list():
            if info.graph_name.startswith(PREFIX):
                self.drop(info.graph_name)

    # --- projections --------------------------------------------------------------------------
    def project(self, name: str, nodes: Any, rels: Any, *, force: bool = False) -> Projection:
        """A native projection of `nodes`/`rels` (GDS node and relationship projections: a label, a
        list, or a map) as PREFIX+name, reused while fresh."""
        if self.remote:
            labels, types, single, undirected = _remote_native(_full(name), nodes, rels)
            statement, params = query("gds.project_native_remote"), {"labels": labels, "types": types, "single": single}
            return self._ensure(name, force, lambda full: self._project_remote(full, statement, params, undirected))

        def build(full: str) -> Any:
            self._check_memory(full, None, lambda: self.client.graph.project.estimate(nodes, rels))
            return self.client.graph.project.native(full, nodes, rels)

        return self._ensure(name, force, build)

    def project_ordered(
        self,
        name: str,
        labels: list[str],
        types: Sequence[str] = (),
        *,
        embedding: bool = False,
        force: bool = False,
        limit: int | None = None,
    ) -> Projection:
        """Nodes with `labels` (with their `embedding` if asked: then only nodes that have one) and the
        relationships of `types` among them, undirected, numbered in an order fixed by the ids (see
        gds.project_ordered): the projection for seeded algorithms whose results must not depend on the
        store's node order. The order is that of the ids' SHA-256, not of the ids: a pseudo-random
        permutation (what these algorithms assume), whatever the ids look like.

        A Cypher projection, through the client's ``graph.project.cypher``: a native projection (the
        client's ``graph.project.native``) numbers nodes in store order, which cannot be chosen.

        ``limit``: only the first ``limit`` nodes of that order (and the relationships among them) — a
        seeded uniform sample of the nodes, the same one on every run over the same ids."""
        ids = [r[0] for r in self.db.read_rows(query("gds.ordered_ids"), ["id"], labels=labels, embedding=embedding)]
        ranked = sorted((i for i in ids if i is not None), key=lambda i: hashlib.sha256(i.encode()).digest())
        ranked = ranked[:limit] if limit is not None else ranked
        if not ranked:  # a Cypher projection of no rows aggregates to null, which GDS cannot load: no graph
            self.drop(_full(name))
            return Projection(_full(name), 0, 0, reused=False)
        params = {
            "labels": labels,
            "types": list(types),
            "embedding": embedding,
            "rank": {i: n for n, i in enumerate(ranked)},
        }
        if self.remote:
            statement, undirected = query("gds.project_ordered_remote"), ["REL"] if types else None
            return self._ensure(name, force, lambda full: self._project_remote(full, statement, params, undirected))

        def estimate() -> Any:  # that of the native projection of the same nodes: an upper bound
            rels = {t: {"orientation": "UNDIRECTED"} for t in types} or NO_RELATIONSHIPS
            return self.client.graph.project.estimate(
                labels, rels, node_properties=["embedding"] if embedding else None
            )

        def build(full: str) -> Any:
            self._check_memory(full, len(ranked), estimate)
            return self.client.graph.project.cypher(query("gds.project_ordered"), name=full, **params)

        return self._ensure(name, force, build)

    def _project_remote(self, full: str, statement: str, params: dict, undirected: list[str] | None) -> Any:
        """A session's remote projection: `statement` runs on the database (after this connection's
        writes: its bookmarks) and streams its rows to the session."""
        self.client.set_bookmarks(self.db.bookmarks())
        return self.client.graph.project.cypher(
            full, statement, query_parameters=params, undirected_relationship_types=undirected
        )

    def _ensure(self, name: str, force: bool, build: Callable[[str], Any]) -> Projection:
        """The projection `name`: reused unless stale (the graph changed since) or `force`d, else made
        with ``build(full_name)`` (which returns the client's (graph, result) pair)."""
        full = _full(name)
        with _LOCKS[full]:
            info = self._info(full)
            if info is not None and not force and not self._stale(info):
                return self._existing(full, info)
            if info is not None:
                self.drop(full)
            try:
                graph, result = build(full)
            except ClientError as e:  # another process built it between our check and our call
                if "already exists" not in str(e):
                    raise
                return self._existing(full, self._info(full))
            return Projection(full, result.node_count, result.relationship_count, reused=False, graph=graph)

    def _info(self, full: str) -> Any:
        """The projection's node and relationship counts and creation time, or None if there is none."""
        if self.remote:  # the session's catalogue, not the database's
            infos = self.client.graph.list(full)
            return infos[0] if infos else None
        row = self.db.read_one(query("gds.graph_info"), name=full)
        if row is None:
            return None
        return _Info(row["node_count"], row["relationship_count"], row["creation_time"].to_native())

    def _existing(self, full: str, info: Any) -> Projection:
        if self.remote:
            graph = self.client.graph.get(full)
        else:  # the client's get() lists the catalogue entry whole first (see _info)
            from graphdatascience.procedure_surface.cypher.catalog.graph_backend_cypher import get_graph

            graph = get_graph(full, self.client._query_runner)
        return Projection(full, info.node_count, info.relationship_count, reused=True, graph=graph)

    def _stale(self, info: Any) -> bool:
        meta = self.db.read_one(query("meta.get_meta"))
        updated = meta and meta["updated_at"]
        return bool(updated) and _utc(updated.to_native()) > _utc(info.creation_time)

    def _check_memory(self, name: str, nodes: int | None, estimate: Callable[[], Any]) -> None:
        """Raise :class:`ProjectionTooLarge` if the projection `name` (of `nodes` nodes; None: unknown,
        the estimate counts them) needs more memory than is available."""
        least = self.settings.gds_estimate_min_nodes
        if nodes is not None and nodes < least:
            return
        e = estimate()
        if e.node_count < least:
            return
        free = int(self.client.debug.sys_info().available_heap_in_bytes)
        cap = self.settings.gds_max_memory_bytes
        limit = free if cap is None else min(free, cap)
        if e.bytes_max <= limit:
            return
        source = (
            f"GRAPHSTRATA_GDS_MAX_MEMORY={self.settings.gds_max_memory}"
            if cap is not None and cap < free
            else "the Neo4j server's available heap"
        )
        raise ProjectionTooLarge(
            f"the GDS projection {name!r} ({e.node_count} nodes, {e.relationship_count} relationships) needs up "
            f"to {_size(e.bytes_max)} by GDS's estimate, but {_size(limit)} is available ({source}). Raise the "
            "server's heap (server.memory.heap.max_size; the local server: `graphstrata neo4j start --heap …` or "
            "GRAPHSTRATA_NEO4J_HEAP)" + (" or GRAPHSTRATA_GDS_MAX_MEMORY" if cap is not None else "")
        )

    # --- results ------------------------------------------------------------------------------
    def resolve(self, statement: str, returns: Sequence[str], **columns: Sequence) -> list[dict[str, Any]]:
        """Streamed results read back in the database: `columns` (a stream's columns by name, e.g.
        ``nodeId=df["nodeId"], score=df["score"]``) become ``$rows`` of `statement`, which finds each
        row's node by its GDS node id (= ``id()``) and returns the columns `returns`; in batches, in
        stream order."""
        names = list(columns)
        values = [c.tolist() if hasattr(c, "tolist") else list(c) for c in columns.values()]  # plain Python values
        rows = [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]
        out: list[dict[str, Any]] = []
        for batch in batched(rows, RESOLVE_BATCH):
            out += [dict(zip(returns, r, strict=True)) for r in self.db.read_rows(statement, returns, rows=batch)]
        return out


@dataclass(frozen=True)
class _Info:
    node_count: int
    relationship_count: int
    creation_time: datetime


def _full(name: str) -> str:
    return name if name.startswith(PREFIX) else PREFIX + name


def _utc(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _remote_native(name: str, nodes: Any, rels: Any) -> tuple[list[str], list[str], bool, list[str] | None]:
    """A native projection as a session's remote one (gds.project_native_remote): (labels, types,
    single, undirected types). Only what graphstrata's stages project natively: labels, and
    relationship types that are NATURAL or UNDIRECTED without aggregation, or all UNDIRECTED + SINGLE."""
    labels = [nodes] if isinstance(nodes, str) else nodes
    if isinstance(rels, str):
        rels = {rels: {}}
    elif isinstance(rels, list):
        rels = {t: {} for t in rels}
    confs = {t: {"type": t, "orientation": "NATURAL", "aggregation": "NONE", **c} for t, c in rels.items()}
    kinds = {(c["orientation"], c["aggregation"]) for c in confs.values()}
    plain = (
        isinstance(labels, list)
        and "*" not in labels
        and confs
        and "*" not in confs
        and all(set(c) == {"type", "orientation", "aggregation"} and c["type"] == t for t, c in confs.items())
    )
    single = kinds == {("UNDIRECTED", "SINGLE")}
    if not plain or not (single or kinds <= {("NATURAL", "NONE"), ("UNDIRECTED", "NONE")}):
        raise NotOnAuraSessions(
            f"the projection {name!r} ({nodes!r}, {rels!r}) has no remote form for Aura Graph Analytics sessions "
            "in graphstrata (labels, and relationship types NATURAL or UNDIRECTED without aggregation, or all "
            "UNDIRECTED + SINGLE); run it with GRAPHSTRATA_GDS_BACKEND=plugin"
        )
    undirected = [t for t, c in confs.items() if c["orientation"] == "UNDIRECTED"]
    return labels, list(confs), single, undirected or None


_STREAM_COLUMNS: dict[str, list[str]] = {}


def _stream_columns(db: Database, procedure: str) -> list[str]:
    """What a GDS stream procedure yields, in order (from the server's procedure listing, once)."""
    if procedure not in _STREAM_COLUMNS:
        row = db.read_one(query("gds.procedure_outputs"), name=procedure)
        if row is None:
            raise GDSError(f"the Neo4j server has no procedure {procedure}")
        _STREAM_COLUMNS[procedure] = row["names"]
    return _STREAM_COLUMNS[procedure]


def _plugin_client(db: Database) -> Any:
    """A ``GraphDataScience`` client whose Bolt traffic goes through `db` (module docstring)."""
    from graphdatascience import GraphDataScience
    from graphdatascience.query_runner.neo4j_query_runner import Neo4jQueryRunner
    from pandas import DataFrame

    class DatabaseRunner(Neo4jQueryRunner):
        """The client's query runner, with every query run by graphstrata's Database: read or write
        transaction by the procedure's own mode, not the client's choice (it sends some READ procedures,
        e.g. ``gds.graph.drop``, in write transactions, which a cluster would route to the primary)."""

        def __init__(self) -> None:
            super().__init__(db.driver, "bolt", database=db.database, show_progress=False)

        def run_cypher(self, query: str, query_type: Any = None, params: Any = None, *args: Any, **kw: Any) -> Any:
            stream = _STREAM_CALL.fullmatch(query)
            if stream:  # one list value, not a record per row: the driver's work per record was most of a stream
                names = _stream_columns(db, stream.group(1))
                rows = db.read_rows(f"{query} YIELD {', '.join(names)} RETURN *", names, **dict(params or {}))
                return DataFrame(rows, columns=names)
            rows = db.execute(query, dict(params or {}), write=bool(_WRITE_PROCEDURE.search(query)))
            return DataFrame(rows)

        run_retryable_cypher = run_cypher

    return GraphDataScience(DatabaseRunner(), arrow=False, show_progress=False)


def _session_client(settings: Settings) -> Any:
    """The client of the Aura Graph Analytics session ``GRAPHSTRATA_AURA_SESSION_NAME``, created if
    need be (it then takes minutes to start), attached to the database of `settings`."""
    from graphdatascience.session import (
        AuraAPICredentials,
        CloudLocation,
        DbmsConnectionInfo,
        GdsSessions,
        SessionMemory,
    )

    secret = settings.aura_client_secret.get_secret_value() if settings.aura_client_secret else ""
    sessions = GdsSessions(
        api_credentials=AuraAPICredentials(settings.aura_client_id or "", secret, settings.aura_project_id)
    )
    location = None
    if not settings.aura_instance_id:  # a self-managed database: the session runs where we say
        provider, _, region = (settings.aura_cloud_location or "").partition("/")
        location = CloudLocation(provider, region)
    connection = DbmsConnectionInfo(
        uri=None if settings.aura_instance_id else settings.neo4j_uri,
        username=settings.neo4j_user,
        password=settings.neo4j_password,
        database=settings.neo4j_database,
        aura_instance_id=settings.aura_instance_id,
    )
    return sessions.get_or_create(
        settings.aura_session_name,
        memory=SessionMemory.of(settings.aura_session_memory),
        db_connection=connection,
        ttl=timedelta(minutes=settings.aura_session_ttl_minutes),
        cloud_location=location,
        show_progress=False,
    )
