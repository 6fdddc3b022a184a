"""graphstrata: one layered knowledge graph in Neo4j, five graph-RAG retrieval methods over it.

from graphstrata import GraphStrata
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["GraphStrata", "__version__"]

if TYPE_CHECKING:
    from graphstrata.client import GraphStrata


def __getattr__(name: str) -> Any:  # lazy: `import graphstrata` stays cheap for the CLI
    if name == "GraphStrata":
        from graphstrata.client import GraphStrata

        return GraphStrata
    raise AttributeError(name)
