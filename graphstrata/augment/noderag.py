"""NodeRAG graph augmentation (Xu et al., arXiv:2504.11544, §2.3, Appendix C.2-C.3) with GDS.

- `important_entities` — Algorithm 1: N* = K(G1) ∪ B(G1), k-core with
  k_default = floor(ln|V| * sqrt(mean degree)) and sampled betweenness (k = 10 samples) above
  mean * floor(log10 |V|); each important entity gets an Attribute (A) summarising its relations
  and semantic units.
- `communities` — Leiden on G2; per community its high-level elements (H), each with its Overview
  title (O): with a model, the elements it extracts from all the community's statements; offline, one
  extractive H titled by the community's best-connected entity names.
- `semantic_matching` — Algorithm 2: K-means (K = sqrt|S ∪ A ∪ H|) on embeddings; GROUPS edges
  from each H to the S/A nodes of its community that share its cluster.

G1 is the heterograph of entities (N), relations (R) and semantic units (S); G2 adds attributes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from graphstrata.augment import AugmentContext, StageReport, stage
from graphstrata.cypher import query
from graphstrata.gds import GDS
from graphstrata.llm import ExtractionFailed
from graphstrata.progress import Advance
from graphstrata.summarize import prompt_statements, summarize
from graphstrata.text.names import hid

G1_NODES = ["Entity", "SemanticUnit", "Relation"]
G1_RELS = ["MENTIONS", "SUBJECT_OF", "OBJECT"]  # undirected; MENTIONS S -> N (chunks are not in G1)
ATTRIBUTE_PROMPT = (
    "Write a short attribute summary of the entity '{name}' (2-3 sentences) from these statements about it."
)
HIGH_LEVEL_PROMPT = "Summarize the core idea shared by these statements in two or three sentences."
#: §2.3.2: "an LLM is utilized to analyze the aggregated content, extracting high-level elements (H) that
#: encapsulate the core information of the community, such as summaries, sentiment analysis, and other
#: significant insights", each with a keyword title, the high-level overview (O).
HIGH_LEVEL_ELEMENTS_PROMPT = """\
Below are statements from one community of a knowledge graph. Extract its high-level elements: the
core ideas, themes, summaries and other significant insights the statements support together, each
as a self-contained description of 1-3 sentences with a short keyword title (at most six words).
Give {low} to {high} elements, fewer when the statements hold fewer distinct ideas. Reply with one
JSON object: {{"elements": [{{"title": "...", "description": "..."}}]}}

