"""DA-RAG's parameters (graphstrata/retrieval/darag.py): the paper's settings where it gives them,
each choice of ours marked "ours" in its description (docs/methods.md, DA-RAG)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from graphstrata.retrieval.base import TOP_K, RetrieverParams
from graphstrata.retrieval.darag_layers import Layer


class DARAGParams(RetrieverParams):
    top_k: int | None = Field(None, ge=1, le=1000, description=f"{TOP_K} (default: no cap)")
    chunk_k: int = Field(
        10,
        ge=1,
        le=200,
        description="chunks of H_C kept as text units (most query-similar first); also the size of the "
        "fallback chunk community when the coarse search range holds no k-truss (ours)",
    )
    budget: int = Field(4800, ge=1, description="token budget of the context (Table 4: max_token_for_context 4800)")
    report_budget: int | None = Field(
        None,
        ge=1,
        description="budget C_b of the greedy community packing, §5.1; None: 2/3 of `budget`, the ratio "
        "of Table 4 (max_token_for_community_report 3200 of max_token_for_context 4800), when a model wrote "
        "the reports; 1/3 when every report is the extractive rendering (ours); capped by `budget`. "
        "The chunks of H_C fill what the packed reports leave",
    )
    k_min: int = Field(3, ge=3, le=50, description="smallest k of the candidate communities {H^k}, §5.1 (paper: 3)")
    k_max: int = Field(
        6,
        ge=3,
        le=50,
        description="largest k of the candidate communities {H^k}, §5.1 (not given in the paper; 6 gives "
        "<= 8 LLM calls per query, cf. the 8.3 calls of §6.2)",
    )
    coarse_k: int | None = Field(
        None,
        ge=3,
        le=50,
        description="k of the chunk community H_C (§4 coarse retrieval); None: the k in k_min..k_max whose "
        "Q-Peel community has the highest QRScore (ours)",
    )
    coarse_candidates: int | None = Field(
        50,
        ge=2,
        description="coarse EACS search range (ours: the paper searches all of L_C, §4): the N chunks most similar "
        "to the query (text embedding) and their neighbours in L_C, at most `coarse_range` chunks, so a question's "
        "work is bounded by the question, not the corpus; None: all of L_C, as the paper",
    )
    coarse_range: int = Field(
        1000,
        ge=2,
        description="most chunks in the coarse search range (the nearest to the query kept; ours)",
    )
    coarse_edges: int | None = Field(
        10_000,
        ge=1,
        description="most chunk-layer edges in the coarse search range: the chunks farthest from the query are "
        "dropped until it fits (ours: a range bounded in chunks alone can hold a dense layer's ~250k edges, "
        "whose truss decomposition takes seconds per question; 10,000 measured against 20,000 and 5,000 in "
        "bench/results/variants.md); None: no bound",
    )
    coarse_anchors: int = Field(
        5,
        ge=0,
        le=200,
        description="H_C must hold one of the N chunks most similar to the query (text embedding), the query nodes of "
        "community search (ours: the paper states none; on a sparse layer the best-QRScore k-truss was otherwise "
        "about something else); 0: any community",
    )
    fill: bool = Field(
        True,
        description="the budget H_C's chunks and the packed reports leave is filled with the next chunks of the "
        "search range most similar to the query (ours: the paper's context is a full budget, Table 4)",
    )
    chunk_attribute: Literal["description", "text"] = Field(
        "description",
        description="the chunk attribute of L_C in the coarse EACS: `description` is the embedding of the chunk's "
        "title + description (§4.1; augment stage darag_chunk_attributes; a chunk without one uses its text's), "
        "`text` the embedding of its text",
    )
    k_neighbor: int = Field(
        5,
        ge=1,
        le=100,
        description="similarity layer L_S: each entity's k_neighbor most similar entities (§4.1, §6.3, B.1: 5); "
        "at most the k the layer was built with (augment stage entity_similarity, k_neighbor=5)",
    )
    layers: list[Layer] = Field(
        ["kg", "similarity"],
        min_length=1,
        description="fine layers searched (§4: L_KG and L_S; ['kg'] is the ablation 'w/o L_S' of §6.3)",
    )
    use_llm: bool = Field(
        True,
        description="score and report the candidates with the configured LLM (§5.1); false, or no LLM "
        "configured: QRScore ranks them and the extractive rendering is the report",
    )
    layout: Literal["chunks_first", "reports_first"] = Field(
        "chunks_first",
        description="order of the context (the paper gives none): the chunks of H_C, then the packed community "
        "reports, or the reports first (ours; both fill the same budget the same way)",
    )
    report_words: int = Field(120, ge=10, le=1000, description="length asked of each LLM community report (ours)")

    @model_validator(mode="after")
    def _check_k(self) -> DARAGParams:
        if self.k_max < self.k_min:
            raise ValueError(f"k_max ({self.k_max}) must be >= k_min ({self.k_min})")
        return self
