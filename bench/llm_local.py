"""The local model (`graphstrata llm start`: llama.cpp + SmolLM2-135M-Instruct) building the graph, beside spaCy:

    python bench/llm_local.py [--docs N] [--questions N] [--port 17754] [--bolt-port 17755]

On samples/corpus (HotpotQA passages), one run:

- **extraction**: per chunk, LLM calls, prompt and completion tokens, seconds, valid on the first
  reply / valid after re-asks / failed, entities and relations kept — next to spaCy's on the same
  chunks (spaCy: seconds, entities, relations);
- **retrieval**: every method's Recall@5 and Coverage (as bench/graphs.py measures them) on the
  LLM-built graph (LLM extraction + LLM augment) and on the spaCy graph (no LLM), over the
  hotpotqa_dev100 questions whose supporting passages are all in the corpus (per-question rows in the
  JSON), with paired bootstrap 95% intervals of each method's difference (LLM graph − spaCy graph);
- **cost as reported**: the ``llm`` usage an ingest report and ``augment`` show the user.

Both graphs are built in one Neo4j instance (``local-llm-bench``) in turn. Results:
bench/results/llm_local.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

import numpy as np
from common import ROOT, machine, write

from graphstrata.client import GraphStrata
from graphstrata.config import get_settings
from graphstrata.ingest.extract_spacy import extract_with_spacy
from graphstrata.ingest.options import IngestOptions
from graphstrata.llm import ExtractionFailed, LLMClient
from graphstrata.llm_local import LocalLLM
from graphstrata.retrieval.base import available_methods

CORPUS = ROOT / "samples" / "corpus" / "hotpotqa_sample.jsonl"
QUESTIONS = ROOT.parent / "shared" / "data" / "hotpotqa_dev100" / "questions.jsonl"
TOP_K, BUDGET = 10, 1000
UNCAPPED = {"darag", "e2graphrag", "auto"}


class CountingClient(LLMClient):
    """The product's client, recording each structured call: replies needed, tokens, seconds, outcome."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.records: list[dict[str, Any]] = []

    def chat_json(self, messages, schema, stage="chat_json", **kw):  # type: ignore[no-untyped-def]
        before = self.usage().get(stage, {})
        t0 = time.perf_counter()
        outcome = "failed"
        try:
            value = super().chat_json(messages, schema, stage, **kw)
            return value
        except ExtractionFailed:
            raise
        finally:
            after = self.usage().get(stage, {})
            calls = after.get("calls", 0) - before.get("calls", 0)
            if after.get("failures", 0) == before.get("failures", 0):
                outcome = "first" if calls <= 1 else "reasked"
            self.records.append(
                {
                    "stage": stage,
                    "calls": calls,
                    "prompt_tokens": after.get("prompt_tokens", 0) - before.get("prompt_tokens", 0),
                    "completion_tokens": after.get("completion_tokens", 0) - before.get("completion_tokens", 0),
                    "seconds": round(time.perf_counter() - t0, 2),
                    "outcome": outcome,
                }
            )


def corpus(n: int | None) -> list[tuple[str, str]]:
    docs = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    return [(d["title"], d["text"]) for d in docs[:n]]


def questions_for(titles: set[str], n: int | None) -> list[dict]:
    out = []
    for line in QUESTIONS.read_text().splitlines():
        q = json.loads(line)
        if set(q["supporting_titles"]) <= titles:
            out.append({"question": q["question"], "gold": set(q["supporting_titles"]), "answers": [q["answer"]]})
    return out[:n]


def score(gs: GraphStrata, method: str, qs: list[dict]) -> list[dict]:
    passage = {r["id"]: r["t"] for r in gs.db.read("MATCH (c:Chunk) RETURN c.id AS id, c.doc_title AS t")}
    params = {"budget": BUDGET} | ({} if method in UNCAPPED else {"top_k": TOP_K})
    rows = []
    for q in qs:
        res = gs.retrieve(q["question"], method, **params)
        ranked = list(dict.fromkeys(passage[c] for c in res.chunk_ids() if c in passage))
        text = " ".join(i.text for i in res.items).lower()
        rows.append(
            {
                "question": q["question"],
                "r5": len(q["gold"] & set(ranked[:5])) / len(q["gold"]),
                "hit": any(a.lower() in text for a in q["answers"]),
                "yes_no": q["answers"][0].lower() in ("yes", "no"),
            }
        )
    return rows


def paired_ci(a: list[float], b: list[float], seed: int = 0) -> list[float]:
    d = np.array(a, float) - np.array(b, float)
    if len(d) == 0:
        return [0.0, 0.0]
    rng = np.random.default_rng(seed)
    means = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)]
    return [round(float(np.percentile(means, 2.5)), 3), round(float(np.percentile(means, 97.5)), 3)]


