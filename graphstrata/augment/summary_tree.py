"""E2GraphRAG summary tree (seed 003, §3.1): per document, every run of ``g`` consecutive chunks is
summarised, then every run of ``g`` consecutive summaries, until ``g`` or fewer nodes remain.

Shape. Chunks are level 0, in document order. Level 1 always exists (the authors' ``build_tree``
summarises the leaves first, and the paper's cost analysis, Appendix D, counts the non-leaf levels
as the geometric series n/g, n/g², …); level L+1 has ``ceil(|level L| / g)`` nodes, and the tree
stops at the first level with ``g`` or fewer nodes ("until only g or fewer segments remain"): a
single root when n ≤ g, else between 2 and ``g`` top nodes.
A document of a single chunk gets no summary by default (its summary would restate the chunk;
``summarize_single_chunk=True`` makes one, as the authors' code does).

``g``. The paper leaves ``g`` symbolic (§3.1, Appendix D); the authors' configuration
(``configs/example_config.yaml``: ``merge_num: 5``, also the default of their retriever) uses 5,
our default. Override with ``AugmentContext.params.g``.

Summaries. With an LLM (``ctx.llm``), the authors' minimal prompt (task instruction only, no
few-shot examples; "about 1000 tokens") through ``ctx.llm.chat(stage="summary")``; the client's
cache makes a re-run free. Without one (no-LLM mode), an **extractive** summary: the group's text
(adjacent chunks joined with their token overlap removed) is split into sentences (spaCy's rule
sentencizer), each sentence is embedded with ``ctx.texts`` (the graph's precision), and the sentences closest to the
group's mean sentence vector (embedding centrality: cosine to the centroid) are kept, best first,
while they fit ``summary_tokens`` (cl100k), then printed in document order. Higher levels do the
same over their children's sentences, so a summary is always a subset of its children's text.

Storage: ``(:Summary {id, level, ordinal, text, embedding, doc_id, doc_sha, doc_title,
children_hash, n_children, extractor, tokens})-[:SUMMARIZES {ordinal}]->(:Chunk|:Summary)``; the
embedding is of ``"{doc title}\\n{summary}"``, as chunks embed ``"{doc title}\\n{text}"``.

Idempotence. A summary's id hashes its document, its children's ids (``children_hash``), and the
summariser (``extractor``: ``extractive:<tokens>`` or ``llm:<model>:<tokens>``). Chunk ids are
content hashes, so the whole tree's ids follow from a document's chunk ids without summarising
anything: a re-run compares them with the stored tree and touches only what differs (a changed
document's unchanged leading groups are kept; its stale nodes deleted). Summaries of deleted
documents are removed at the start of every run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from graphstrata.augment import AugmentContext, StageReport, stage
from graphstrata.cypher import query
from graphstrata.summarize import central_texts
from graphstrata.text.names import hid
from graphstrata.text.tokens import count_tokens, join_overlapping

BATCH_CHUNKS = 2000  # chunks of the documents summarised (and written) together

LEAF_PROMPT = (
    "You summarize part of a document. Summarize the content below: keep the main entities, events, "
    "relations and important details; add nothing that is not in the content. Write about {tokens} tokens "
    "at most.\n\nContent:\n{content}\n\nSummary:"
)
SUMMARY_PROMPT = (
    "You are given summaries of consecutive parts of a document. Summarize them into one summary: keep "
    "the main entities, events and relations; add nothing that is not in them. Write about {tokens} tokens "
    "at most.\n\nSummaries:\n{content}\n\nSummary:"
)


def children_hash(children: Sequence[str]) -> str:
    return hid("children", *children)


def summary_id(doc_id: str, children: Sequence[str], extractor: str) -> str:
    return hid("summary", doc_id, children_hash(children), extractor)


def level_sizes(n: int, g: int, summarize_single_chunk: bool = False) -> list[int]:
    """Number of summary nodes per level (1, 2, …) for ``n`` chunks and fan-in ``g``."""
    if g < 2:
        raise ValueError("g must be at least 2")
    if n == 0 or (n == 1 and not summarize_single_chunk):
        return []
    sizes = [math.ceil(n / g)]
    while sizes[-1] > g:
        sizes.append(math.ceil(sizes[-1] / g))
    return sizes


@dataclass
class Node:
    id: str
    level: int
    ordinal: int
    children: list[str]
    text: str | None = None


@dataclass
class Plan:
    """The tree a document should have, level by level, derived from its chunk ids alone."""

    doc_id: str
    sha256: str
    title: str
    overlap: int
    chunks: list[str]
    extractor: str
    levels: list[list[Node]] = field(default_factory=list)

    @property
    def ids(self) -> set[str]:
        return {n.id for lv in self.levels for n in lv}

    @property
    def edges(self) -> int:
        return sum(len(n.children) for lv in self.levels for n in lv)


def plan_tree(
    doc_id: str,
    chunks: list[str],
    g: int,
    extractor: str,
    summarize_single_chunk: bool = False,
    *,
    sha256: str = "",
    title: str = "",
    overlap: int = 0,
) -> Plan:
    """The ids and children of a document's summaries, level by level (nothing is summarised)."""
    plan = Plan(doc_id, sha256, title, overlap, chunks, extractor)
    below = chunks
    for level, size in enumerate(level_sizes(len(chunks), g, summarize_single_chunk), start=1):
        nodes = []
        for i in range(size):
            kids = below[i * g : (i + 1) * g]
            nodes.append(Node(summary_id(doc_id, kids, extractor), level, i, kids))
        plan.levels.append(nodes)
        below = [n.id for n in nodes]
    return plan