Statements:
{statements}"""
#: Offline, without a model: the statements an extractive attribute is chosen from (each kind, by id).
OFFLINE_ATTRIBUTE_ITEMS = 12
#: With a model: the first 1,000 of each kind by id (a uniform sample: ids are hashes), which summarize()
#: cuts to the prompt's token limit, most central first
MODEL_ATTRIBUTE_ITEMS = 1000
#: important entities whose statements are read, summarised and written together (offline, with a model)
ATTRIBUTE_BATCH, MODEL_ATTRIBUTE_BATCH = 500, 50
#: communities read together, and the statements a community's high-level elements are made from: the
#: first COMMUNITY_TEXTS by id, a uniform sample (ids are hashes) — a community of the synthetic 10,000
#: passage corpus held thousands, and what a summary picks (its most central statements, up to the
#: prompt's token limit) is found among a sample as among all of them
COMMUNITY_BATCH, COMMUNITY_TEXTS = 20, 1000


class HighLevelElement(BaseModel):
    title: str = Field(min_length=1, max_length=200)
    description: str = Field(min_length=1)


class HighLevelElements(BaseModel):
    elements: list[HighLevelElement] = Field(min_length=1, max_length=8)


def k_default(n_nodes: int, n_undirected_rels: int) -> int:
    """floor(ln|V| * sqrt(mean degree)) (Appendix C.2, Algorithm 1, step 1)."""
    if n_nodes < 2:
        return 0
    mean_degree = 2 * n_undirected_rels / n_nodes
    return math.floor(math.log(n_nodes) * math.sqrt(mean_degree))


def select_important(cores: dict[Any, int], betweenness: dict[Any, float], n_nodes: int, k: int) -> set[Any]:
    """N* = {core >= k} ∪ {b > mean(b) * floor(log10 |V|)} among the nodes of `cores`; `betweenness`
    covers all nodes of G1 (keys: ids or GDS node ids)."""
    mean_b = sum(betweenness.values()) / max(n_nodes, 1)
    scale = math.floor(math.log10(max(n_nodes, 1)))
    k_nodes = {e for e, c in cores.items() if c >= k}
    b_nodes = {e for e in cores if betweenness.get(e, 0.0) > mean_b * scale}
    return k_nodes | b_nodes


@stage("important_entities", order=30)
def important_entities(ctx: AugmentContext) -> StageReport:
    gds = GDS(ctx.db, ctx.settings)
    ctx.db.auto(query("augment.delete_label"), label="Attribute")
    ctx.db.write(query("augment.clear_important"))
    # projected in id order, betweenness single-threaded: the sampled sources and the sums do not depend
    # on the store's node order or on thread timing, so re-runs select the same entities
    with gds.temporary(gds.project_ordered("noderag_g1", G1_NODES, G1_RELS, force=True)) as p:
        if p.nodes == 0:
            return StageReport(stage="important_entities", counts={"important": 0})
        k = k_default(p.nodes, p.rels // 2)  # an undirected projection stores each edge twice
        kc = gds.client.kcore.stream(p.graph, concurrency=gds.concurrency)
        samples = ctx.params.betweenness_samples  # Algorithm 1: betweenness_centrality(G1, k=10)
        bc = gds.client.betweenness.stream(
            p.graph, sampling_size=min(int(samples), p.nodes) if samples else None, sampling_seed=42, concurrency=1
        )
        # chosen by GDS node id over all of G1, then only the chosen entities are read back
        cores = dict(zip(kc["nodeId"].tolist(), kc["coreValue"].tolist(), strict=True))
        betweenness = dict(zip(bc["nodeId"].tolist(), map(float, bc["score"].tolist()), strict=True))
        chosen = select_important(cores, betweenness, p.nodes, k)
        found = gds.resolve(query("augment.important_entities"), ["id", "node"], nodeId=sorted(chosen))
    node_of = {r["id"]: r["node"] for r in found}
    written = _attributes(
        ctx,
        sorted(node_of),
        {i: cores[n] for i, n in node_of.items()},
        {i: betweenness.get(n, 0.0) for i, n in node_of.items()},
    )
    return StageReport(
        stage="important_entities",
        counts={"g1_nodes": p.nodes, "important": len(node_of), "attributes": written},
        notes={"k_default": k, "scale": math.floor(math.log10(max(p.nodes, 1)))},
    )


def _attributes(ctx: AugmentContext, ids: list[str], cores: dict, betweenness: dict) -> int:
    """Summarise, embed and write each important entity's Attribute, a batch of entities at a time: their
    statements (with vectors) are only held for one batch, as a hub's can be thousands."""
    # the model reads the entity's statements (most central first, up to a token limit); the
    # extractive substitute keeps choosing among the first OFFLINE_ATTRIBUTE_ITEMS of each kind
    offline = ctx.llm is None
    cap = OFFLINE_ATTRIBUTE_ITEMS if offline else MODEL_ATTRIBUTE_ITEMS
    batch = ATTRIBUTE_BATCH if offline else MODEL_ATTRIBUTE_BATCH
    written = 0
    with (
        ctx.tracker.stage("attribute summaries", len(ids)) as summarised,
        ctx.tracker.stage("attribute vectors", len(ids)) as embedded,
    ):
        for start in range(0, len(ids), batch):
            contexts = ctx.db.read(query("augment.entity_context"), ids=ids[start : start + batch], cap=cap)
            groups = [c["relations"] + c["units"] for c in contexts]
            prompts = [ATTRIBUTE_PROMPT.format(name=c["name"]) for c in contexts]
            summaries = _summaries(ctx, groups, prompts, "attribute", summarised)
            rows = [
                {
                    "entity": c["id"],
                    "id": hid("attribute", c["id"]),
                    "text": f"{c['name']}: {text}".strip(),
                    "extractor": extractor,
                    "core": cores.get(c["id"]),
                    "betweenness": betweenness.get(c["id"]),
                }
                for c, (text, extractor) in zip(contexts, summaries, strict=True)
            ]
            _embed_rows(ctx, rows, "attribute vectors", embedded)
            ctx.db.write_batches(query("augment.write_attributes"), rows, batch_size=500)
            written += len(rows)
    return written


def _summaries(
    ctx: AugmentContext, groups: list[list[dict]], prompts: list[str], step: str, advance: Advance | None = None
) -> list[tuple[str, str]]:
    """One summary per group of {text, embedding} items: the LLM's (concurrent calls) or extractive.
    ``advance``: the progress of a stage the caller holds open (else one of its own, ``<step> summaries``).

    Vectors come from the stored embeddings; the few items without one are embedded together, in
    one call for all the groups rather than one per group."""
    missing = list(dict.fromkeys(i["text"] for g in groups for i in g if i["text"] and not i.get("embedding")))
    fresh = dict(zip(missing, ctx.texts.embed(missing), strict=True)) if missing else {}

    def one(k: int) -> tuple[str, str]:
        vec_of = {i["text"]: i.get("embedding") or fresh[i["text"]] for i in groups[k] if i["text"]}
        texts = list(vec_of)
        vectors = np.array([vec_of[t] for t in texts], dtype=np.float32) if texts else None
        return summarize(texts, ctx.texts, ctx.llm, prompts[k], step, vectors=vectors)

    with _progress(ctx, f"{step} summaries", len(groups), advance) as step_done:
        if ctx.llm is None:
            out = []
            for k in range(len(groups)):
                out.append(one(k))
                step_done(1)
            return out
        return ctx.llm.map(one, range(len(groups)), progress=lambda done, total: step_done(1))


