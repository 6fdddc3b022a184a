"""DA-RAG retrieval (Zeng et al., WWW '26, §4–5, Algorithm 1, Appendix A/B.3): coarse-to-fine
embedding-attributed community search (EACS) over the three-layer index.

1. **Coarse EACS** on the Semantic Chunk Layer L_C (§4): the layer — every chunk's attribute
   (§4.1: the embedding of its title + description) and the ``CHUNK_RELATED`` edges of augment stage
   ``darag_chunk_edges`` — is held in memory per graph version. Q-Peel (Algorithm 1) for
   k = k_min..k_max runs on the question's search range (the chunks nearest the query and their
   neighbours, bounded by ``coarse_range``; ``coarse_candidates=None``: all of L_C as the paper),
   on communities holding a chunk nearest the query (``coarse_anchors``); the one with the highest
   QRScore (Eq. 1) is the chunk community H_C. If the range holds no such k-truss, H_C falls back to
   the ``chunk_k`` chunks most similar to the query (``notes["coarse"]["fallback"]``).
2. **Working subgraph** (§4): V_work = the entities linked by ``MENTIONS`` to a chunk of H_C; the
   KG layer L_KG (``RELATED``) and the similarity layer L_S (``SIMILAR {kind: 'semantic'}``, the
   entity KNN of augment stage ``entity_similarity``) induced on V_work — cut from the entity layer,
   held in memory per graph version like L_C.
3. **Fine EACS** (§4, §5.1 adaptive k): Q-Peel on each fine layer for k = k_min..k_max gives the
   candidate communities {H^k}; a candidate equal to a higher-k one of the same layer is kept once.
4. **Selection** (§5.1): with an LLM, each candidate gets a relevance score S and a report R in one
   call (stage ``darag_report``) and the greedy strategy packs reports by descending S into the
   report budget C_b. Without an LLM, QRScore stands in for S and an extractive rendering of the
   community (its entities and the relations among them) for R.
5. **Context**, coarse to fine: the chunks of H_C (most query-similar first) as text units in the
   budget the packed reports leave, then the packed communities by descending S. Every item maps
   back to chunks of H_C (a community: the chunks of H_C that mention its entities), which is what
   Recall@k ranks.

Every community found (coarse and fine, per layer and k) is listed in ``notes["communities"]`` with
its nodes and edges, the subgraph-quality metrics of Appendix B.3 (size, QRScore, density, diameter,
average pairwise similarity) and the bounds of Appendix A.1/A.2 it must satisfy. Density is
2|E| / (|V|(|V|-1)) (A.1 Eq. 5, under which the A.1 bound holds; B.3 prints half of it); the
diameter is measured inside the community (the quantity A.2 bounds; B.3's shortest paths through the
whole layer can only be shorter).

Where the paper is silent (each choice is marked "ours" in the parameter descriptions):

* The coarse EACS searches the question's range, not all of L_C (so its work is bounded by the
  question), and H_C must hold a chunk nearest the query (community search's query node); a range
  with no such k-truss falls back to the nearest chunks. ``coarse_candidates=None, coarse_anchors=0``
  is the paper's literal whole-layer search.
* What the reports and H_C's chunks leave of the budget is filled with the next nearest chunks of
  the range (``fill``): the paper's context is a full budget.
* §5.1 infers k per query with the LLM for the candidate communities that enter the context; the
  coarse community is an anchor, not context, so its k is chosen by QRScore (Q-Peel's own objective,
  line 12 of Algorithm 1, extended over k; ties go to the larger, more cohesive k) and costs no calls.
* k_max is not given; 6 yields at most 2 layers x 4 values of k = 8 report calls per query, in line
  with the 8.3 calls per query of §6.2.
* Greedy packing skips a report that does not fit and goes on with the next (the standard greedy for
  the knapsack of §5.1); a report scored 0 adds nothing to the objective and is left out.
* The chunk community H_C is part of the context (the "multiple granularities" of the L_C ablation,
  §6.3): its chunks come first, ranked by cosine to the question. Placing them after the reports
  and ranking a community's chunks by how many of its entities they mention ranked the gold
  passages clearly lower on hotpotqa_dev100 (no-LLM Recall@2 0.42 against 0.58).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from graphstrata.algorithms.eacs import eacs, greedy_pack
from graphstrata.algorithms.qpeel import cosine_similarities
from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.llm_structured import bounded
from graphstrata.retrieval.base import (
    ContextItem,
    Retrieved,
    Retriever,
    Subgraph,
    Timer,
    register,
)
from graphstrata.retrieval.darag_layers import (
    LAYER_TITLE,
    REL_TYPE,
    Candidate,
    ChunkLayer,
    EntityLayer,
    LayerGraph,
    community_chunks,
    community_note,
    load_chunk_layer,
    load_entity_layer,
    make_candidate,
    render_community,
)
from graphstrata.retrieval.darag_params import DARAGParams
from graphstrata.retrieval.shared import beside
from graphstrata.text.tokens import count_tokens, truncate
from graphstrata.walkgraph import graph_version

REPORT_STAGE = "darag_report"
FILL_CHUNKS = 100  # chunks of the search range that may fill the budget (1,000s of tokens' worth)
PROMPT_TOKENS = 3000  # cap on the community description sent to the LLM
REPORT_SHARE = 3200 / 4800  # Table 4: max_token_for_community_report / max_token_for_context
#: C_b when no report is a model's (ours): an extractive rendering restates sentences of H_C's own chunks,
#: so it gets the share Table 4 gives the text units, and the chunks the rest (bench/results/variants.md)
EXTRACTIVE_REPORT_SHARE = 1 - REPORT_SHARE

REPORT_SYSTEM = (
    "You assess a community of a knowledge graph (entities and the relations among them) retrieved for a "
    "user's question. Judge how useful the community is for answering the question and summarise what it "
    "says that bears on the question."
)
REPORT_PROMPT = """Question: {question}

