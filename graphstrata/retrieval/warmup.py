"""Preparing the PPR methods' projections ahead of the first question.

A module of its own (not in :mod:`graphstrata.retrieval.base`): it imports two methods, and every
method imports base, so base importing them back would make a cycle.
"""

from __future__ import annotations

from graphstrata.db import Database


def warm(db: Database, concurrency: int = 2) -> None:
    """Build the projections the PPR methods walk (NodeRAG's heterograph, HippoRAG's passage graph)
    and check the graph's indexes (:func:`graphstrata.schema.graph_indexes`) now — after augment, at
    server start — so that the first question does not."""
    from graphstrata.retrieval import hipporag, noderag
    from graphstrata.schema import graph_indexes
    from graphstrata.walkgraph import graph_version

    graph_indexes(db, graph_version(db))
    noderag.warm(db, concurrency)
    hipporag.warm(db, concurrency)