@contextmanager
def _progress(ctx: AugmentContext, name: str, total: int, advance: Advance | None) -> Iterator[Advance]:
    """``advance`` when the caller holds its stage open, else a stage of its own."""
    if advance is not None:
        yield advance
        return
    with ctx.tracker.stage(name, total) as own:
        yield own


def _embed_rows(ctx: AugmentContext, rows: list[dict], step: str, advance: Advance | None = None) -> None:
    with _progress(ctx, step, len(rows), advance) as step_done:
        vecs = ctx.texts.embed([r["text"] for r in rows], step_done)
    for r, v in zip(rows, vecs, strict=True):
        r["embedding"] = v.tolist()


@stage("communities", order=40)
def communities(ctx: AugmentContext) -> StageReport:
    gds = GDS(ctx.db, ctx.settings)
    for label in ("Overview", "HighLevel", "Community"):
        ctx.db.auto(query("augment.delete_label"), label=label)
    # in id order: Leiden's seeded, single-threaded run then sees the same graph on every re-run, although
    # important_entities re-creates the Attribute nodes (new store ids, another native order)
    with gds.temporary(
        gds.project_ordered("noderag_g2", [*G1_NODES, "Attribute"], [*G1_RELS, "HAS_ATTRIBUTE"], force=True)
    ) as p:
        if p.nodes == 0:
            return StageReport(stage="communities", counts={"communities": 0})
        # seeded and single-threaded: reproducible
        leiden = gds.client.leiden.stream(p.graph, random_seed=42, concurrency=1)
        rows = gds.resolve(
            query("augment.leiden_members"),
            ["id", "label", "community"],
            nodeId=leiden["nodeId"],
            communityId=leiden["communityId"],
        )
    members: dict[int, list[dict]] = defaultdict(list)
    for r in rows:
        members[r["community"]].append(r)
    # A community's id is a hash of its members, so ids do not depend on Leiden's numbering.
    comm_rows, member_rows = [], []
    for ms in members.values():
        cid = hid("community", *sorted(m["id"] for m in ms))
        comm_rows.append({"id": cid, "size": len(ms)})
        member_rows += [{"community": cid, "id": m["id"]} for m in ms]
    ctx.db.write_batches(query("augment.write_communities"), comm_rows)
    ctx.db.write_batches(query("augment.write_membership"), member_rows)
    del rows, members, member_rows
    written = 0
    ids = [c["id"] for c in comm_rows]
    # a batch of communities at a time: their statements (with vectors) are only held for one batch
    for start in range(0, len(ids), COMMUNITY_BATCH):
        hl_rows = _high_level(ctx, ids[start : start + COMMUNITY_BATCH], ctx.params.min_community_texts)
        ctx.db.write_batches(query("augment.write_high_level"), hl_rows, batch_size=500)
        written += len(hl_rows)
    return StageReport(stage="communities", counts={"communities": len(comm_rows), "high_level": written})


def _high_level(ctx: AugmentContext, community_ids: list[str], min_texts: int) -> list[dict]:
    groups = ctx.db.read(query("augment.community_members"), ids=community_ids, cap=COMMUNITY_TEXTS)
    groups = [g for g in groups if len(g["texts"]) >= min_texts]
    if ctx.llm is not None:
        rows = _high_level_elements(ctx, groups, ctx.params.max_high_level)
    else:  # one extractive H per community; keyphrase title: its best-connected entity names
        summaries = _summaries(ctx, [g["texts"] for g in groups], [HIGH_LEVEL_PROMPT] * len(groups), "high_level")
        rows = [
            _high_level_row(g, 0, text, ", ".join(g["names"][:3]) or text[:60], extractor)
            for g, (text, extractor) in zip(groups, summaries, strict=True)
        ]
    _embed_rows(ctx, rows, "high_level vectors")
    return rows


def _high_level_row(group: dict, i: int, text: str, title: str, extractor: str) -> dict:
    # the first element keeps the id a community's single H has always had
    suffix = (i,) if i else ()
    return {
        "community": group["id"],
        "id": hid("high_level", group["id"], *suffix),
        "overview_id": hid("overview", group["id"], *suffix),
        "text": text,
        "title": title,
        "extractor": extractor,
    }