Community ({layer}, k-truss with k={k}, {size} entities):
{community}

Reply with a JSON object and nothing else:
{{"score": <integer 0-100: how relevant and useful the community is for answering the question; 0 = useless>,
  "report": "<a concise report (at most {report_words} words) of the community's facts that bear on the question>"}}"""


class CommunityAssessment(BaseModel):
    """Φ_LLM(q, H^k) of §5.1: the relevance score S and the community report R."""

    score: float = Field(ge=0, le=100)
    report: str


NO_LLM_WARNING = (
    "darag: use_llm is on (the default) but no LLM is configured, so QRScore ranked the communities "
    "and their reports are extractive; pass use_llm=false to silence this"
)


def warm(db: Database) -> tuple[ChunkLayer, EntityLayer]:
    """Read the two layers DA-RAG searches and load its compiled peel now (at server start), so
    that the first DA-RAG question does not pay for them."""
    version = graph_version(db)
    layers = load_chunk_layer(db, version)[0], load_entity_layer(db, version)[0]
    eacs([(0, 1), (1, 2), (0, 2)], np.eye(3), np.ones(3), [3])  # a triangle: compiles or loads the peel
    return layers


# --------------------------------------------------------------------------------------------------
# The retriever
# --------------------------------------------------------------------------------------------------


@register
class DARAGRetriever(Retriever):
    name = "darag"
    summary = (
        "DA-RAG: coarse-to-fine embedding-attributed community search (k-truss + Q-Peel) on the chunk layer, "
        "then on the KG and similarity layers of its entities; LLM-scored reports packed into the budget."
    )
    Params = DARAGParams

    def _retrieve(self, question: str, p: DARAGParams, t: Timer) -> Retrieved:
        ks = list(range(p.k_min, p.k_max + 1))
        version_read = beside(graph_version, self.db)  # a round trip: beside the embedding
        with t.stage("embed"):
            q = np.asarray(self.embed_query(question), dtype=np.float64)

        # ---- 1. coarse EACS on the chunk layer ----------------------------------------------------
        with t.stage("layers"):
            version = version_read.result()
            layer, layer_cached = load_chunk_layer(self.db, version)
            entities, _ = load_entity_layer(self.db, version)
        if not layer.ids:
            return Retrieved([], Subgraph(), {"coarse": {"candidates": 0}, "communities": []})
        with t.stage("coarse_eacs"):
            text_cos = layer.text_cosines(q)
            seeds = None if p.coarse_candidates is None else min(p.coarse_candidates, p.coarse_range)
            members, truss = layer.search_range(text_cos, seeds, max(p.coarse_range, seeds or 0), p.coarse_edges)
            attribute = layer.attribute if p.chunk_attribute == "description" else layer.text
            whole = members.size == len(layer.ids) and p.coarse_candidates is None  # no copies
            chunk_graph = (
                LayerGraph(layer.ids, attribute, truss.edges)
                if whole
                else LayerGraph([layer.ids[i] for i in members], attribute[members], truss.edges)
            )
            range_cos = text_cos[members]
            by_text = members[np.lexsort((members, -range_cos))]  # the range, nearest first
            # the anchors as rows of the range (``members`` is sorted)
            anchors = np.searchsorted(members, by_text[: p.coarse_anchors]) if p.coarse_anchors else None
            found, top = eacs(truss, chunk_graph.emb, q, [p.coarse_k] if p.coarse_k else ks, anchors=anchors)
            coarse = [make_candidate("chunk", c, chunk_graph) for c in found]
            coarse_notes: dict[str, Any] = {
                "candidates": len(members),
                "edges": len(truss.edges),
                "max_truss": top,
                "layer_cached": layer_cached,
                "anchors": [layer.ids[i] for i in by_text[: p.coarse_anchors]],
                # chunks whose attribute is their title + description
                "described": int(layer.described[members].sum()) if p.chunk_attribute == "description" else 0,
            }
            if coarse:
                best = max(coarse, key=lambda c: (c.community.qrscore, c.community.k))
                best.selected = True
                hc = list(best.members)
                coarse_notes.update(fallback=False, k=best.community.k, qrscore=round(best.community.qrscore, 4))
            else:  # no (anchored) k-truss in the search range: the most similar chunks stand in for H_C
                hc = [layer.ids[i] for i in by_text[: p.chunk_k]]
                coarse_notes.update(
                    fallback=True,
                    reason=f"no {ks[0] if not p.coarse_k else p.coarse_k}-truss "
                    + ("holding a chunk nearest the query " if p.coarse_anchors else "")
                    + f"among the {len(members)} chunks searched; H_C = the top {len(hc)} chunks",
                )
            position = {c: i for i, c in enumerate(chunk_graph.ids)}
            cos_hc = cosine_similarities(chunk_graph.emb[[position[c] for c in hc]], q).tolist()
            chunk_cos = dict(zip(hc, cos_hc, strict=True))
            hc.sort(key=lambda c: -chunk_cos[c])
            doc_title = {c: layer.doc_titles[members[position[c]]] for c in hc}
            coarse_notes["size"] = len(hc)
            coarse_notes["chunks"] = hc
            # what may fill the budget H_C and the reports leave: the range's next nearest chunks
            in_hc = set(hc)
            fillers = [layer.ids[i] for i in by_text[:FILL_CHUNKS] if layer.ids[i] not in in_hc] if p.fill else []
            filler_cos = {layer.ids[i]: float(text_cos[i]) for i in by_text[:FILL_CHUNKS]}
            doc_title.update({layer.ids[i]: layer.doc_titles[i] for i in by_text[:FILL_CHUNKS]})
        # H_C's texts are read while the working subgraph is searched
        chunk_rows = beside(lambda ids: self.db.read_plain(query("darag.chunks"), ids=ids), hc[: p.chunk_k] + fillers)

        # ---- 2. working subgraph: entities of H_C and the fine layers among them ------------------
        with t.stage("working"):
            working = entities.working(hc, p.k_neighbor, p.layers, q.size)
            fine_graphs = working.graphs
        with t.stage("fine_eacs"):
            fine: list[Candidate] = []
            work_cos = cosine_similarities(working.emb, q)  # every fine layer's nodes are rows of V_work
            for layer, g in fine_graphs.items():
                found = [make_candidate(layer, c, g) for c in eacs(g.edges, g.emb, q, ks, work_cos)[0]]
                # the same node set at several k is one community: keep it at its highest k
                by_nodes: dict[tuple[str, ...], int] = {}
                for i in reversed(range(len(found))):
                    key = tuple(sorted(found[i].members))
                    if key in by_nodes:
                        found[i].duplicate_of = found[by_nodes[key]].community.k
                    else:
                        by_nodes[key] = i
                fine.extend(found)
            distinct = [c for c in fine if c.duplicate_of is None]
            for c in distinct:
                c.rendering = render_community(c, working)
                c.chunk_ids = community_chunks(c.members, working, chunk_cos)

        with t.stage("chunk_fetch"):
            texts = {r["id"]: r["text"] for r in chunk_rows.result()}

        # ---- 3. scores and reports (LLM) or QRScore, then greedy packing into C_b -----------------
        llm_notes: dict[str, Any] = {"used": False}
        if distinct and p.use_llm and self.settings.llm_enabled:
            with t.stage("llm_reports"):
                llm_notes = self._assess(question, distinct, p)
        with t.stage("select"):
            # LLM-scored candidates first (a failed call leaves QRScore, on another scale), then by S
            ranked = sorted(
                distinct, key=lambda c: (c.llm_score is None, -c.score, -c.community.qrscore, -c.community.k)
            )
            lengths = [count_tokens(c.report or c.rendering) for c in ranked]
            share = REPORT_SHARE if any(c.report for c in ranked) else EXTRACTIVE_REPORT_SHARE
            cb = p.report_budget if p.report_budget is not None else round(p.budget * share)
            chosen = greedy_pack([c.score for c in ranked], lengths, min(cb, p.budget))
            for i in chosen:
                ranked[i].selected = True

        # ---- 4. context: H_C's chunks (coarse level) in the budget the reports leave, then the reports --
        sub_nodes: list[str] = list(hc)
        sub_rels = [
            f"{chunk_graph.ids[a]}-CHUNK_RELATED->{chunk_graph.ids[b]}"
            for a, b in (best.community.edges.tolist() if coarse else [])
        ]
        community_items: list[ContextItem] = []
        for i in chosen:
            c = ranked[i]
            by = f"LLM relevance {c.llm_score:g}" if c.llm_score is not None else f"QRScore {c.community.qrscore:.3f}"
            community_items.append(
                ContextItem(
                    node_id=c.key,
                    label="EACSCommunity",
                    text=c.report or c.rendering,
                    score=c.score,
                    why=f"EACS community of the {LAYER_TITLE[c.layer].lower()} (k={c.community.k}, "
                    f"{c.community.nodes.size} entities) in the working subgraph of H_C; ranked by {by}",
                    chunk_ids=c.chunk_ids,
                    doc_titles=list(dict.fromkeys(doc_title[x] for x in c.chunk_ids if doc_title[x])),
                    tokens=lengths[i],
                )
            )
            sub_nodes += c.members
            g = fine_graphs[c.layer]
            sub_rels += [f"{g.ids[a]}-{REL_TYPE[c.layer]}->{g.ids[b]}" for a, b in c.community.edges.tolist()]
        hc_note = (
            f"chunk community H_C (k={best.community.k}, QRScore {best.community.qrscore:.3f})"
            if coarse
            else "fallback H_C (no k-truss on the chunk layer)"
        )
        left = p.budget - sum(i.tokens for i in community_items)
        chunk_items: list[ContextItem] = []
        for cid in [c for c in hc[: p.chunk_k] if c in texts]:
            title = doc_title[cid]
            text = f"{title}\n{texts[cid]}" if title else texts[cid]
            item = ContextItem(
                node_id=cid,
                label="Chunk",
                text=text,
                score=chunk_cos[cid],
                why=f"{hc_note}; cosine {chunk_cos[cid]:.3f} to the question",
                chunk_ids=[cid],
                doc_titles=[title] if title else [],
                tokens=count_tokens(text),
            )
            if item.tokens <= left:  # like the reports: a unit that does not fit is skipped
                chunk_items.append(item)
                left -= item.tokens
            elif not chunk_items and not community_items and cid == hc[0]:
                chunk_items.append(item)  # nothing else to give: pack() cuts it to the budget
        items = chunk_items + community_items if p.layout == "chunks_first" else community_items + chunk_items
        filled: list[ContextItem] = []
        for cid in [c for c in fillers if c in texts]:
            if left <= 0:
                break
            title = doc_title[cid]
            text = f"{title}\n{texts[cid]}" if title else texts[cid]
            item = ContextItem(
                node_id=cid,
                label="Chunk",
                text=text,
                score=filler_cos[cid],
                why=f"fills the budget {hc_note} and the reports leave; cosine {filler_cos[cid]:.3f} to the question",
                chunk_ids=[cid],
                doc_titles=[title] if title else [],
                tokens=count_tokens(text),
            )
            if item.tokens <= left:
                filled.append(item)
                left -= item.tokens
        items += filled

        fine_ids = {layer: np.asarray(g.ids, dtype=object) for layer, g in fine_graphs.items()}
        notes: dict[str, Any] = {
            "coarse": coarse_notes,
            "working": {
                "entities": len(working.ids),
                **{f"{layer}_edges": len(g.edges) for layer, g in fine_graphs.items()},
            },
            "ranking": "llm" if any(c.llm_score is not None for c in distinct) else "qrscore",
            "llm": llm_notes,
            "candidates": len(distinct),
            "filled": len(filled),
            "selected": len(chosen),
            "report_budget": min(cb, p.budget),
            "communities": [community_note(c, np.asarray(chunk_graph.ids, dtype=object)) for c in coarse]
            + [community_note(c, fine_ids[c.layer]) for c in fine],
        }
        if p.use_llm and not self.settings.llm_enabled:
            # the default asks for the LLM: a user without one must see that the ranking fell back
            notes["warnings"] = [NO_LLM_WARNING]
        return Retrieved(items, Subgraph(nodes=list(dict.fromkeys(sub_nodes)), relationships=sub_rels), notes)

    # ---- LLM scores and reports ---------------------------------------------------------------------

    def _assess(self, question: str, cands: list[Candidate], p: DARAGParams) -> dict[str, Any]:
        """Φ_LLM(q, H^k) of §5.1 for every candidate, one call each (stage darag_report). A candidate
        whose call fails keeps QRScore as its score and its extractive rendering as its report."""

        def prompt(c: Candidate) -> list[dict[str, str]]:
            text = truncate(c.rendering, PROMPT_TOKENS)
            body = REPORT_PROMPT.format(
                question=question,
                layer=LAYER_TITLE[c.layer].lower(),
                k=c.community.k,
                size=c.community.nodes.size,
                community=text,
                report_words=p.report_words,
            )
            return [{"role": "system", "content": REPORT_SYSTEM}, {"role": "user", "content": body}]

        # the report as long as asked (~8 characters a word, room to spare), so that a model that does
        # not stop is stopped by the grammar with a valid reply rather than cut at the token limit
        schema = bounded(CommunityAssessment.model_json_schema(), chars=8 * p.report_words)
        with self.llm_client() as llm:
            before = llm.usage().get(REPORT_STAGE, {})
            results = llm.map(
                lambda c: llm.chat_json(
                    prompt(c), CommunityAssessment, stage=REPORT_STAGE, max_reasks=1, json_schema=schema
                ),
                cands,
                return_exceptions=True,
            )
            # this question's share of the (possibly shared) client's ledger
            usage = {k: v - before.get(k, 0) for k, v in llm.usage().get(REPORT_STAGE, {}).items()}
        failures = []
        for c, r in zip(cands, results, strict=True):
            if isinstance(r, CommunityAssessment):
                c.llm_score, c.report = float(r.score), r.report.strip() or c.rendering
            else:
                failures.append({"community": c.key, "error": str(r)[:300]})
        return {
            "used": True,
            "calls": usage.get("calls", 0),
            "cache_hits": usage.get("cache_hits", 0),
            "prompt_tokens": usage.get("prompt_tokens", 0),
            "completion_tokens": usage.get("completion_tokens", 0),
            "failures": failures,
        }
