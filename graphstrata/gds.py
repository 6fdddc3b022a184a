"""The one GDS projection helper: named in-memory graphs, reused until the stored graph changes.

Every write that changes the graph bumps ``(:GraphStrata {id:'meta'}).updated_at``; a projection
created before that instant is stale and is rebuilt on next use.

Catalogue operations (project, drop) are READ procedures in GDS and run in read transactions: with a
``neo4j://`` routing driver they go where retrieval's reads go, a cluster's secondaries, whose
in-memory catalogues are each their own (README "Clusters and Aura": one analytics secondary).
"""

from __future__ import annotations

import hashlib
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from neo4j.exceptions import ClientError

from graphstrata.cypher import query
from graphstrata.db import Database

PREFIX = "gs_"
# One lock per projection name: concurrent requests in this process wait for one rebuild instead of
# racing to drop and re-create the same graph.
_LOCKS: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)


@dataclass(frozen=True)
class Projection:
    name: str
    nodes: int
    rels: int
    reused: bool


class GDS:
    def __init__(self, db: Database, concurrency: int = 2) -> None:
        self.db = db
        self.concurrency = concurrency

    def version(self) -> str:
        return self.db.read_one("RETURN gds.version() AS v")["v"]

    def exists(self, name: str) -> bool:
        return bool(self.db.read(query("gds.graph_info"), name=name))

    def drop(self, name: str) -> None:
        self.db.read(query("gds.graph_drop"), name=name)

    @contextmanager
    def temporary(self, projection: Projection) -> Iterator[Projection]:
        """``with gds.temporary(gds.project…(…)) as p:`` — a projection for one run of an algorithm,
        dropped afterwards whatever happens (augment's stages; retrieval reuses its projections)."""
        try:
            yield projection
        finally:
            self.drop(projection.name)

    def drop_all(self) -> None:
        for row in self.db.read(query("gds.graph_list_prefix"), prefix=PREFIX):
            self.drop(row["name"])

    def project(
        self, name: str, nodes: Any, rels: Any, config: dict | None = None, *, force: bool = False
    ) -> Projection:
        """Project `nodes`/`rels` (GDS native projection maps) as PREFIX+name, reusing a fresh one."""
        params = {"nodes": nodes, "rels": rels, "config": config or {}}
        return self._ensure(name, query("gds.project_native"), force, params)

    def project_ordered(
        self, name: str, labels: list[str], types: list[str] = (), *, embedding: bool = False, force: bool = False
    ) -> Projection:
        """Nodes with `labels` (with their `embedding` if asked: then only nodes that have one) and the
        relationships of `types` among them, undirected, numbered in an order fixed by the ids (see
        gds.project_ordered): the projection for seeded algorithms whose results must not depend on the
        store's node order. The order is that of the ids' SHA-256, not of the ids: a pseudo-random
        permutation (what these algorithms assume), whatever the ids look like."""
        ids = [r["id"] for r in self.db.read(query("gds.ordered_ids"), labels=labels, embedding=embedding)]
        ranked = sorted((i for i in ids if i is not None), key=lambda i: hashlib.sha256(i.encode()).digest())
        params = {
            "labels": labels,
            "types": list(types),
            "embedding": embedding,
            "rank": {i: n for n, i in enumerate(ranked)},
        }
        return self._ensure(name, query("gds.project_ordered"), force, params)

    def project_cypher(self, name: str, statement: str, *, force: bool = False, **params: Any) -> Projection:
        """A Cypher-aggregation projection (`statement` RETURNs gds.graph.project($name, …)), reused while fresh."""
        return self._ensure(name, statement, force, params)

    def _ensure(self, name: str, statement: str, force: bool, params: dict[str, Any]) -> Projection:
        """The projection `name`: reused unless stale (the graph changed since) or `force`d, else rebuilt."""
        full = name if name.startswith(PREFIX) else PREFIX + name
        with _LOCKS[full]:
            info = self.db.read(query("gds.graph_info"), name=full)
            if info and not force and not info[0]["stale"]:
                return Projection(full, info[0]["nodes"], info[0]["rels"], reused=True)
            if info:
                self.drop(full)
            try:
                row = self.db.read(statement, name=full, **params)[0]
            except ClientError as e:  # another process built it between our check and our call
                if "already exists" not in str(e):
                    raise
                info = self.db.read(query("gds.graph_info"), name=full)
                return Projection(full, info[0]["nodes"], info[0]["rels"], reused=True)
            return Projection(full, row["nodes"], row["rels"], reused=False)

    def params(self, **extra: Any) -> dict[str, Any]:
        """Algorithm configuration with the server-appropriate concurrency."""
        return {"concurrency": self.concurrency, **extra}