def _high_level_elements(ctx: AugmentContext, groups: list[dict], most: int) -> list[dict]:
    """§2.3.2 with a model: per community, its high-level elements (H) with their titles (O), from all
    its statements (most central first, up to the prompt's token limit); one call per community."""
    llm = ctx.llm

    def ask(g: dict) -> HighLevelElements:
        texts = [t["text"] for t in g["texts"] if t["text"]]
        vecs = [t.get("embedding") for t in g["texts"] if t["text"]]
        vectors = np.array(vecs, dtype=np.float32) if texts and all(v is not None for v in vecs) else None
        statements = "\n".join(f"- {t}" for t in prompt_statements(texts, vectors))
        prompt = HIGH_LEVEL_ELEMENTS_PROMPT.format(low=1, high=most, statements=statements)
        return llm.chat_json([{"role": "user", "content": prompt}], HighLevelElements, stage="high_level")

    with ctx.tracker.stage("high_level elements", len(groups)) as advance:
        answers = llm.map(ask, groups, progress=lambda done, total: advance(1), return_exceptions=True)
    rows, failed = [], []
    for g, answer in zip(groups, answers, strict=True):
        if isinstance(answer, ExtractionFailed):
            failed.append(g)
        elif isinstance(answer, BaseException):
            raise answer
        else:
            rows += [
                _high_level_row(g, i, e.description.strip(), e.title.strip(), "llm")
                for i, e in enumerate(answer.elements[:most])
            ]
    if failed:  # a community whose replies stayed invalid gets the extractive element, not none
        plain = AugmentContext(ctx.db, ctx.embedder, ctx.settings, params=ctx.params)
        texts = _summaries(plain, [g["texts"] for g in failed], [HIGH_LEVEL_PROMPT] * len(failed), "high_level")
        rows += [
            _high_level_row(g, 0, text, ", ".join(g["names"][:3]) or text[:60], extractor)
            for g, (text, extractor) in zip(failed, texts, strict=True)
        ]
    return rows


@stage("semantic_matching", order=50)
def semantic_matching(ctx: AugmentContext) -> StageReport:
    gds = GDS(ctx.db, ctx.settings)
    ctx.db.write(query("augment.delete_groups"))
    # in id order: K-means' seeded initial centroids are picked by GDS node number
    labels = ["SemanticUnit", "Attribute", "HighLevel"]
    sample = ctx.params.kmeans_sample
    with gds.temporary(gds.project_ordered("noderag_kmeans", labels, embedding=True, force=True)) as p:
        if p.nodes < 2:
            return StageReport(stage="semantic_matching", counts={"groups": 0})
        k = max(1, round(math.sqrt(p.nodes)))  # Algorithm 2, step 2: K = sqrt(|V_{S,A,H}|)
        fit = {"random_seed": 42, "concurrency": 1, "max_iterations": 50}
        if sample is not None and p.nodes > sample:
            # Lloyd's iterations cost nodes x K = n^1.5 per iteration: above `kmeans_sample` nodes the
            # centroids are fitted on a seeded sample of that many (project_ordered's first nodes), and
            # every node is then assigned to its nearest one — a single nodes x K pass
            sampled = gds.project_ordered("noderag_kmeans_sample", labels, embedding=True, force=True, limit=sample)
            with gds.temporary(sampled) as s:
                centroids = gds.client.kmeans.stats(s.graph, node_property="embedding", k=k, **fit)["centroids"]
            fit = {"seed_centroids": centroids, "concurrency": 1, "max_iterations": 1}
        km = gds.client.kmeans.stream(p.graph, node_property="embedding", k=k, **fit)
        rows = gds.resolve(
            query("augment.kmeans_members"),
            ["id", "label", "cluster", "community"],
            nodeId=km["nodeId"],
            communityId=km["communityId"],
        )
    cell: dict[tuple[str, int], dict[str, list[str]]] = defaultdict(lambda: {"h": [], "sa": []})
    for r in rows:
        if r["community"] is None:
            continue
        cell[(r["community"], r["cluster"])]["h" if r["label"] == "HighLevel" else "sa"].append(r["id"])
    groups = [{"h": h, "n": n} for c in cell.values() for h in c["h"] for n in c["sa"]]
    ctx.db.write_batches(query("augment.write_groups"), groups)
    fitted_on = p.nodes if sample is None else min(sample, p.nodes)
    return StageReport(
        stage="semantic_matching", counts={"clusters": k, "groups": len(groups)}, notes={"fitted_on": fitted_on}
    )