def build(gs: GraphStrata, docs: list[tuple[str, str]], extractor: str) -> dict[str, Any]:
    from graphstrata.gds import GDS

    gs.db.auto("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS")
    GDS(gs.db, gs.settings).drop_all()
    t0 = time.perf_counter()
    report = gs.ingest_texts(docs, IngestOptions(extractor=extractor))
    t1 = time.perf_counter()
    augment = gs.augment()
    t2 = time.perf_counter()
    usage = gs.llm.usage() if gs.llm is not None and extractor == "llm" else {}
    return {
        "ingest_s": round(t1 - t0, 1),
        "augment_s": round(t2 - t1, 1),
        "report_llm": report.llm,
        "failed_chunks": len(report.failed_chunks),
        "extracted_chunks": report.extracted_chunks,
        "relations": report.relations,
        "augment_usage": {k: v for k, v in usage.items() if k != "extract"},
        "augment_stages": [getattr(r, "stage", str(r)) for r in augment],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=None, help="first N documents of samples/corpus (default all)")
    ap.add_argument("--questions", type=int, default=None, help="at most N questions")
    ap.add_argument("--port", type=int, default=17754, help="port of the local model server")
    ap.add_argument("--bolt-port", type=int, default=17755, help="Bolt port of the benchmark's Neo4j (HTTP +1)")
    ap.add_argument("--max-tokens", type=int, default=None, help="the server's cap on a reply (default: its own)")
    args = ap.parse_args()

    from graphstrata.neo4j_local import Instance

    server = LocalLLM.from_settings(port=args.port, max_tokens=args.max_tokens)
    t0 = time.perf_counter()
    started = server.start(timeout=600)
    start_s = time.perf_counter() - t0
    base = get_settings().model_copy(
        update={
            "instance": "local-llm-bench",
            "bolt_port": args.bolt_port,
            "http_port": args.bolt_port + 1,
            "heap": "1g",
            "pagecache": "256m",
            "embed_cache": False,
        }
    )
    inst = Instance.from_settings(base)
    inst.start()
    env = server.environment()
    llm_settings = base.model_copy(
        update={
            "openai_base_url": env["OPENAI_BASE_URL"],
            "openai_api_key": env["OPENAI_API_KEY"],
            "chat_model": env["GRAPHSTRATA_CHAT_MODEL"],
            "llm_concurrency": 1,
            "llm_timeout": 600.0,
        }
    )
    docs = corpus(args.docs)
    qs = questions_for({t for t, _ in docs}, args.questions)
    methods = sorted(available_methods())
    try:
        client = CountingClient(llm_settings, use_cache=False)
        results: dict[str, Any] = {"machine": machine() | {"load": round(os.getloadavg()[0], 1)}, "graphs": {}}
        results |= {"docs": len(docs), "questions": len(qs), "command": " ".join(["python", *sys.argv])}
        results["server"] = {"start_s": round(start_s, 1), "started": started, "model": env["GRAPHSTRATA_CHAT_MODEL"]}
        results["server"]["max_tokens"] = server.max_tokens
        per_q: dict[str, dict[str, list[dict]]] = {}
        for name, settings, extractor, llm in (
            ("spacy", base, "spacy", None),
            ("llm", llm_settings, "llm", client),
        ):
            with GraphStrata(settings, llm=llm) as gs:
                results["graphs"][name] = build(gs, docs, extractor)
                per_q[name] = {m: score(gs, m, qs) for m in methods}
        spacy = [extract_with_spacy(text) for _, text in docs]
        t = time.perf_counter()
        for _, text in docs:
            extract_with_spacy(text)
        spacy_s = (time.perf_counter() - t) / len(docs)
        ex = [r for r in client.records if r["stage"] == "extract"]
        results["extraction"] = {
            "chunks": len(ex),
            "calls": sum(r["calls"] for r in ex),
            "prompt_tokens": sum(r["prompt_tokens"] for r in ex),
            "completion_tokens": sum(r["completion_tokens"] for r in ex),
            "seconds_per_chunk": round(statistics.mean(r["seconds"] for r in ex), 2) if ex else None,
            "completion_tokens_per_s": round(
                sum(r["completion_tokens"] for r in ex) / max(1e-9, sum(r["seconds"] for r in ex)), 1
            ),
            "first_try": sum(r["outcome"] == "first" for r in ex),
            "reasked": sum(r["outcome"] == "reasked" for r in ex),
            "failed": sum(r["outcome"] == "failed" for r in ex),
            "spacy_seconds_per_chunk": round(spacy_s, 3),
            "spacy_entities_per_chunk": round(statistics.mean(len(x.entities) for x in spacy), 2),
            "spacy_relations_per_chunk": round(statistics.mean(len(x.relations) for x in spacy), 2),
        }
        with GraphStrata(llm_settings, llm=client) as gs:
            row = gs.db.read_one(
                "MATCH (c:Chunk) WHERE c.extractor = 'llm' "
                "RETURN count(c) AS n, sum(COUNT { (c)-[:MENTIONS {extractor: 'llm'}]->() }) AS e, "
                "sum(COUNT { (c)-[:HAS_RELATION]->() }) AS r"
            )
        n = max(1, row["n"])
        results["extraction"] |= {
            "llm_entities_per_chunk": round(row["e"] / n, 2),
            "llm_relations_per_chunk": round(row["r"] / n, 2),
        }
        results["methods"] = {}
        for m in methods:
            s, lm = per_q["spacy"][m], per_q["llm"][m]
            cov = lambda rows: [float(r["hit"]) for r in rows if not r["yes_no"]]  # noqa: E731
            results["methods"][m] = {
                "spacy": {
                    "recall@5": round(float(np.mean([r["r5"] for r in s])), 3),
                    "coverage": round(float(np.mean(cov(s))), 3),
                },
                "llm": {
                    "recall@5": round(float(np.mean([r["r5"] for r in lm])), 3),
                    "coverage": round(float(np.mean(cov(lm))), 3),
                },
                "recall@5_diff_ci": paired_ci([r["r5"] for r in lm], [r["r5"] for r in s]),
                "coverage_diff_ci": paired_ci(cov(lm), cov(s)),
            }
        results["per_question"] = per_q
    finally:
        inst.stop()
        if started:
            server.stop()
    write("llm_local", results, markdown(results))


