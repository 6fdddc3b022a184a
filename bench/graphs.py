"""Every retrieval method on three graphs, each graph's methods in one run:

    python bench/graphs.py [--graphs hotpotqa,musique,musique-openie] [--methods ...] [--build-only]

- ``hotpotqa``: hotpotqa_dev100's 994 passages, spaCy extraction (no LLM), 100 questions.
- ``musique``: musique_dev50's 1,890 passages (identity: the record's ``id``; titles repeat), spaCy
  extraction, its 50 questions.
- ``musique-openie``: the same passages with the GPT-3.5 OpenIE entities and triples of openie.jsonl as
  bring-your-own extractions (only well-formed triples: three non-empty strings), same questions.

Each graph lives in a Neo4j instance of its own (``<prefix><graph>``: GRAPHSTRATA_BENCH_PREFIX, default
``bench-``; ports from GRAPHSTRATA_BENCH_PORT_BASE; heap GRAPHSTRATA_BENCH_HEAP), built once (ingest +
augment, timed: graphs-build-<graph>.json) and reused while its document count matches. One instance
runs at a time: it is stopped after its graph's questions and keeps its data, so the next run (e.g.
``--methods ketrag,ketrag-keyword --merge`` after a change) only measures. On an idle 2-core machine
the three builds take about 10 minutes and the questions of all rows a few minutes more.

Results: bench/results/graphs.{json,md}, and every question's row per graph and method in
graphs-questions.jsonl; graphs.md gives each method minus ``vector`` (Recall@5, Coverage) with a paired
bootstrap 95% interval over the questions (bench/common.py ``paired_bootstrap``: 10,000 resamples, seed 0).

Recall@k is measured on what the user gets: the passages (documents) of the items in the returned,
budget-packed context, in order of first appearance, each once; gold = supporting passages (HotpotQA
by title, MuSiQue by passage id). Coverage: the gold answer (or an alias) in that context.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import RESULTS, ROOT, clear_question_caches, machine, paired_bootstrap

from graphstrata.client import GraphStrata
from graphstrata.config import get_settings
from graphstrata.ingest.load import SourceDocument
from graphstrata.ingest.options import IngestOptions
from graphstrata.retrieval.base import available_methods

# Latency counts embedding the question: the on-disk vector cache would answer repeated runs' questions.
os.environ.setdefault("GRAPHSTRATA_EMBED_CACHE", "false")
#: the shared data sets: beside the checkout, or beside the directory of worktrees it is one of
SHARED = next((p for p in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data") if p.exists()), ROOT)
GRAPHS = {
    "hotpotqa": {"data": "hotpotqa_dev100", "slot": 0, "extractions": False},
    "musique": {"data": "musique_dev50", "slot": 1, "extractions": False},
    "musique-openie": {"data": "musique_dev50", "slot": 2, "extractions": True},
    # KET-RAG's own index (§5.1): hotpotqa with only the PageRank core chunks extracted (β 0.8)
    "hotpotqa-ketrag": {"data": "hotpotqa_dev100", "slot": 3, "extractions": False, "profile": "ketrag"},
}
#: Where the graphs' instances live: ``<prefix><graph>``, bolt port ``base + 2*slot``, HTTP port the
#: next one. An instance keeps its graph between runs (stopped, its data stays), so a second run on
#: the same prefix only measures.
INSTANCE_PREFIX = os.environ.get("GRAPHSTRATA_BENCH_PREFIX", "bench-")
PORT_BASE = int(os.environ.get("GRAPHSTRATA_BENCH_PORT_BASE", "17691"))
HEAP = os.environ.get("GRAPHSTRATA_BENCH_HEAP", "2g")
DEFAULT_GRAPHS = ["hotpotqa", "musique", "musique-openie"]
TOP_K, BUDGET = 10, 1000
DEFAULT_METHODS = [
    "vector",
    "fulltext",
    "noderag",
    "hipporag",
    "ketrag",
    "ketrag-keyword",
    "ketrag-skeleton",
    "darag",
    "e2graphrag",
    "sgrag",
    "fusion",
    "fusion-graph",
    "fusion-all",
    "auto",
    "ketrag@paper",
    "ketrag-keyword@paper",
    "ketrag-skeleton@paper",
    "e2graphrag@paper",
    "darag@paper",
    "sgrag@labels",
    "e2graphrag@all-terms",
]
#: Rows that are a method with parameters: the fusion of graph methods only (no baseline in it), and
#: the methods whose paper sets its own context size, at that size (docs/methods.md): KET-RAG's
#: 12,000-token budget, E2GraphRAG's 25 chunks (1,200 tokens each), DA-RAG's 4,800 tokens.
#: Methods given no item cap: their papers limit the context by tokens alone, and their items are
#: small and many (KET-RAG's entities, relations and sub-chunks; DA-RAG's reports; SG-RAG's facts).
UNCAPPED = {"ketrag", "ketrag-keyword", "ketrag-skeleton", "darag", "sgrag"}
VARIANTS = {
    "fusion-graph": ("fusion", {"methods": ["hipporag", "noderag", "ketrag", "darag"]}),
    # fusion's earlier default (now: the two PPR walks, hipporag and noderag)
    "fusion-all": ("fusion", {"methods": ["vector", "fulltext", "hipporag", "noderag", "ketrag", "e2graphrag"]}),
    "ketrag@paper": ("ketrag", {"budget": 12_000, "seed_mentions": False}),
    "ketrag-keyword@paper": ("ketrag-keyword", {"budget": 12_000}),
    "ketrag-skeleton@paper": ("ketrag-skeleton", {"budget": 12_000, "seed_mentions": False}),
    # KET-RAG and its channels under the common item cap too (ketrag splits it by lambda)
    "ketrag@topk": ("ketrag", {"top_k": TOP_K}),
    "ketrag-keyword@topk": ("ketrag-keyword", {"top_k": TOP_K}),
    "ketrag-skeleton@topk": ("ketrag-skeleton", {"top_k": TOP_K}),
    "e2graphrag@nofill": ("e2graphrag", {"fill": False}),  # local mode's chunks alone (the paper's output)
    # the paper's rankings by plain counts (the default weighs each query entity by its idf)
    "e2graphrag@uniform": ("e2graphrag", {"entity_weight": "uniform"}),
    "e2graphrag@paper-uniform": ("e2graphrag", {"top_k": 25, "budget": 30_000, "entity_weight": "uniform"}),
    # every mapped query entity, however common (the paper's); and other shares of the chunks above
    # which a query entity is left out (the default: 1%)
    "e2graphrag@all-terms": ("e2graphrag", {"max_df_share": 1.0}),
    "e2graphrag@df0.5": ("e2graphrag", {"max_df_share": 0.005}),
    "e2graphrag@df2": ("e2graphrag", {"max_df_share": 0.02}),
    "e2graphrag@df5": ("e2graphrag", {"max_df_share": 0.05}),
    "hipporag@nofacts": ("hipporag", {"fact_k": 0}),  # the nearest passage stands in for the facts
    "hipporag@relations": ("hipporag", {"relation_edges": True}),  # the walk over the fact edges too
    "e2graphrag@paper": ("e2graphrag", {"top_k": 25, "budget": 30_000}),
    "sgrag@labels": ("sgrag", {"passages": False}),  # the subgraph's labels and descriptions alone (§4.4)
    "darag@paper": ("darag", {"budget": 4_800}),
    "darag@text": ("darag", {"chunk_attribute": "text"}),  # L_C's attribute: the text's vector, not title + description
    "darag@wide": ("darag", {"coarse_candidates": 1000}),  # coarse EACS over 1,000 chunks nearest the query
    "darag@near50": ("darag", {"coarse_candidates": 50}),
    # the coarse range's bound in chunk-layer edges (default 10,000, chosen against these): its truss
    # decomposition and Q-Peel are most of a question's time on a dense layer
    "darag@edges20000": ("darag", {"coarse_edges": 20_000}),
    "darag@edges5000": ("darag", {"coarse_edges": 5_000}),
    "darag@reports_first": (
        "darag",
        {"layout": "reports_first"},
    ),  # the coarse range of the defaults before (50 chunks)
    # SG-RAG as the rows of graphs.json measured it (its answer count was then `top_k`, 10 here)
    "sgrag@answer_k10": ("sgrag", {"answer_k": 10}),
}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def open_instance(name: str) -> GraphStrata:
    from graphstrata.neo4j_local import Instance

    port = PORT_BASE + 2 * GRAPHS[name]["slot"]
    s = get_settings().model_copy(
        update={"instance": f"{INSTANCE_PREFIX}{name}", "bolt_port": port, "http_port": port + 1, "heap": HEAP}
    )
    Instance.from_settings(s).start()
    return GraphStrata(s)


def stop_instance(gs: GraphStrata) -> None:
    """Stop a graph's instance (its data stays for the next run): one Neo4j at a time in memory."""
    from graphstrata.neo4j_local import Instance

    gs.close()
    Instance.from_settings(gs.settings).stop()