# --- text helpers ------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _sentencizer():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.max_length = 10_000_000
    return nlp


def sentences(text: str) -> list[str]:
    out: list[str] = []
    for s in _sentencizer()(text).sents:
        t = " ".join(s.text.split())
        if t and t not in out:
            out.append(t)
    return out


def extractive_summary(sents: list[str], vecs: np.ndarray, max_tokens: int) -> str:
    """The most central sentences (cosine to the centroid of all sentence vectors), kept while they
    fit ``max_tokens``, in their original order."""
    return " ".join(central_texts(sents, vecs, max_tokens, max_items=None, cut=True))


# --- the stage ---------------------------------------------------------------------------------


def _relink(tx, plan: Plan, keep: set[str]) -> None:
    """Kept summaries: SUMMARIZES edges to their (possibly re-created) children, current stamp."""
    if not keep:
        return
    rows = [{"id": n.id, "children": n.children} for lv in plan.levels for n in lv if n.id in keep]
    tx.run(query("e2graphrag.link_summaries"), rows=rows).consume()
    tx.run(query("e2graphrag.stamp_summaries"), ids=list(keep), sha=plan.sha256, title=plan.title).consume()


@stage("summary_tree", order=70)
def summary_tree(ctx: AugmentContext) -> StageReport:
    """Build or update every document's summary tree; see the module docstring."""
    g = ctx.params.g
    max_tokens = ctx.params.summary_tokens
    single = ctx.params.summarize_single_chunk
    if g < 2:
        raise ValueError("summary_tree: g must be at least 2")
    llm = ctx.llm
    extractor = f"llm:{llm.chat_model}:{max_tokens}" if llm is not None else f"extractive:{max_tokens}"
    db = ctx.db
    report = StageReport(stage="summary_tree", notes={"g": g, "summariser": extractor, "summary_tokens": max_tokens})
    orphans = db.write(query("e2graphrag.delete_orphan_summaries"))[0]["deleted"]
    stored = db.read(query("e2graphrag.existing_summaries"))
    existing = {r["doc_id"]: set(r["ids"]) for r in stored}
    stamps = {r["doc_id"]: (r["shas"], r["edges"]) for r in stored}
    docs = db.read(query("e2graphrag.document_chunk_ids"))
    plans: list[Plan] = []
    kept = deleted = unchanged = 0
    for d in docs:
        plan = plan_tree(
            d["id"], d["chunks"], g, extractor, single, sha256=d["sha256"], title=d["title"], overlap=d["overlap"]
        )
        have = existing.get(d["id"], set())
        if plan.ids == have:
            unchanged += 1
            if have and stamps[d["id"]] != ([d["sha256"]], plan.edges):
                # a re-written document with the very same chunks: relink the tree, move the stamp
                db.write_tx(lambda tx, plan=plan: _relink(tx, plan, plan.ids))
            continue
        plans.append(plan)
        kept += len(plan.ids & have)
    # documents without chunks any more keep no tree
    for doc_id in set(existing) - {d["id"] for d in docs}:
        db.write(query("e2graphrag.delete_summaries"), ids=list(existing[doc_id]))
        deleted += len(existing[doc_id])

    failures: list[str] = []
    created = 0
    # documents in batches of about BATCH_CHUNKS chunks: bounded memory, and what is done is written
    batches: list[list[Plan]] = [[]]
    for plan in plans:
        if batches[-1] and sum(len(x.chunks) for x in batches[-1]) + len(plan.chunks) > BATCH_CHUNKS:
            batches.append([])
        batches[-1].append(plan)
    for batch in batches:
        if not batch:
            continue
        built = _summarise(ctx, batch, existing, max_tokens, failures)
        for plan in batch:
            if plan.doc_id not in built:
                continue
            have = existing.get(plan.doc_id, set())
            stale = list(have - plan.ids)
            new_rows = built[plan.doc_id]

            def work(tx, plan=plan, stale=stale, rows=new_rows, have=have) -> None:
                if stale:
                    tx.run(query("e2graphrag.delete_summaries"), ids=stale).consume()
                if rows:
                    tx.run(query("e2graphrag.write_summaries"), rows=rows).consume()
                    tx.run(query("e2graphrag.link_summaries"), rows=rows).consume()
                _relink(tx, plan, plan.ids & have)

            db.write_tx(work)
            created += len(new_rows)
            deleted += len(stale)
    if created or deleted or orphans:
        db.write(query("meta.touch"))
    report.counts = {
        "documents": len(docs),
        "documents_unchanged": unchanged,
        "documents_rebuilt": len(plans) - len(failures),
        "summaries_created": created,
        "summaries_kept": kept,
        "summaries_deleted": deleted + orphans,
        "orphans_deleted": orphans,
        "failed_documents": len(failures),
    }
    if failures:
        report.notes["failures"] = failures
    return report


