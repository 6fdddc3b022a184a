"""SG-RAG retrieval ("Structure Guided RAG for Factual Queries", §3–4, Algorithm 1): exact
retrieval of multi-constraint factual questions by subgraph matching over the entity graph.

1. Query graph (§4.3, Table 10): the LLM lists the question's entities (the target as ``UNK``) and
   the edges between them; offline a spaCy dependency parse does it (named entities and noun chunks
   are known nodes, the wh-phrase is the ``UNK`` target, each known node hangs off the target with
   the verb/preposition that governs it as relation).  ``query_graph`` (JSON) supplies one directly.
   A malformed LLM reply is repaired, an invalid one re-asked with the error (``LLMClient.chat_json``);
   if the model still gives no usable graph (or the endpoint fails), the spaCy graph is used and
   ``notes["query_graph_error"]`` says why.
2. Entity normalisation (Algorithm 3): a known node's ``normalized`` name is looked up exactly, else
   its name embedding in the ``entity_embedding`` vector index (top 1, at least ``min_similarity``;
   if no node passes, the closest one's entity, or the question's nearest: Algorithm 3 has no threshold).
3. Candidate subgraph: the ``RELATED`` neighbourhood of the normalised entities up to ``path_length``
   hops, fetched with Cypher into a :class:`DataGraph` labelled with the entities' normalized names
   (the paper matches entity names; ``UNK`` nodes match anything), relations = predicates.
4. :func:`match_query` (decomposition, label completion, path index, exact containment, conflict-free
   assembly); the answers are the data nodes bound to the ``UNK`` target.  Query edges match any
   predicate (the paper's query edges carry no relation label) unless ``match_relations``.
   With ``dominance`` (default) the path-dominance model ``M`` (§4.2, App. C) filters candidate paths by
   ``o(p_q) ⪯ o(p_z)`` before the exact check; ``M`` is trained on the corpus graph's stars on first use,
   kept under ``cache_dir/sgrag/`` keyed by database and graph state (retrained after a change); ``o(v)``
   comes from the candidate subgraph's stars; the monotone model never filters out a true match.
5. Context (:mod:`graphstrata.retrieval.sgrag_context`): the answer entities first, then the matched
   subgraphs' relations as ``subject predicate object — description``, each mapped to its source
   chunks, then those source passages nearest the question first (``passages``); with no match the
   1-hop subgraph around the anchors (Algorithm 1 lines 19–24; when it has no edge, around the entities
   the question mentions too, §4.4: ``notes["fallback_entities"]``) and ``notes["fallback"] = True``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable
from typing import Any

from pydantic import Field, field_validator

from graphstrata import limits
from graphstrata.algorithms.sgrag import (
    DataGraph,
    Edge,
    QueryGraph,
    match_query,
    one_hop_subgraph,
)
from graphstrata.algorithms.sgrag.assemble import fallback_anchors
from graphstrata.cypher import query
from graphstrata.retrieval.base import (
    TOP_K,
    RetrievalError,
    Retrieved,
    Retriever,
    RetrieverParams,
    Subgraph,
    Timer,
    hnsw_candidates,
    register,
)
from graphstrata.retrieval.linking import mentioned_entities
from graphstrata.retrieval.sgrag_context import Nearby, subgraph_items
from graphstrata.retrieval.sgrag_model import dominance_model, graph_state
from graphstrata.retrieval.sgrag_query import QUERY_GRAPH_PROMPT, QueryGraphSpec, spacy_query_graph
from graphstrata.retrieval.shared import beside
from graphstrata.text.names import normalize_name

LLM_STAGE = "sgrag_query_graph"


class SGRAGParams(RetrieverParams):
    top_k: int | None = Field(None, ge=1, le=1000, description=f"{TOP_K} (default: no cap)")
    answer_k: int = Field(
        5, ge=1, le=1000, description="answer entities shown; their matched relations are capped at 4x (at least 20)"
    )
    path_length: int = Field(2, ge=1, le=3, description="path length l of the decomposition and the hops fetched")
    min_similarity: float = Field(
        0.6,
        ge=-1,
        le=1,
        description="entity normalisation: least cosine similarity of a vector-index hit (a cosine, not the "
        "index's (1 + cos) / 2 score)",
    )
    match_relations: bool = Field(
        False, description="also require query edge relations to equal the stored predicates (the paper: no)"
    )
    directed: bool = Field(False, description="respect edge direction when matching")
    max_nodes: int = Field(2000, ge=10, le=100000, description="cap on the candidate subgraph's entities")
    max_edges: int = Field(
        2000,
        ge=1,
        le=1_000_000,
        description="cap on the candidate subgraph's edges: those at the anchors first, then the heaviest (a hub "
        "entity such as a year brings thousands, and matching grows with their square)",
    )
    max_matches: int = Field(200, ge=1, le=10000, description="cap on matches per assembled path set")
    dominance: bool = Field(
        True,
        description="filter candidate paths with the path-dominance GAT (trained on the corpus graph on first "
        "use) before the exact containment check; the matches are the same either way",
    )
    passages: bool = Field(
        True,
        description="after the subgraph's labels and descriptions, its entities' and relations' source passages, "
        "nearest the question first, while the budget lasts (an offline graph's descriptions are one sentence; "
        "graphstrata/retrieval/sgrag_context.py); False: the labels and descriptions alone",
    )
    query_graph: str | None = Field(
        None,
        description='explicit query graph as JSON {"nodes": [{"id", "label"}], "edges": [{"src", "dst", '
        '"relation"}]}, the target labelled "UNK"; skips query-graph extraction',
    )

    @field_validator("query_graph")
    @classmethod
    def _valid_query_graph(cls, v: str | None) -> str | None:
        if v is not None:
            QueryGraphSpec.model_validate(json.loads(v))
        return v


# --- the retriever --------------------------------------------------------------------------------
@register
class SGRAGRetriever(Retriever):
    name = "sgrag"
    summary = (
        "SG-RAG: query graph with an UNK target → entity normalisation → exact subgraph matching "
        "(path decomposition, label completion, assembly) over the RELATED graph; 1-hop fallback."
    )
    Params = SGRAGParams

    def _retrieve(self, question: str, p: SGRAGParams, t: Timer) -> Retrieved:
        notes: dict[str, Any] = {"fallback": False}
        # the passages' order (the question's vector and its nearest chunks) is found beside the parse
        nearby = beside(lambda: Nearby.of(self.db, self.embed_query(question, True))) if p.passages else None
        # and the graph state the dominance model is keyed by: a round trip that needs nothing else
        state = beside(graph_state, self.db) if p.dominance else None
        with t.stage("query_graph"):
            spec, source = self._query_graph(question, p, notes)
        notes["query_graph"] = spec.model_dump()
        notes["query_graph_source"] = source
        try:
            qg = spec.to_query_graph(p.match_relations)
        except ValueError as e:
            raise RetrievalError(f"bad query graph: {e}") from e
        with t.stage("normalise"):
            norm = self._normalise(spec, p, question, notes)
        notes["normalised"] = {q: v["name"] for q, v in norm.items()}
        # known query nodes take their entity's normalized name (the data graph's labels)
        labels: dict[Hashable, str | None] = {
            n.id: (norm[n.id]["normalized"] if n.id in norm else normalize_name(n.label)) for n in spec.nodes
        }
        for n in qg.unknown_nodes:
            labels[n] = None
        qg = QueryGraph(labels, qg.edges)
        anchors = list(dict.fromkeys(v["id"] for v in norm.values()))
        if not anchors:
            notes["fallback"] = True
            notes["reason"] = "no query entity found in the graph"
            return Retrieved([], Subgraph(), notes)
        with t.stage("candidate_subgraph"):
            graph, info, edge_info = self._candidate_subgraph(anchors, p, notes)
        notes["candidate_nodes"] = len(graph)
        notes["candidate_edges"] = len(graph.edges)
        embedder = None
        if state is not None and qg.edges:
            with t.stage("dominance_model"):
                # a request under a deadline (the HTTP server) never trains M: training takes seconds
                # to minutes on a large graph and would outlive the request; the filter is then skipped
                embedder, model_info = dominance_model(
                    self.db, self.settings.cache_dir, train=limits.current() is None, state=state.result()
                )
            notes["dominance"] = {"used": embedder is not None, "model": model_info}
        with t.stage("match"):
            if qg.edges:
                result = match_query(
                    qg,
                    graph,
                    path_length=p.path_length,
                    directed=p.directed,
                    max_matches=p.max_matches,
                    normalized={q: v["id"] for q, v in norm.items()},
                    embedder=embedder,
                )
                matches, fallback = result.matches, result.fallback
                notes["funnel"] = result.funnel()
            else:  # a single entity and no structure: nothing to match
                matches = []
                fallback = one_hop_subgraph(graph, fallback_anchors(qg, graph, {q: v["id"] for q, v in norm.items()}))
        notes["matches"] = len(matches)
        # the target is the first UNK node (the query graph's q0); later ones are entities the question
        # describes on the way to it ("the film" of "who directed the film shot in Leland")
        target = next((n.id for n in spec.nodes if n.id in qg.unknown_nodes), None)
        with t.stage("context"):
            if matches:
                answers = list(dict.fromkeys(m[target] for m in matches)) if target is not None else []
                notes["answers"] = [info[a]["name"] for a in answers]
                support = dict(Counter(m[target] for m in matches))
                # relations grouped by answer, the answer's subgraphs first (an edge stays where it first
                # came: insertion order; a dict, as a list's membership test made this quadratic)
                ordered: dict[Edge, None] = {}
                for a in answers:
                    for m in matches:
                        if m[target] == a:
                            ordered.update(dict.fromkeys(sorted(m.edges, key=str)))
                for m in matches:
                    ordered.update(dict.fromkeys(sorted(m.edges, key=str)))
                edges = list(ordered)
                items = subgraph_items(
                    self.db,
                    answers,
                    edges,
                    info,
                    edge_info,
                    answer_k=p.answer_k,
                    n_matches=len(matches),
                    support=support,
                    nearby=nearby.result() if nearby is not None else None,
                    budget=p.budget,
                )
                nodes = list(dict.fromkeys(v for m in matches for v in m.nodes))
            else:
                notes["fallback"] = True
                notes["answers"] = []
                if fallback is None or not fallback.edges:  # e.g. an anchor found from the question itself
                    fallback = one_hop_subgraph(graph, anchors)
                if not fallback.edges:  # g'' around the query graph's anchors is empty: see _mentioned
                    wide = self._mentioned(question, anchors)
                    if len(wide) > len(anchors):
                        one_hop = p.model_copy(update={"path_length": 1})
                        graph, info, edge_info = self._candidate_subgraph(wide, one_hop, notes)
                        fallback = one_hop_subgraph(graph, wide)
                        notes["fallback_entities"] = [info[a]["name"] for a in wide if a in info]
                        anchors = wide
                edges = sorted(
                    fallback.edges,
                    key=lambda e: (-edge_info.get((e.src, e.dst, e.relation), {}).get("weight", 1.0), str(e)),
                )
                # g'' is the anchors and their neighbours: both are described (anchors first)
                ends = [v for e in edges for v in (e.src, e.dst)]
                items = subgraph_items(
                    self.db,
                    list(dict.fromkeys(a for a in [*anchors, *ends] if a in info)),
                    edges,
                    info,
                    edge_info,
                    answer_k=p.answer_k,
                    fallback=True,
                    nearby=nearby.result() if nearby is not None else None,
                    budget=p.budget,
                )
                nodes = list(fallback.nodes)
        sub = Subgraph(
            nodes=nodes,
            relationships=[f"{e.src}-RELATED->{e.dst}" for e in edges],
        )
        return Retrieved(items, sub, notes)

    # --- steps ------------------------------------------------------------------------------------
    def _query_graph(self, question: str, p: SGRAGParams, notes: dict[str, Any]) -> tuple[QueryGraphSpec, str]:
        if p.query_graph is not None:
            return QueryGraphSpec.model_validate(json.loads(p.query_graph)), "param"
        if self.settings.llm_enabled:
            from graphstrata.llm import LLMError

            with self.llm_client() as llm:
                try:
                    spec = llm.chat_json(
                        [
                            {"role": "system", "content": QUERY_GRAPH_PROMPT},
                            {"role": "user", "content": f"Text: {question}"},
                        ],
                        QueryGraphSpec,
                        stage=LLM_STAGE,
                    )
                except LLMError as e:  # no usable graph after repair and re-asks, or no endpoint
                    notes["query_graph_error"] = str(e)[:500]
                    spec = None
                notes["llm"] = llm.usage().get(LLM_STAGE, {})
            if spec is not None:
                return spec, "llm"
        return spacy_query_graph(question), "spacy"

    def _normalise(
        self, spec: QueryGraphSpec, p: SGRAGParams, question: str, notes: dict[str, Any]
    ) -> dict[str, dict[str, Any]]:
        """Known query node id → {id, name, normalized, score} of its graph entity."""
        known = [n for n in spec.nodes if n.label.strip() and n.label.strip().lower() not in ("unk", "unknown", "?")]
        keys = {n.id: normalize_name(n.label) for n in known}
        out: dict[str, dict[str, Any]] = {}
        rows = self.db.read(query("sgrag.exact_entities"), keys=list(set(keys.values())))
        by_key = {r["key"]: r for r in rows}
        missing = [n for n in known if keys[n.id] not in by_key]
        for n in known:
            if keys[n.id] in by_key:
                out[n.id] = {**by_key[keys[n.id]], "score": 1.0}
        below: dict[str, dict[str, Any]] = {}
        if missing:
            vectors = self.embedder.embed([n.label for n in missing])
            rows = [{"key": n.id, "vector": v.tolist()} for n, v in zip(missing, vectors, strict=True)]
            # every label's nearest entity in one round trip; below min_similarity: kept for the fallback
            read = self.db.read(query("sgrag.nearest_entities"), rows=rows, candidates=hnsw_candidates(1))
            hits = {h["key"]: h for h in read}
            for hit in (hits[n.id] for n in missing if n.id in hits):
                (out if hit["cosine"] >= p.min_similarity else below)[hit["key"]] = {**hit, "score": hit["cosine"]}
        if out:
            return out
        # None passed min_similarity: Algorithm 3 has no threshold, so fall back to it (the query node
        # that came closest; with no known node at all, the question's nearest entity)
        if not below and not known:
            v = self.embedder.embed([question])[0].tolist()
            hits = self.db.read(query("sgrag.similar_entities"), k=1, candidates=hnsw_candidates(1), vector=v)
            below = {"question": {**hits[0], "score": hits[0]["cosine"]}} if hits else {}
        best = max(below, key=lambda k: below[k]["score"], default=None)
        if best is not None:
            notes["normalised_below_threshold"] = {best: below[best]["name"]}
        return {best: below[best]} if best is not None else out

    def _mentioned(self, question: str, anchors: list[str]) -> list[str]:
        """The anchors, then the graph entities the question mentions (the shared query linking:
        exact name, else word-level full text, and their synonyms). §4.4 builds g'' "around entities
        mentioned in q^o"; offline the query graph's known nodes are a parse's guesses, and when the
        1-hop subgraph around them is empty (an anchor with no RELATED edge: most of a spaCy graph's
        entities) the question's other mentions are what is left to build it around."""
        linked = mentioned_entities(self.db, question, self.settings, self.llm)
        return list(dict.fromkeys([*anchors, *linked]))

    def _candidate_subgraph(
        self, anchors: list[str], p: SGRAGParams, notes: dict[str, Any]
    ) -> tuple[DataGraph, dict[str, dict[str, Any]], dict[tuple, dict[str, Any]]]:
        """Entities within path_length RELATED hops of the anchors, at most max_nodes: when the cap
        cuts a hop, the neighbours linked to most of the frontier (then by edge weight) are kept and
        ``notes["truncated"]`` says so, since an exact match may then be missed."""
        seen = list(anchors)
        frontier = list(anchors)
        for hop in range(1, p.path_length + 1):
            if not frontier or len(seen) >= p.max_nodes:
                break
            room = p.max_nodes - len(seen)
            rows = self.db.read(query("sgrag.expand"), frontier=frontier, seen=seen, limit=room + 1)
            if len(rows) > room:
                notes["truncated"] = f"hop {hop}: kept {room} of more than {room} neighbours (max_nodes {p.max_nodes})"
                rows = rows[:room]
            frontier = [r["id"] for r in rows]
            seen.extend(frontier)
        # the nodes and the edges among them: two independent round trips, side by side
        edge_read = beside(
            lambda: self.db.read(query("sgrag.induced_edges"), ids=seen, anchors=anchors, limit=p.max_edges + 1)
        )
        rows = self.db.read(query("sgrag.induced"), ids=seen)
        info = {r["id"]: r for r in rows}
        found = edge_read.result()
        if len(found) > p.max_edges:
            notes["truncated_edges"] = f"kept the {p.max_edges} edges at the anchors or heaviest (max_edges)"
            found = found[: p.max_edges]
        edges: list[Edge] = []
        edge_info: dict[tuple, dict[str, Any]] = {}
        for o in found:
            # each node's properties are read once, so a deletion between two reads of one node can
            # leave an edge whose end has no row: the edge goes with it
            if o["src"] in info and o["dst"] in info and (o["src"], o["dst"], o["predicate"]) not in edge_info:
                edges.append(Edge(o["src"], o["dst"], o["predicate"]))
                edge_info[(o["src"], o["dst"], o["predicate"])] = o
        graph = DataGraph({r["id"]: r["normalized"] for r in rows}, edges)
        return graph, info, edge_info
