"""E2GraphRAG retrieval ("Streamlining Graph-based RAG", §3.2 and Algorithm 1 in Appendix A): no LLM
at query time.

1. Query entities: the question's spaCy entities and nouns, normalised exactly as at ingest
   (:func:`graphstrata.text.nlp.query_entities`), mapped to ``Term`` nodes (its own layer) by normalised
   name; names that map to nothing are ignored (§3.2: "treated as invalid"), and so are names of
   Terms mentioned in more than ``max_df_share`` (1%) of all chunks and more than ``max_chunks``
   (25) chunks (``notes["too_common"]``).
2. No entity → **global** mode: dense retrieval over the collapsed summary tree (every ``Chunk``
   and current ``Summary`` in one ranking, as RAPTOR), the ``top_k`` nearest, by similarity.
3. Graph filter (Eq. 1): the pairs of query entities within ``hops`` (h) hops of each other on the
   ``CO_OCCURS`` graph.
4. No pair → **global+occurrence**: the ``2·top_k`` nearest collapsed-tree nodes, re-ranked by
   the occurrences of the query entities (a chunk: the sum of its ``HAS_TERM`` counts; a summary:
   the sum over its children, i.e. over the chunks below it), ``top_k`` kept (Occurrence Ranking).
5. Otherwise **local**: index mapping (Eq. 2) — the chunks mentioning both entities of a pair,
   united over the pairs; while that is more than ``max_chunks`` (25, Algorithm 1 line 11) chunks,
   h is tightened by one and the mapping redone; if it empties, the last non-empty set is ranked by
   Entity-Aware Ranking (distinct query entities in the chunk, then their occurrences) and the
   ``top_k`` best kept.
6. Output as the paper formats it: ``"entity1-entity2-…: chunks"`` — each chunk once, under the
   union of the entity pairs that selected it; adjacent chunks of a document merged into one
   passage (their token overlap written once); groups ranked by entity coverage, chunks in
   document order within a group.

``notes["branch"]`` is ``local``, ``global`` or ``global+occurrence``; ``notes["local"]`` says how
the local branch ended (``direct``, ``tightened``, ``entity-aware fallback``); ``notes["h_history"]``
lists ``[h, chunks]`` per iteration. Without a summary tree (the ``summary_tree`` augment stage has
not run) global modes rank chunks only, and ``notes["tree"]`` says so.

Choices where the paper is silent or its code differs:

* The paper indexes one book, where a common noun ("the ring") still points to a few places. In a
  collection of documents a noun such as "county" or "state" sits in hundreds of chunks: every
  pair with it passes the graph filter (it is within a hop or two of everything) and its chunks
  fill the local set, so the question's names lose to it. Such a Term is treated as an unmapped
  name is. A Term in at most ``max_chunks`` chunks is always kept: the local set may hold all
  of its chunks, and a small corpus (one book) keeps the paper's behaviour, as does
  ``max_df_share = 1`` on any corpus (bench/results/variants.md).

* An entity pair whose index mapping is empty at the initial h cannot give local evidence, and
  Algorithm 1 has no previous set to fall back to; as the authors' code does
  (``query.py``: ``chunk_count == 0`` → occurrence ranking) this goes to global+occurrence.
* Eq. 1 bounds the hop count by h; the authors' code compares the number of *nodes* on the
  shortest path with h (i.e. h-1 hops). We follow the paper.
* ``top_k`` is the paper's k (the most chunks returned; 25, the authors' ``max_chunk_setting``).
  When the local set holds more than ``top_k`` chunks (``max_chunks`` > ``top_k``), the
  Entity-Aware ranking chooses which to keep before formatting.
* A summary item carries no ``chunk_ids``: its text is not any passage's text, so it does not
  count as retrieving one for Recall@k; its ``SUMMARIZES`` edges are in the subgraph.

Why the graph filter is Cypher ``shortestPath`` rather than GDS BFS (``graph_filter="gds"`` keeps
that variant; the tests check that both agree), and what was measured of this module's latency and
recall: bench/results/e2_latency.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from itertools import combinations
from typing import Any, Literal

from pydantic import Field

from graphstrata.cypher import query
from graphstrata.retrieval.base import (
    ContextItem,
    RetrievalError,
    Retrieved,
    Retriever,
    RetrieverParams,
    Subgraph,
    Timer,
    hnsw_candidates,
    register,
)
from graphstrata.retrieval.e2graphrag_rank import entity_aware_rank, entity_weights, format_local
from graphstrata.text.nlp import query_entities

MAX_HOPS = 8
GDS_GRAPH = "e2graphrag_cooc"
INLINE_TEXTS = 100  # co-mentioning chunks up to which local_index returns their texts (saves a round trip)


class E2GraphRAGParams(RetrieverParams):
    top_k: int = Field(
        25,
        ge=1,
        le=1000,
        description="k: the most chunks (local) or collapsed-tree nodes (global) returned; the paper's k, 25 in "
        "the authors' code (max_chunk_setting)",
    )
    budget: int = Field(
        30_000, ge=1, description="token budget of the context: room for k = 25 chunks of 1,200 tokens (the paper's)"
    )
    hops: int = Field(
        4,
        ge=1,
        le=MAX_HOPS,
        description="h: query-entity pairs farther apart than h hops on the co-occurrence graph are dropped "
        "(Eq. 1); the starting value, tightened while too many chunks match. 4 in the paper (Appendix C)",
    )
    max_chunks: int = Field(
        25,
        ge=1,
        le=1000,
        description="while the index mapping yields more chunks than this, h is tightened (Algorithm 1, line 11)",
    )
    max_df_share: float = Field(
        0.01,
        gt=0,
        le=1,
        description="a query entity mentioned in more than this share of all chunks (and in more than max_chunks "
        "chunks) is treated as invalid, as an unmapped name is (§3.2): a common noun locates nothing in a "
        "collection of documents (docs/methods.md); 1 = the paper's (every mapped entity counts)",
    )
    candidate_factor: int = Field(
        2,
        ge=1,
        le=20,
        description="occurrence ranking re-ranks the candidate_factor·k nearest nodes (the paper's 2k)",
    )
    fill: bool = Field(
        True,
        description="when local mode finds fewer than k chunks, fill the rest of the k from global mode with "
        "occurrence ranking (docs/methods.md: the paper returns the local chunks alone)",
    )
    entity_weight: Literal["idf", "uniform"] = Field(
        "idf",
        description="weight of a query entity in the Entity-Aware and Occurrence Rankings: idf = log(chunks / "
        "chunks mentioning it), so that a common noun ('country') counts for less than a name; uniform = the "
        "paper's counts (one book, docs/methods.md)",
    )
    graph_filter: Literal["cypher", "gds"] = Field(
        "cypher",
        description="how pair distances are found: Cypher bidirectional shortestPath (faster, see the module "
        "docstring) or GDS BFS",
    )


Pair = tuple[str, str]


@register
class E2GraphRAGRetriever(Retriever):
    name = "e2graphrag"
    summary = (
        "E2GraphRAG: spaCy query entities → co-occurrence graph filter (pairs within h hops) → chunks holding "
        "both entities, h tightened to ≤ 25; global dense retrieval over the summary tree with occurrence "
        "ranking when the query has no entity pair. No LLM at query time."
    )
    Params = E2GraphRAGParams

    def _retrieve(self, question: str, p: E2GraphRAGParams, t: Timer) -> Retrieved:
        with t.stage("entities"):
            names = query_entities(question)
        with t.stage("embed"):
            vector = self.embed_query(question) if names else None
        ents, mapped, within, comention, inline, weights = self._index(names, p, t, vector)
        notes: dict[str, Any] = {
            "query_entities": names,
            "mapped": list(ents.values()),
            "unmapped": [n for n in names if n not in mapped],
            "too_common": [n for n in names if mapped.get(n) is False],
        }
        if not ents:
            notes["branch"] = "global"
            return self._global(question, p, t, {}, ents, notes, occurrence=False)

        pairs: list[Pair] = list(combinations(ents, 2))
        with t.stage("graph_filter"):
            selected = within(p.hops)
        notes["pairs"] = [{"a": ents[a], "b": ents[b], "within_h": (a, b) in selected} for a, b in pairs]
        if not selected:
            notes["branch"] = "global+occurrence"
            notes["reason"] = "no entity pair within h hops" if len(ents) > 1 else "a single query entity"
            return self._global(question, p, t, weights, ents, notes, occurrence=True)

        # index mapping (Eq. 2) from the entity→chunk index: the chunks mentioning both of a pair
        info = {c["id"]: {"doc_id": c["doc_id"], "ordinal": c["ordinal"], "occ": dict(c["occ"])} for c in comention}
        sim = {c["id"]: c["score"] for c in comention if c.get("score") is not None}
        order = {e: i for i, e in enumerate(ents)}
        evidence: dict[Pair, set[str]] = defaultdict(set)
        for c, x in info.items():
            for a, b in combinations(sorted(x["occ"], key=order.__getitem__), 2):
                evidence[(a, b)].add(c)

        def mapping(h: int) -> tuple[set[Pair], set[str]]:
            ps = within(h) if h > 0 else set()
            return ps, set().union(*(evidence[x] for x in ps))

        h = p.hops
        ps, chunks = mapping(h)
        history = [[h, len(chunks)]]
        if not chunks:
            notes["branch"] = "global+occurrence"
            notes["reason"] = "no chunk holds both entities of a pair within h hops"
            notes["h_history"] = history
            return self._global(question, p, t, weights, ents, notes, occurrence=True)
        prev: tuple[int, set[Pair], set[str]] | None = None
        with t.stage("tighten"):
            while len(chunks) > p.max_chunks:
                prev = (h, ps, chunks)
                h -= 1
                ps, chunks = mapping(h)
                history.append([h, len(chunks)])
        notes["branch"] = "local"
        notes["h_history"] = history
        if chunks:
            notes["local"] = "direct" if len(history) == 1 else "tightened"
        else:
            assert prev is not None
            h, ps, chunks = prev
            notes["local"] = "entity-aware fallback"
        notes["h"] = h
        chosen = entity_aware_rank(chunks, info, sim, weights)[: p.top_k]
        keys = {c: sorted({e for x in ps if c in evidence[x] for e in x}, key=list(ents).index) for c in chosen}
        texts = {c: inline[c] for c in chosen if c in inline}
        if len(texts) < len(chosen):
            with t.stage("texts"):
                texts = {r["id"]: r for r in self.db.read_plain(query("e2graphrag.chunk_texts"), ids=chosen)}
            chosen = [c for c in chosen if c in texts]  # a chunk a deletion is taking apart has no text
        items = format_local(chosen, keys, info, texts, ents, weights)
        sub = Subgraph(
            nodes=list(ents) + chosen,
            relationships=[f"{c}-MENTIONS->{e}" for c in chosen for e in keys[c]],
        )
        if p.fill and len(chosen) < p.top_k:
            # Fewer local chunks than k: the rest of the k from the paper's own mode for a query whose
            # entities cannot all be localised (global + occurrence ranking), after the local evidence.
            fill = self._global(question, p, t, weights, ents, {}, occurrence=True)
            have = set(chosen)
            extra = [i for i in fill.items if not (set(i.chunk_ids) & have) and i.node_id not in have]
            extra = extra[: p.top_k - len(chosen)]
            items += extra
            sub = Subgraph(
                nodes=sub.nodes + [i.node_id for i in extra],
                relationships=sub.relationships + fill.subgraph.relationships,
            )
            notes["filled"] = len(extra)
        return Retrieved(items, sub, notes)

    # --- entities, graph filter, entity→chunk index ----------------------------------------------
    def _index(
        self, names: list[str], p: E2GraphRAGParams, t: Timer, vector: list[float] | None = None
    ) -> tuple[
        dict[str, str], dict[str, bool], Callable[[int], set[Pair]], list[dict], dict[str, dict], dict[str, float]
    ]:
        """Mapped entities (id → name, question order), the names that mapped (True; False: left out as
        mentioned in more than ``max_df_share`` of the chunks), ``h -> pairs within h
        hops`` (h ≤ p.hops), the chunks that mention two or more of the entities, the texts of
        those chunks when there are few (``INLINE_TEXTS``), and each entity's weight."""
        if not names:
            return {}, {}, lambda h: set(), [], {}, {}
        if p.graph_filter == "cypher":
            text = query("e2graphrag.local_index").replace("MAX_HOPS", str(int(p.hops)))
            with t.stage("graph"):
                (row,) = self.db.read_plain(
                    text,
                    names=names,
                    inline=INLINE_TEXTS,
                    vector=vector,
                    max_df_share=p.max_df_share,
                    min_df=p.max_chunks,
                )
            ents = {e["id"]: e["name"] for e in row["entities"]}
            mapped = {e["normalized"]: True for e in row["entities"]} | {n: False for n in row["common"]}
            hops = {(a, b): n for a, b, n in row["pairs"]}
            inline = {r["id"]: r for r in row["texts"]}
            return (
                ents,
                mapped,
                lambda h: {x for x, n in hops.items() if n is not None and n <= h},
                row["chunks"],
                inline,
                entity_weights(row["entities"], row["n_chunks"], p.entity_weight),
            )

        from graphstrata.gds import GDS

        gds = GDS(self.db, self.settings)
        if gds.remote:
            raise RetrievalError(
                "e2graphrag with graph_filter='gds' runs GDS at query time, which graphstrata does not do on "
                "Aura Graph Analytics sessions (GRAPHSTRATA_GDS_BACKEND=aura_sessions); use graph_filter='cypher', "
                "the default"
            )
        with t.stage("graph"):
            rows = self.db.read_plain(query("e2graphrag.map_entities"), names=names)
            common = {r["normalized"] for r in rows if r["df"] > max(p.max_df_share * r["n_chunks"], p.max_chunks)}
            rows = [r for r in rows if r["normalized"] not in common]
            ents = {r["id"]: r["name"] for r in rows}
            mapped = {r["normalized"]: True for r in rows} | dict.fromkeys(common, False)
            chunks = [r["chunk"] for r in self.db.read_plain(query("e2graphrag.co_mention_chunks"), eids=list(ents))]
            if chunks and vector is not None:
                ids = [c["id"] for c in chunks]
                sims = self.db.read_plain(query("e2graphrag.chunk_similarity"), ids=ids, vector=vector)
                score = {r["id"]: r["score"] for r in sims}
                chunks = [c | {"score": score.get(c["id"], 0.0)} for c in chunks]
        pairs = [list(x) for x in combinations(ents, 2)]
        cache: dict[int, set[Pair]] = {}

        def within(h: int) -> set[Pair]:
            # one BFS per pair (the client's bfs.stream) from a with maxDepth h that stops once it reaches b;
            # it may visit the rest of that depth's frontier too, so b is looked for among the visited nodes
            if h not in cache:
                if not pairs:
                    return set()
                graph = gds.project(GDS_GRAPH, "Term", {"CO_OCCURS": {"orientation": "UNDIRECTED"}}).graph
                node = {
                    r["id"]: r["node"] for r in self.db.read_plain(query("e2graphrag.term_node_ids"), ids=list(ents))
                }
                cache[h] = set()
                for a, b in pairs:
                    if a in node and b in node:
                        visited = gds.client.bfs.stream(graph, source_node=node[a], target_nodes=[node[b]], max_depth=h)
                        if node[b] in visited["nodeIds"].iloc[0]:
                            cache[h].add((a, b))
            return cache[h]

        return (
            ents,
            mapped,
            within,
            chunks,
            {},
            entity_weights(rows, rows[0]["n_chunks"] if rows else 0, p.entity_weight),
        )

    # --- global modes ---------------------------------------------------------------------------
    def _global(
        self,
        question: str,
        p: E2GraphRAGParams,
        t: Timer,
        weights: dict[str, float],
        ents: dict[str, str],
        notes: dict[str, Any],
        occurrence: bool,
    ) -> Retrieved:
        with t.stage("embed"):
            v = self.embed_query(question)
        k = p.top_k * (p.candidate_factor if occurrence else 1)
        with t.stage("dense"):
            rows = self.db.read_plain(
                query("e2graphrag.collapsed_tree"), k=k, candidates=hnsw_candidates(k), vector=v, weights=weights
            )
        n_summaries = rows[0]["summaries"] if rows else 0
        notes["tree"] = (
            f"{n_summaries} Summary nodes"
            if n_summaries
            else "no Summary nodes (summary_tree stage not run, or only one-chunk documents): "
            "global mode over chunks only"
        )
        for r in rows:
            r["weight"] = r["weight"] or 0
        if occurrence:
            rows.sort(key=lambda r: (-r["weight"], -r["score"]))
            notes["candidates"] = len(rows)
        rows = rows[: p.top_k]
        items = []
        for r in rows:
            is_chunk = r["label"] == "Chunk"
            how = "cosine similarity to the question (collapsed tree)"
            if occurrence:
                how = (
                    f"occurrences of the query entities weighing {r['weight']:.3g}"
                    + ("" if is_chunk else " below it")
                    + (f", among the {k} nearest nodes")
                )
            items.append(
                ContextItem(
                    node_id=r["id"],
                    label=r["label"],
                    text=f"{r['title']}\n{r['text']}" if is_chunk else f"{r['title']} (summary)\n{r['text']}",
                    score=float(r["score"] + r["weight"]) if occurrence else float(r["score"]),
                    why=how if is_chunk else f"{how}; summary (level {r['level']}) of {r['leaves']} chunks",
                    chunk_ids=[r["id"]] if is_chunk else [],
                    doc_titles=[r["title"]] if r["title"] else [],
                )
            )
        sub = Subgraph(
            nodes=list(ents) + [r["id"] for r in rows],
            relationships=[f"{r['id']}-SUMMARIZES->{c}" for r in rows for c in r["children"]],
        )
        return Retrieved(items, sub, notes)