def _summarise(
    ctx: AugmentContext, plans: list[Plan], existing: dict[str, set[str]], max_tokens: int, failures: list[str]
) -> dict[str, list[dict]]:
    """Texts and embeddings of the summaries to create, level by level across documents.

    Returns ``{doc_id: rows for write_summaries}`` for the documents that succeeded.
    """
    db = ctx.db
    # texts of every child we may need: chunks of level-1 nodes to create, kept summaries
    need: set[str] = set()
    for p in plans:
        have = existing.get(p.doc_id, set())
        for lv in p.levels:
            for n in lv:
                if n.id not in have:
                    need.update(c for c in n.children if c in have or n.level == 1)
    texts: dict[str, str] = {}
    need_list = sorted(need)
    for i in range(0, len(need_list), 1000):
        for r in db.read(query("e2graphrag.node_texts"), ids=need_list[i : i + 1000]):
            texts[r["id"]] = r["text"]

    rows: dict[str, list[dict]] = {p.doc_id: [] for p in plans}
    failed: set[str] = set()
    sent_vecs: dict[str, np.ndarray] = {}
    depth = max((len(p.levels) for p in plans), default=0)
    for level in range(1, depth + 1):
        jobs: list[tuple[Plan, Node, str]] = []
        for p in plans:
            if p.doc_id in failed or level > len(p.levels):
                continue
            have = existing.get(p.doc_id, set())
            for n in p.levels[level - 1]:
                if n.id in have:
                    continue
                kids = [texts[c] for c in n.children]
                content = join_overlapping(kids, p.overlap) if level == 1 else "\n\n".join(kids)
                jobs.append((p, n, content))
        if not jobs:
            continue
        if ctx.llm is not None:
            from graphstrata.llm import LLMError

            prompts = [
                (LEAF_PROMPT if n.level == 1 else SUMMARY_PROMPT).format(tokens=max_tokens, content=c)
                for _, n, c in jobs
            ]
            with ctx.tracker.stage(f"summaries level {level}", len(prompts)) as advance:
                results = ctx.llm.map(
                    # "about {tokens} tokens" asked; the reply capped at twice that
                    lambda prompt: ctx.llm.chat(
                        [{"role": "user", "content": prompt}], stage="summary", max_tokens=2 * max_tokens
                    ),
                    prompts,
                    return_exceptions=True,
                    progress=lambda done, total: advance(1),
                )
            for (p, n, _), res in zip(jobs, results, strict=True):
                if isinstance(res, BaseException):
                    if not isinstance(res, LLMError):
                        raise res
                    if p.doc_id not in failed:
                        failures.append(f"{p.title}: {res}")
                    failed.add(p.doc_id)
                    continue
                n.text = res.strip()
        else:
            per_job = [sentences(c) for _, _, c in jobs]
            todo = sorted({s for ss in per_job for s in ss if s not in sent_vecs})
            if todo:
                with ctx.tracker.stage(f"sentences level {level}", len(todo)) as advance:
                    for s, v in zip(todo, ctx.texts.embed(todo, advance), strict=True):
                        sent_vecs[s] = v
            for (_, n, _), ss in zip(jobs, per_job, strict=True):
                vecs = np.stack([sent_vecs[s] for s in ss]) if ss else np.zeros((0, ctx.texts.dim))
                n.text = extractive_summary(ss, vecs, max_tokens)
        done = [(p, n) for p, n, _ in jobs if p.doc_id not in failed]
        with ctx.tracker.stage(f"summary vectors level {level}", len(done)) as advance:
            vecs = ctx.texts.embed([f"{p.title}\n{n.text}" for p, n in done], advance) if done else []
        for (p, n), v in zip(done, vecs, strict=True):
            texts[n.id] = n.text or ""
            rows[p.doc_id].append(
                {
                    "id": n.id,
                    "level": n.level,
                    "ordinal": n.ordinal,
                    "text": n.text,
                    "doc_id": p.doc_id,
                    "doc_sha": p.sha256,
                    "doc_title": p.title,
                    "children": n.children,
                    "children_hash": children_hash(n.children),
                    "extractor": p.extractor,
                    "tokens": count_tokens(n.text or ""),
                    "embedding": np.asarray(v, dtype=float).tolist(),
                }
            )
    return {d: r for d, r in rows.items() if d not in failed}