def _openie_file(data: Path, out: Path) -> dict:
    """openie.jsonl as a bring-your-own extractions file; malformed triples dropped (and counted)."""
    kept = dropped = 0
    with out.open("w") as f:
        for r in _jsonl(data / "openie.jsonl"):
            good = []
            for t in r["extracted_triples"]:
                if isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) and x.strip() for x in t):
                    good.append(t)
                else:
                    dropped += 1
            kept += len(good)
            ents = [e for e in r["extracted_entities"] if isinstance(e, str) and e.strip()]
            line = {"id": r["id"], "title": r["title"], "text": r["text"], "entities": ents, "triples": good}
            f.write(json.dumps(line) + "\n")
    return {"triples_kept": kept, "triples_dropped": dropped}


def build(gs: GraphStrata, name: str) -> dict:
    """Ingest + augment the graph unless it is already there; the costs."""
    spec = GRAPHS[name]
    data = SHARED / spec["data"]
    corpus = _jsonl(data / "corpus.jsonl")
    have = gs.db.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"]
    meta_file = RESULTS / f"graphs-build-{name}.json"
    # the instance's own record that its build finished (ingest and augment): a run stopped half-way
    # leaves the documents in but no record, and is built again
    from graphstrata.neo4j_local import Instance

    done = Instance.from_settings(gs.settings).root / "bench-built.json"
    if have == len(corpus) and done.exists():
        return json.loads(done.read_text())
    gs.db.auto("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS")
    t = time.perf_counter()
    extra: dict = {}
    if spec["extractions"]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "openie.jsonl"
            extra = _openie_file(data, path)
            report = gs.ingest_extractions(path, progress=True)
    else:
        docs = [SourceDocument(source=r.get("id") or r["title"], title=r["title"], text=r["text"]) for r in corpus]
        options = IngestOptions(profile=spec.get("profile", "full"))
        report = gs.ingest_documents(docs, options, progress=True)
    ingest_s = time.perf_counter() - t
    t = time.perf_counter()
    stages = {r.stage: r.seconds for r in gs.augment(progress=True)}
    meta = {
        "documents": report.documents_new,
        "ingest_seconds": round(ingest_s, 1),
        "ingest_stages": report.seconds,
        "augment_seconds": round(time.perf_counter() - t, 1),
        "augment_stages": stages,
        "graph": gs.stats(),
        "ketrag_profile": report.ketrag,
        **extra,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta_file.write_text(json.dumps(meta, indent=2))
    done.write_text(json.dumps(meta, indent=2))
    return meta


def layer_density(gs: GraphStrata) -> dict:
    """How dense the similarity layers are: DA-RAG's chunk layer (CHUNK_RELATED, share of all chunk
    pairs) and NodeRAG's semantic edges (SEMANTIC per embedded T/S/A/H node; the paper's Table 4 has
    about 21.5), beside the KG's size."""
    row = gs.db.read_one(
        """
        CALL () { MATCH (c:Chunk) RETURN count(c) AS chunks }
        CALL () { MATCH (:Chunk)-[r:CHUNK_RELATED]->(:Chunk) RETURN count(r) AS chunk_edges }
        CALL () { MATCH (n) WHERE (n:Chunk OR n:SemanticUnit OR n:Attribute OR n:HighLevel) AND n.embedding IS NOT NULL
                  RETURN count(n) AS embedded }
        CALL () { MATCH ()-[r:SEMANTIC]->() RETURN count(r) AS semantic_edges }
        CALL () { MATCH (e:Entity) RETURN count(e) AS entities }
        CALL () { MATCH (:Entity)-[r:RELATED]->(:Entity) RETURN count(r) AS related }
        RETURN chunks, chunk_edges, embedded, semantic_edges, entities, related
        """
    )
    n = row["chunks"]
    return {
        **row,
        "chunk_layer_density": round(2 * row["chunk_edges"] / (n * (n - 1)), 4) if n > 1 else 0.0,
        # each stored SEMANTIC edge is one undirected pair: two endpoints
        "semantic_edges_per_node": round(2 * row["semantic_edges"] / row["embedded"], 2) if row["embedded"] else 0.0,
    }


def questions_of(name: str) -> list[dict]:
    data = SHARED / GRAPHS[name]["data"]
    out = []
    for q in _jsonl(data / "questions.jsonl"):
        gold = q.get("supporting_ids") or q.get("supporting_titles")
        answers = [q["answer"], *q.get("answer_aliases", [])]
        out.append({"id": q["id"], "question": q["question"], "gold": set(gold), "answers": answers})
    return out


def bench_params(method: str, **params) -> dict:
    """The benchmark's parameters for `method`: budget BUDGET, top_k TOP_K unless the method is
    UNCAPPED, then `params` (a variant's own)."""
    cap = {} if method in UNCAPPED else {"top_k": TOP_K}
    return {"budget": BUDGET} | cap | params


def plan(row: str) -> tuple[str, dict]:
    """A row of the table (a method or a VARIANTS name) as (method, its benchmark parameters)."""
    method, params = VARIANTS.get(row, (row, {}))
    return method, bench_params(method, **params)


def passages(gs: GraphStrata, name: str) -> dict[str, str]:
    """Chunk id -> the passage it belongs to, as gold names passages (HotpotQA by title, MuSiQue by id)."""
    key = "c.doc_title" if GRAPHS[name]["data"].startswith("hotpotqa") else "d.source"
    return {
        r["id"]: r["p"] for r in gs.db.read(f"MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk) RETURN c.id AS id, {key} AS p")
    }


def score(res, passage: dict[str, str], q: dict) -> dict:
    """Recall@2/5, answer coverage, tokens and passages of one result (no time)."""
    # what the user gets: the passages of the packed context, in order (RetrievalResult.chunk_ids)
    ranked = list(dict.fromkeys(passage[c] for c in res.chunk_ids() if c in passage))
    text = " ".join(i.text for i in res.items).lower()
    gold = q["gold"]
    return {
        "r2": len(gold & set(ranked[:2])) / len(gold),
        "r5": len(gold & set(ranked[:5])) / len(gold),
        "hit": any(a.lower() in text for a in q["answers"]),
        "yes_no": q["answers"][0].lower() in ("yes", "no"),
        "tokens": res.tokens,
        "passages": len(ranked),
    }


def measure(gs: GraphStrata, name: str, method: str, questions: list[dict], **params) -> list[dict]:
    passage = passages(gs, name)
    params = bench_params(method, **params)
    gs.retrieve(questions[0]["question"], method, **params)  # warm-up
    # each method pays for its own question embeddings and entities (earlier methods saw the same questions)
    clear_question_caches(gs)
    rows = []
    for q in questions:
        t = time.perf_counter()
        res = gs.retrieve(q["question"], method, **params)
        ms = (time.perf_counter() - t) * 1000
        rows.append({"id": q["id"]} | score(res, passage, q) | {"ms": round(ms, 1)})
    return rows


def summarize(rows: list[dict]) -> dict:
    ms = [r["ms"] for r in rows]
    cov = [r["hit"] for r in rows if not r["yes_no"]]
    return {
        "recall@2": round(float(np.mean([r["r2"] for r in rows])), 3),
        "recall@5": round(float(np.mean([r["r5"] for r in rows])), 3),
        "coverage": round(float(np.mean(cov)), 3) if cov else None,
        "mean_tokens": round(float(np.mean([r["tokens"] for r in rows])), 1),
        "mean_passages": round(float(np.mean([r["passages"] for r in rows])), 1),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
    }


def versus_vector(rows: dict[str, list[dict]], method: str) -> dict:
    """Paired bootstrap intervals (10,000 resamples, seed 0) of `method` minus vector on the same
    questions: Recall@5 over all questions, Coverage over those that are not yes/no."""
    base = {r["id"]: r for r in rows["vector"]}
    mine = [r for r in rows[method] if r["id"] in base]
    cov = [r for r in mine if not r["yes_no"]]
    return {
        "recall@5": paired_bootstrap([r["r5"] for r in mine], [base[r["id"]]["r5"] for r in mine]),
        "coverage": paired_bootstrap([float(r["hit"]) for r in cov], [float(base[r["id"]]["hit"]) for r in cov])
        if cov
        else None,
    }


def _ci(c: dict | None) -> str:
    return "-" if c is None else f"{c['diff']:+.3f} [{c['lo']:+.3f}, {c['hi']:+.3f}]"


def load_results(out: str) -> dict:
    """The results file with each graph's per-question rows (kept beside it, one JSON line per
    graph, method and question)."""
    out_file = RESULTS / f"{out}.json"
    results = json.loads(out_file.read_text()) if out_file.exists() else {"graphs": {}}
    per_q = RESULTS / f"{out}-questions.jsonl"
    if per_q.exists():
        for row in _jsonl(per_q):
            g = results["graphs"].get(row.pop("graph"))
            if g is not None:
                g.setdefault("per_question", {}).setdefault(row.pop("method"), []).append(row)
    return results


def save_results(out: str, results: dict) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    lines = []
    for name, g in results["graphs"].items():
        for m, rows in g.get("per_question", {}).items():
            lines += [json.dumps({"graph": name, "method": m} | r) for r in rows]
    (RESULTS / f"{out}-questions.jsonl").write_text("\n".join(lines) + "\n")
    slim = {"graphs": {n: {k: v for k, v in g.items() if k != "per_question"} for n, g in results["graphs"].items()}}
    (RESULTS / f"{out}.json").write_text(json.dumps(slim, indent=2))


def run(
    graphs: list[str],
    methods: list[str],
    build_only: bool,
    rerun: list[str] | None = None,
    stage_params: dict | None = None,
    out: str = "graphs",
    merge: bool = False,
) -> dict:
    results = load_results(out)
    for name in graphs:
        gs = open_instance(name)
        try:
            print(f"[{name}] building (or reusing) the graph", file=sys.stderr)
            meta = build(gs, name)
            if build_only:
                continue
            if rerun:  # a variant of the graph: some augment stages again, with other parameters
                reports = gs.augment(stages=rerun, progress=True, **(stage_params or {}))
                meta = meta | {"rerun": {r.stage: {"params": stage_params, **r.counts} for r in reports}}
            qs = questions_of(name)
            layers = layer_density(gs)
            old = results["graphs"].get(name, {}) if merge else {}
            rows, per_q = dict(old.get("methods", {})), dict(old.get("per_question", {}))
            for m in methods if "vector" in methods or "vector" in per_q else ["vector", *methods]:
                print(f"[{name}] {m}", file=sys.stderr)
                method, params = VARIANTS.get(m, (m, {}))
                per_q[m] = measure(gs, name, method, qs, **params)
                rows[m] = summarize(per_q[m])
                if m != "vector":
                    rows[m]["vs_vector"] = versus_vector(per_q, m)
                results["graphs"][name] = {
                    "build": meta,
                    "layers": layers,
                    "questions": len(qs),
                    "methods": rows,
                    "per_question": per_q,
                    "machine": machine(),
                }
                write_results(out, results)  # after every row: a long run stopped early keeps what it measured
        finally:
            stop_instance(gs)
    if not build_only:
        write_results(out, results, echo=True)
    return results


def write_results(out: str, results: dict, echo: bool = False) -> None:
    """graphs.json, the per-question file and graphs.md from `results`."""
    save_results(out, results)
    md = [
        "# Retrieval on three graphs (no LLM)" + (f": {out}" if out != "graphs" else ""),
        "",
        f"top_k {TOP_K} ({', '.join(sorted(UNCAPPED))}: no item cap), budget {BUDGET} tokens (rows `@paper`: the "
        "paper's own context size). Recall@k over "
        "the passages present in the returned, packed context, in order. Coverage: gold answer (or alias) in "
        "that context, yes/no questions excluded. Δ columns: the method minus `vector` on the same questions, "
        "with a paired bootstrap 95% interval (10,000 resamples of the questions, seed 0); per-question results: "
        f"{out}-questions.jsonl.",
        "",
    ]
    for name, g in results["graphs"].items():
        b = g["build"]
        md += [
            f"## {name} ({g['questions']} questions; {g['machine']['when']}, {g['machine']['cpus']} CPUs)",
            "",
            f"Build: ingest {b['ingest_seconds']} s, augment {b['augment_seconds']} s."
            + (f" Re-run: {json.dumps(b['rerun'])}." if b.get("rerun") else "")
            + (
                " KET-RAG profile: {core_chunks} of {chunks} chunks extracted (β {beta}, chunk KNN k {knn_k}); "
                "{llm_calls_saved} extraction calls and {prompt_tokens_saved} prompt tokens saved.".format(
                    **b["ketrag_profile"]
                )
                if b.get("ketrag_profile")
                else ""
            ),
            "",
            *(
                [
                    "Layers: {chunks} chunks, DA-RAG chunk layer {chunk_edges} edges (density {chunk_layer_density}); "
                    "NodeRAG {semantic_edges_per_node} semantic edges per embedded node; KG {entities} entities, "
                    "{related} RELATED edges.".format(**g["layers"]),
                    "",
                ]
                if "layers" in g
                else []
            ),
            "| method | Recall@2 | Recall@5 | ΔRecall@5 vs vector [95% CI] | Coverage | ΔCoverage [95% CI] "
            "| passages | tokens | p50 ms | p95 ms |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for m, r in g["methods"].items():
            cov = "-" if r["coverage"] is None else f"{r['coverage']:.3f}"
            vs = r.get("vs_vector") or {}
            md.append(
                f"| {m} | {r['recall@2']:.3f} | {r['recall@5']:.3f} | {_ci(vs.get('recall@5'))} | {cov} "
                f"| {_ci(vs.get('coverage'))} | {r['mean_passages']} "
                f"| {r['mean_tokens']:.0f} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} |"
            )
        md.append("")
    (RESULTS / f"{out}.md").write_text("\n".join(md))
    if echo:
        print("\n".join(md))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", default=",".join(DEFAULT_GRAPHS), help="comma-separated: " + ", ".join(GRAPHS))
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS), help="comma-separated method names")
    ap.add_argument("--build-only", action="store_true", help="build (or reuse) the graphs, run no questions")
    ap.add_argument(
        "--rerun", default="", help="augment stages to run again first (comma-separated), e.g. semantic_edges"
    )
    ap.add_argument("--param", action="append", default=[], help="KEY=VALUE parameter for the --rerun stages")
    ap.add_argument("--out", default="graphs", help="results file stem in bench/results (default: graphs)")
    ap.add_argument(
        "--merge",
        action="store_true",
        help="keep the graph's other methods' rows from the results file (measure only --methods again)",
    )
    a = ap.parse_args()
    known = set(available_methods()) | set(VARIANTS)
    bad = [m for m in a.methods.split(",") if m not in known]
    if bad:
        ap.error(f"unknown methods {bad}")
    stage_params = dict(p.split("=", 1) for p in a.param)
    rerun = [s for s in a.rerun.split(",") if s]
    run(a.graphs.split(","), a.methods.split(","), a.build_only, rerun, stage_params, a.out, a.merge)
