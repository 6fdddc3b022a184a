"""The parameters of the augment stages, typed: ``GraphStrata.augment(**params)``,
``graphstrata augment --param name=value`` and the stages all read this one model, so a misspelt
name is an error instead of a silently ignored override."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: Cosine of name embeddings above which two entities are synonyms (HippoRAG 2 uses 0.8 with a
#: larger embedder; all-MiniLM-L6-v2 puts unrelated short names closer, so a stricter default).
SYNONYM_THRESHOLD = 0.9
DEFAULT_G = 5
DEFAULT_SUMMARY_TOKENS = 1000


class AugmentParams(BaseModel):
    """Stage parameters; the defaults are the papers' where they give one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    beta: float = Field(0.8, gt=0, le=1, description="core_chunks: KET-RAG β, the share of chunks that are core")
    knn_k: int = Field(3, ge=1, le=100, description="chunk_knn: KET-RAG's neighbours per chunk")
    k_neighbor: int = Field(5, ge=1, le=100, description="entity_similarity: DA-RAG's k-NN entity graph")
    semantic_k: int = Field(5, ge=1, le=100, description="semantic_edges: NodeRAG's neighbours per node")
    semantic_graph: Literal["knn", "hnsw"] = Field(
        "knn", description="semantic_edges: GDS KNN or NodeRAG's HNSW base layer (algorithms/hnsw.py)"
    )
    knn_exact_max_nodes: int = Field(
        20_000,
        ge=0,
        description="chunk_knn, entity_similarity, semantic_edges, entity_synonyms: exact (numpy) up to this many "
        "nodes, approximate (`knn_approximate`) beyond",
    )
    knn_approximate: Literal["ivf", "gds"] = Field(
        "ivf",
        description="the approximate search beyond knn_exact_max_nodes: `ivf` an inverted file in numpy "
        "(graphstrata/algorithms/ann.py; near-linear) or `gds` GDS KNN's NN-descent (top-k stages only)",
    )
    knn_incremental: bool = Field(
        True,
        description="chunk_knn, entity_similarity, semantic_edges: after an ingest that only added nodes, update "
        "the stored top-k layer from the new nodes' vector-index neighbours (graphstrata/augment/knn_index.py)",
    )
    knn_index_candidates: int = Field(
        20,
        ge=1,
        le=10_000,
        description="knn_incremental: each new node's nearest this many per vector index (HNSW's beam) are its "
        "candidates, and the old nodes whose lists it may enter",
    )
    knn_incremental_max_share: float = Field(
        0.1, gt=0, le=1, description="knn_incremental: a full run when more than this share of the nodes is new"
    )
    defer_share: float = Field(
        0.05,
        ge=0,
        le=1,
        description="entity_synonyms, important_entities, communities, semantic_matching, darag_chunk_edges: kept "
        "from their last full run while "
        "the chunks ingested or deleted since are at most this share of the chunks it saw "
        "(graphstrata/augment/deferral.py); 0: always run whole (`graphstrata augment --full`)",
    )
    kmeans_sample: int | None = Field(
        20_000,
        ge=2,
        description="semantic_matching: above this many S/A/H nodes, K-means' centroids are fitted on a seeded "
        "sample of this many and every node is assigned to the nearest (Lloyd's iterations over all n nodes cost "
        "n x sqrt(n)); None: every node, as the paper",
    )
    ann_cell_size: int = Field(256, ge=16, description="ivf: vectors per cell")
    ann_nprobe: int = Field(16, ge=1, description="ivf: cells each vector is compared with")
    betweenness_samples: int | None = Field(
        10, ge=1, description="important_entities: NodeRAG Algorithm 1, sampled betweenness (k = 10; None: exact)"
    )
    min_community_texts: int = Field(3, ge=1, description="communities: a community needs this many texts for an H")
    max_high_level: int = Field(5, ge=1, le=50, description="communities: high-level elements per community (LLM)")
    synonym_threshold: float = Field(
        SYNONYM_THRESHOLD, gt=0, le=1, description="entity_synonyms: cosine of name embeddings"
    )
    max_descriptions: int = Field(
        20, ge=1, le=10_000, description="entity_descriptions: an entity's descriptions embedded (most asserted first)"
    )
    darag_hub_mentions: int | None = Field(
        100,
        ge=1,
        description="darag_chunk_edges: entities mentioned in more chunks than this link no chunks (hubs make "
        "the layer quadratic in the corpus; None: every entity, as the paper)",
    )
    darag_chunk_links: int | None = Field(
        30,
        ge=1,
        description="darag_chunk_edges: a chunk pair is kept only if it is among the heaviest this many links of "
        "one of its chunks (bounds the layer to this many edges per chunk as the corpus grows; 30 measured against "
        "60 and no bound in bench/results/variants.md; None: every pair, as the paper)",
    )
    g: int = Field(DEFAULT_G, ge=2, le=100, description="summary_tree: E2GraphRAG's children per summary")
    summary_tokens: int = Field(DEFAULT_SUMMARY_TOKENS, ge=10, description="summary_tree: tokens of a summary")
    summarize_single_chunk: bool = Field(False, description="summary_tree: summarise a one-chunk document too")
