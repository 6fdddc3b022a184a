"""Database-free algorithmic core of SG-RAG (exact retrieval by path-dominance subgraph matching).

Paper: "Structure Guided Retrieval-Augmented Generation for Factual Queries" (SG-RAG), §3–4 and
Appendices B–E, L, M.  Each step is a small module of pure functions over in-memory graphs:

========================  =================================================================
``query_graph``           data model: :class:`QueryGraph` (``UNK`` nodes), :class:`DataGraph`,
                          :class:`DataPath`, :class:`Hop`, :class:`Star`, :func:`enumerate_paths`
``decompose``             cost-aware path decomposition (Algorithm 4, App. E)
``completion``            label completion of unknown nodes (Algorithms 5–6, App. E)
``dominance``             exact path/star containment check; dominance comparison (§4.2–4.3)
``gat``                   star-subgraph GAT + hinge dominance loss in numpy (App. C)
``train``                 its training: substructure lattices, Algorithm 2's loop (App. C)
``embedder``              the trained model at query time: o(v), o(p_q), per-row wildcard filter (§4.2–4.3)
``model``                 training on corpus stars, pruning power, (de)serialisation of ``M`` (§4.2, App. C)
``path_index``            index over path labels and dominance embeddings (Eq. 4, App. L)
``assemble``              conflict-free assembly (Algorithm 8) and the 1-hop fallback
``match``                 the driver: :func:`match_query` (Algorithm 7, Algorithm 1 l. 9–24)
========================  =================================================================

The Neo4j layer fetches a candidate subgraph with Cypher, builds a :class:`DataGraph` and calls
:func:`match_query` (optionally with a prebuilt :class:`PathIndex` over stored embeddings).
"""

from graphstrata.algorithms.sgrag.assemble import (
    SubgraphMatch,
    assemble,
    assemble_cartesian,
    fallback_anchors,
    one_hop_subgraph,
)
from graphstrata.algorithms.sgrag.completion import candidate_labels, completions, n_completions
from graphstrata.algorithms.sgrag.decompose import (
    Decomposition,
    QueryPath,
    candidate_query_paths,
    decompose,
    path_weight,
    plan_key,
    query_hops,
    simple_query_paths,
)
from graphstrata.algorithms.sgrag.dominance import dominance_mask, dominates, path_contained, star_contained
from graphstrata.algorithms.sgrag.embedder import DominanceEmbedder
from graphstrata.algorithms.sgrag.gat import HashingLabelEncoder, LabelEncoder, StarGAT, mapping_encoder
from graphstrata.algorithms.sgrag.match import (
    MatchResult,
    PathStats,
    build_path_index,
    match_query,
)
from graphstrata.algorithms.sgrag.model import DominanceConfig, FitReport, fit_dominance, from_record, to_record
from graphstrata.algorithms.sgrag.path_index import PathIndex
from graphstrata.algorithms.sgrag.query_graph import (
    DataGraph,
    DataPath,
    Edge,
    Hop,
    QueryGraph,
    Star,
    enumerate_paths,
    hop_compatible,
    is_unknown_label,
)
from graphstrata.algorithms.sgrag.train import (
    TrainReport,
    dominance_violations,
    negative_pairs,
    substructure_pairs,
    train_dominance,
)

__all__ = [
    "DataGraph",
    "DataPath",
    "Decomposition",
    "DominanceConfig",
    "DominanceEmbedder",
    "Edge",
    "FitReport",
    "HashingLabelEncoder",
    "Hop",
    "LabelEncoder",
    "MatchResult",
    "PathIndex",
    "PathStats",
    "QueryGraph",
    "QueryPath",
    "Star",
    "StarGAT",
    "SubgraphMatch",
    "TrainReport",
    "assemble",
    "assemble_cartesian",
    "build_path_index",
    "candidate_labels",
    "candidate_query_paths",
    "completions",
    "decompose",
    "dominance_mask",
    "dominance_violations",
    "dominates",
    "enumerate_paths",
    "fallback_anchors",
    "fit_dominance",
    "from_record",
    "hop_compatible",
    "is_unknown_label",
    "mapping_encoder",
    "match_query",
    "n_completions",
    "negative_pairs",
    "one_hop_subgraph",
    "path_contained",
    "path_weight",
    "plan_key",
    "query_hops",
    "simple_query_paths",
    "star_contained",
    "substructure_pairs",
    "to_record",
    "train_dominance",
]
