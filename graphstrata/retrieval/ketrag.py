"""KET-RAG retrieval ("Cost-Efficient Multi-Granular Indexing for Graph-RAG", §5.2, Algorithms 2
and 4): a skeleton channel over the knowledge graph built from core chunks, and a keyword channel
over the text-keyword bipartite graph, splitting one context budget L by the retrieval ratio lambda.

- Skeleton channel (KG-Retrieval, Algorithm 2) with lambda*L tokens: seed entities (top 10 by the
  embedding of their description where an LLM or the user wrote one, else of their name), then
  relations adjacent to the seeds (joining two seeds first) up to their share, then the sub-chunks
  of the chunks most linked to seeds and relations.
- Keyword channel (Algorithm 4, lines 2-4) with (1-lambda)*L tokens: seed keywords by similarity,
  added until their sub-chunks hold enough tokens; that candidate set ranked by cosine similarity.

`ketrag-skeleton` (lambda = 1) and `ketrag-keyword` (lambda = 0) are the paper's Skeleton-RAG and
Keyword-RAG. All chunks returned are sub-chunks, as the paper's rewired index prescribes.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from graphstrata.cypher import query
from graphstrata.retrieval.base import (
    TOP_K,
    ContextItem,
    Retrieved,
    Retriever,
    RetrieverParams,
    Subgraph,
    Timer,
    fit_items,
    hnsw_candidates,
    register,
)
from graphstrata.retrieval.linking import mentioned_entities
from graphstrata.schema import graph_indexes
from graphstrata.text.tokens import count_tokens

#: seeds are matched by their descriptions' embeddings through this index (graphs built before it: by name)
DESCRIPTION_INDEX = "entity_description_embedding"
#: seed keywords whose sub-chunks the first read asks for (each later read asks for twice as many)
KEYWORD_BATCH = 4


class KETRAGParams(RetrieverParams):
    top_k: int | None = Field(None, ge=1, le=1000, description=f"{TOP_K} (default: no cap)")
    budget: int = Field(12_000, ge=1, description="context limit L in cl100k tokens (§6.1: 12,000)")
    lam: float = Field(
        0.5,
        ge=0,
        le=1,
        description="retrieval ratio lambda: share of the budget for the skeleton channel (the authors' "
        "published context command uses 0.5; §6, Figure 4: Keyword-RAG already gains from a share of 0.2; "
        "bench/results/variants.md)",
    )
    seed_entities: int = Field(10, ge=1, le=100, description="seed entities (Algorithm 2 line 1: 10)")
    relation_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="share of the skeleton budget for entities + relations; chunks get the rest "
        "(GraphRAG local search's default text-unit proportion 0.5)",
    )
    keyword_pool: float = Field(
        2.0,
        ge=1,
        description="keywords are added until their sub-chunks hold keyword_pool x the budget L (the whole "
        "budget, not the channel's: the candidates ranked do not shrink as lambda grows)",
    )
    max_keywords: int = Field(50, ge=1, le=500, description="at most this many seed keywords")
    seed_mentions: bool = Field(
        True,
        description="also seed the skeleton with the graph entities the question names (the shared query "
        "linking), first; the paper seeds by embedding similarity alone (False; bench/results/variants.md)",
    )


@register
class KETRAGRetriever(Retriever):
    name = "ketrag"
    summary = "KET-RAG: skeleton channel (seed entities → relations → sub-chunks) + keyword channel, one budget."
    Params = KETRAGParams
    fixed_lambda: ClassVar[float | None] = None

    def _retrieve(self, question: str, p: KETRAGParams, t: Timer) -> Retrieved:
        lam = self.fixed_lambda if self.fixed_lambda is not None else p.lam
        with t.stage("embed"):
            vector = self.embed_query(question)
        skeleton_budget = round(lam * p.budget)
        # an item cap is a second context limit: split by lambda as the token budget is
        skeleton_cap = keyword_cap = None
        if p.top_k is not None:
            skeleton_cap = p.top_k if lam == 1 else round(lam * p.top_k)
            keyword_cap = p.top_k - skeleton_cap
            if skeleton_cap == 0:
                skeleton_budget = 0
        mentioned: list[str] = []
        if p.seed_mentions and skeleton_budget > 0:
            with t.stage("mentions"):
                mentioned = mentioned_entities(self.db, question, self.settings, self.llm)
        with t.stage("read"):
            ctx = self._question_context(vector, p, skeleton=skeleton_budget > 0, keywords=lam < 1, mentioned=mentioned)
        items: list[ContextItem] = []
        notes: dict[str, Any] = {"lambda": lam}
        if skeleton_budget > 0:
            with t.stage("skeleton"):
                sk, sk_notes = self._skeleton(vector, ctx, p, skeleton_budget, skeleton_cap)
            items += sk
            notes |= sk_notes
        used = sum(i.tokens for i in items)
        keyword_budget = p.budget - used
        if keyword_budget > 0 and lam < 1 and keyword_cap != 0:
            with t.stage("keyword"):
                taken = {i.node_id for i in items}
                kw, kw_notes = self._keyword(vector, ctx["keywords"], p, keyword_budget, taken, keyword_cap)
            items += kw
            notes |= kw_notes
        # The context: the text of both channels as one list by similarity to the question (line 3 of
        # Algorithm 4 ranks the keyword channel so), then the skeleton's entities and relations
        # (Algorithm 2's order): the paper concatenates the channels and is silent on the order; one
        # ranking keeps the better channel's best passages first whichever channel found them, and
        # an entity whose whole text is its name, placed first, would pull the first passage that
        # contains the name to the front when the context is de-duplicated (base.dedupe).
        graph = [i for i in items if i.label != "SubChunk"]
        text = sorted((i for i in items if i.label == "SubChunk"), key=lambda i: -(i.score or 0.0))
        items = text + graph
        return Retrieved(items, Subgraph(nodes=[i.node_id for i in items]), notes)

    def _question_context(
        self, vector: list[float], p: KETRAGParams, skeleton: bool, keywords: bool, mentioned: list[str]
    ) -> dict:
        """Seeds, their relations, the seed keywords and the graph's version, in one round trip
        (``ketrag.question_context``). Seeds are matched by description where the graph has the
        description index: a graph built before it (checked per connection and graph version,
        :func:`graphstrata.schema.graph_indexes`) matches them by name."""
        indexes = graph_indexes(self.db)

        def read(names: frozenset[str]) -> dict:
            if DESCRIPTION_INDEX in names:
                seeds = query("ketrag.seed_entities")
            else:
                seeds = query("ketrag.seed_entities_by_name")
            text = query("ketrag.question_context").replace("SEED_ENTITIES", seeds)
            (row,) = self.db.read_plain(
                text,
                skeleton=skeleton,
                k=p.seed_entities,
                candidates=hnsw_candidates(p.seed_entities),
                limit=200,
                keywords=keywords,
                keyword_k=p.max_keywords,
                keyword_candidates=hnsw_candidates(p.max_keywords),
                vector=vector,
                mentioned=mentioned,
            )
            return row

        row = read(indexes.names)
        if row["version"] != indexes.version:  # the graph changed since its indexes were checked
            fresh = graph_indexes(self.db, row["version"])
            if (DESCRIPTION_INDEX in fresh.names) != (DESCRIPTION_INDEX in indexes.names):
                row = read(fresh.names)
        return row

    def _skeleton(
        self, vector: list[float], ctx: dict, p: KETRAGParams, budget: int, cap: int | None = None
    ) -> tuple[list[ContextItem], dict]:
        seeds = ctx["seeds"]
        graph_budget = int(budget * p.relation_share)
        # under an item cap, entities + relations get relation_share of the items, the text the rest
        graph_cap = None if cap is None else int(cap * p.relation_share)
        # the seed entities' descriptions open the context (GraphRAG local search)
        out = [
            ContextItem(
                node_id=s["id"],
                label="Entity",
                text=f"{s['name']}: {s['description']}" if s["description"] else s["name"],
                score=s["score"],
                why="seed entity (named in the question)"
                if s["matched_by"] == "mention"
                else f"seed entity (embedding of its {s['matched_by']})",
            )
            for s in seeds
        ]
        out = fit_items(out, graph_budget, stop_at_overflow=True)[:graph_cap]
        used = sum(i.tokens for i in out)
        related = [
            ContextItem(
                node_id=r["id"],
                label="Relation",
                text=r["text"],
                score=float(r["score"]),
                why=f"relation adjacent to {r['seeds']} seed(s)",
            )
            for r in ctx["relations"]
        ]
        related = fit_items(related, graph_budget - used, stop_at_overflow=True)
        if graph_cap is not None:
            related = related[: graph_cap - len(out)]
        chosen = [r.node_id for r in related]
        out += related
        used += sum(i.tokens for i in related)
        subs = self.db.read_plain(
            query("ketrag.adjacent_subchunks"), ids=[s["id"] for s in seeds] + chosen, chunks=20, vector=vector
        )
        adjacent = [_subchunk_item(s, f"sub-chunk of a chunk with {s['links']} links to seeds/relations") for s in subs]
        out += fit_items(adjacent, budget - used)[: None if cap is None else cap - len(out)]
        matched = {how: sum(s["matched_by"] == how for s in seeds) for how in ("description", "name", "mention")}
        if not matched["mention"]:
            del matched["mention"]
        return out, {"seeds": [s["name"] for s in seeds], "seeds_matched_by": matched, "relations": len(chosen)}

    def _keyword(
        self,
        vector: list[float],
        keywords: list[dict],
        p: KETRAGParams,
        budget: int,
        taken: set[str],
        cap: int | None = None,
    ) -> tuple[list[ContextItem], dict]:
        pool: dict[str, None] = {}
        pool_tokens, seeds, read = 0, [], 0
        # the pool is sized by the whole budget L: keyword_pool x the channel's own share would rank
        # fewer candidates in ketrag than in Keyword-RAG alone, so that adding the skeleton channel
        # could only push its text out of the first places
        enough = p.keyword_pool * p.budget
        batch = KEYWORD_BATCH
        # Algorithm 4 line 2: add seed keywords until their sub-chunks hold enough tokens. The keywords'
        # sub-chunk lists are read in growing batches, as far as the pool needs (a few keywords at a
        # budget of 1,000): the work is the question's, not the corpus's
        while read < len(keywords) and pool_tokens < enough:
            ids = [k["id"] for k in keywords[read : read + batch]]
            read += len(ids)
            batch *= 2
            for r in self.db.read_plain(query("ketrag.keyword_subchunks"), ids=ids):
                if not r["subs"]:  # e.g. a keyword whose sub-chunks have no vector yet
                    continue
                seeds.append(r["term"])
                for s in r["subs"]:
                    if s["id"] not in pool and s["id"] not in taken:
                        pool[s["id"]] = None
                        pool_tokens += s["tokens"]
                if pool_tokens >= enough:
                    break
        rows = {r["id"]: r for r in self.db.read_plain(query("ketrag.subchunk_texts"), ids=list(pool), vector=vector)}
        found = [rows[i] for i in pool if i in rows]
        ranked = sorted(found, key=lambda s: -s["score"])  # line 3: rank the candidates by cosine
        out = fit_items([_subchunk_item(s, "sub-chunk of a seed keyword") for s in ranked], budget)[:cap]
        return out, {"seed_keywords": seeds, "keyword_candidates": len(pool), "keywords_read": read}


def _subchunk_item(s: dict, why: str) -> ContextItem:
    text = f"{s['title']}\n{s['text']}"
    return ContextItem(
        node_id=s["id"],
        label="SubChunk",
        text=text,
        score=float(s["score"]),
        why=why,
        chunk_ids=[s["chunk"]],
        doc_titles=[s["title"]] if s["title"] else [],
        tokens=count_tokens(text),
    )


class SkeletonParams(KETRAGParams):
    # lambda is fixed by the variant: listed (and validated) as what runs, not as ketrag's 0.2
    lam: float = Field(1.0, ge=1, le=1, description="fixed at 1: the skeleton channel gets the whole budget")


class KeywordParams(KETRAGParams):
    lam: float = Field(0.0, ge=0, le=0, description="fixed at 0: the keyword channel gets the whole budget")


@register
class KETRAGSkeleton(KETRAGRetriever):
    name = "ketrag-skeleton"
    summary = "KET-RAG's Skeleton-RAG: the knowledge-graph channel alone (lambda = 1)."
    Params = SkeletonParams
    fixed_lambda = 1.0
    fusion_rank = None  # a channel of ketrag, which fusion already runs


@register
class KETRAGKeyword(KETRAGRetriever):
    name = "ketrag-keyword"
    summary = "KET-RAG's Keyword-RAG: the text-keyword channel alone (lambda = 0)."
    Params = KeywordParams
    fixed_lambda = 0.0
    fusion_rank = None