def markdown(r: dict[str, Any]) -> str:
    e, g = r["extraction"], r["graphs"]
    lines = [
        "# The local model building the graph (SmolLM2-135M-Instruct Q4_1 on llama.cpp, CPU)",
        "",
        f"`{r.get('command', 'python bench/llm_local.py')}` on samples/corpus: {r['docs']} HotpotQA passages "
        f"(one chunk each; its first 20 hold every hotpotqa_dev100 question's passages), {r['questions']} "
        "hotpotqa_dev100 questions whose supporting passages are all in it; "
        f"{r['machine']['cpus']} cores, {r['machine']['when']}, 1-min load average at the start "
        f"{r['machine'].get('load', '?')} (compare ratios on a busy machine, not seconds). "
        f"Server start (installed) {r['server']['start_s']} s; "
        f"replies capped at {r['server'].get('max_tokens', 1024)} tokens.",
        "",
        "## Extraction, per chunk",
        "",
        "| | LLM (constrained JSON) | spaCy |",
        "|---|---|---|",
        f"| seconds per chunk | {e['seconds_per_chunk']} | {e['spacy_seconds_per_chunk']} |",
        f"| entities per chunk (kept) | {e['llm_entities_per_chunk']} | {e['spacy_entities_per_chunk']} |",
        f"| relations per chunk | {e['llm_relations_per_chunk']} | {e['spacy_relations_per_chunk']} |",
        f"| calls | {e['calls']} for {e['chunks']} chunks | 0 |",
        f"| prompt / completion tokens | {e['prompt_tokens']} / {e['completion_tokens']} | 0 |",
        f"| generation speed | {e['completion_tokens_per_s']} completion tokens/s (wall, incl. prompt) | |",
        f"| valid on the first reply / after re-asks / failed | {e['first_try']} / {e['reasked']} / {e['failed']} | |",
        "",
        f"Build: spaCy graph ingest {g['spacy']['ingest_s']} s + augment {g['spacy']['augment_s']} s; "
        f"LLM graph ingest {g['llm']['ingest_s']} s + augment {g['llm']['augment_s']} s.",
        "",
        "## Retrieval on each graph (Recall@5, Coverage; paired bootstrap 95% CI of LLM − spaCy)",
        "",
        "| method | R@5 spaCy | R@5 LLM | Δ CI | Cov spaCy | Cov LLM | Δ CI |",
        "|---|---|---|---|---|---|---|",
    ]
    for m, v in r["methods"].items():
        lines.append(
            f"| {m} | {v['spacy']['recall@5']} | {v['llm']['recall@5']} | {v['recall@5_diff_ci']} | "
            f"{v['spacy']['coverage']} | {v['llm']['coverage']} | {v['coverage_diff_ci']} |"
        )
    lines += [
        "",
        "## What graphstrata reports to the user about LLM cost",
        "",
        "`graphstrata ingest` prints the ingest report's `llm` usage per stage; this run's:",
        "",
        "```json",
        json.dumps(g["llm"]["report_llm"], indent=1),
        "```",
        "",
        "and augment's LLM stages (summaries, attributes, reports):",
        "",
        "```json",
        json.dumps(g["llm"]["augment_usage"], indent=1),
        "```",
        "",
    ]
    return "\n".join(lines)


def rewrite() -> None:
    """Render bench/results/llm_local.md again from its JSON (after a change to the text only)."""
    from common import RESULTS

    data = json.loads((RESULTS / "llm_local.json").read_text())
    write("llm_local", data, markdown(data))


if __name__ == "__main__":
    main()
