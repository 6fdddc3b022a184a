"""Soak test: documents ingested, replaced, re-ingested unchanged and deleted while vector, full-text
and graph queries run, for a bounded time; then an integrity check of the graph.

    python bench/soak.py [--seconds 120] [--writers 2] [--readers 2] [--graph-method ketrag]

Loopback only, on a Neo4j of its own: the local instance `soak` (127.0.0.1:17691, HTTP 17478),
started here if needed and stopped afterwards if we started it (`--keep` leaves it running). It is
wiped at the start and reused for the reference ingest at the end; the benchmarks' `bench` instance
(which holds the hotpotqa graph) is never touched. With NEO4J_URI set it refuses to run unless
GRAPHSTRATA_BENCH_WIPE=1 (that database is wiped).

Traffic: `--writers` threads each own a disjoint share of hotpotqa_dev100's passages (so every
document's history is sequential and its end state known) and loop over: ingest the next few new
documents, replace one (changed text), re-ingest some unchanged (a no-op), delete one, bring a deleted
one back. Shared entities, keywords and co-occurrence counts are written concurrently. `--readers`
threads send questions back to back, cycling vector, fulltext and `--graph-method`.

Integrity (exit code 1 if any fails): every schema constraint present; no duplicate ids or entity
names; no orphans or non-positive counters; the documents in the graph are exactly the end state;
and the whole graph (every node and relationship with its properties, vectors and timestamps aside;
counts per label and type) equals a sequential ingest of that end state into the wiped instance —
keyword vectors (sums kept by addition and subtraction) equal up to float rounding.
Writes bench/results/soak.{json,md}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphstrata.client import GraphStrata
from graphstrata.config import Settings, get_settings
from graphstrata.ingest.load import SourceDocument
from graphstrata.ingest.pipeline import IngestOptions

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data" / "hotpotqa_dev100"
SOAK_INSTANCE, SOAK_BOLT, SOAK_HTTP = "soak", 17691, 17478
OPTIONS = IngestOptions(extractor="spacy")  # the no-LLM pipeline: every layer ingest writes, no API cost

# (label, key) pairs that must be unique; the constraints cover ids, these checks cover the rest too
UNIQUE_KEYS = [
    ("Document", "id"),
    ("Chunk", "id"),
    ("SubChunk", "id"),
    ("Entity", "id"),
    ("Entity", "normalized"),
    ("Keyword", "id"),
    ("Keyword", "term"),
    ("Relation", "id"),
    ("SemanticUnit", "id"),
]
ORPHANS = {  # name -> a count that must be 0
    "chunks without a document": "MATCH (c:Chunk) WHERE NOT EXISTS { (:Document)-[:HAS_CHUNK]->(c) }",
    "sub-chunks without a chunk": "MATCH (c:SubChunk) WHERE NOT EXISTS { (:Chunk)-[:HAS_PART]->(c) }",
    "entities no chunk mentions": "MATCH (c:Entity) WHERE NOT EXISTS { (:Chunk)-[:MENTIONS]->(c) }",
    "documents without chunks": "MATCH (c:Document) WHERE NOT EXISTS { (c)-[:HAS_CHUNK]->() }",
    "documents not fully written": "MATCH (c:Document) WHERE c.sha256 IS NULL OR c._lock IS NOT NULL",
    "keywords with no sentence": "MATCH (c:Keyword) WHERE c.n_sentences <= 0",
    "co-occurrences of weight <= 0": "MATCH ()-[c:CO_OCCURS]->() WHERE c.weight <= 0",
    "RELATED edges of weight <= 0": "MATCH ()-[c:RELATED]->() WHERE c.weight <= 0",
}


# --- the database -----------------------------------------------------------------------------------


def soak_settings(
    instance: str = SOAK_INSTANCE, bolt: int = SOAK_BOLT, http: int = SOAK_HTTP
) -> tuple[Settings, Callable[[], None]]:
    """Settings for the soak database and a function that stops what we started (a no-op otherwise)."""
    import os

    base = get_settings()
    if base.neo4j_uri:
        if os.environ.get("GRAPHSTRATA_BENCH_WIPE") != "1":
            raise SystemExit(
                "refusing to wipe the database at NEO4J_URI; set GRAPHSTRATA_BENCH_WIPE=1 if it is scratch"
            )
        return base, lambda: None
    from graphstrata.neo4j_local import Instance

    s = base.model_copy(
        update={
            "instance": instance,
            "bolt_port": bolt,
            "http_port": http,
            "heap": "2g",
            "pagecache": "512m",
            "neo4j_password": None,
        }
    )
    inst = Instance.from_settings(s)
    assert inst.name != "bench"  # the benchmarks' graph lives there: never ours to wipe
    started = inst.start()
    return s, (inst.stop if started else lambda: None)


def wipe(gs: GraphStrata) -> None:
    from graphstrata.gds import GDS

    gs.db.wipe()
    GDS(gs.db, gs.settings).drop_all()


# --- traffic ------------------------------------------------------------------------------------------


@dataclass
class Writer:
    """One writer's share of the corpus and its documents' current state (title -> text, None: deleted)."""

    pending: list[tuple[str, str]]
    originals: dict[str, str] = field(default_factory=dict)  # title -> the corpus text
    state: dict[str, str | None] = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)
    stage_seconds: Counter = field(default_factory=Counter)  # the ingest reports' seconds per stage
    errors: list[str] = field(default_factory=list)
    busy_seconds: float = 0.0

    def live(self) -> list[str]:
        return [t for t, x in self.state.items() if x is not None]


def revise(text: str, n: int) -> str:
    """A changed version of a passage: a different last sentence (new chunk text, sentences, keywords)."""
    return re.sub(r"\s*\[rev \d+\].*$", "", text) + f" [rev {n}] This revision {n} adds a sentence about Zürich."


#: The random mix of write actions: (action, probability); "new" takes the rest.
MIX = [("delete", 0.12), ("replace", 0.18), ("unchanged", 0.08), ("restore", 0.04)]


def choose(rng: random.Random) -> str:
    r = rng.random()
    for action, p in MIX:
        if r < p:
            return action
        r -= p
    return "new"


def write_loop(
    gs: GraphStrata,
    w: Writer,
    deadline: float,
    rng: random.Random,
    batch: int,
    schedule: list[str] | None = None,
    min_actions: int = 0,
) -> None:
    """Until `deadline`, and at least `min_actions` actions (a busy machine is slow, not exempt): mostly
    new documents, some replacements, unchanged re-ingests, deletions and returns of deleted documents;
    in the order of `schedule` (cycled) when given, else at random (MIX). An action that has nothing to
    act on (no live document to delete …) ingests new documents instead."""
    revision = step = 0
    while time.monotonic() < deadline or step < min_actions:
        live = w.live()
        gone = [t for t, x in w.state.items() if x is None]
        action = schedule[step % len(schedule)] if schedule else choose(rng)
        step += 1
        if (action in ("delete", "replace", "unchanged") and not live) or (action == "restore" and not gone):
            action = "new"
        t0 = time.perf_counter()
        try:
            if action == "delete":
                title = rng.choice(live)
                gs.delete(title)
                w.state[title] = None
                w.counts["deleted"] += 1
            elif action == "replace":
                title = rng.choice(live)
                revision += 1
                text = revise(w.state[title] or "", revision)
                rep = gs.ingest_texts([(title, text)], OPTIONS)
                w.state[title] = text
                w.counts["replaced"] += rep.documents_replaced
            elif action == "unchanged":
                titles = rng.sample(live, min(batch, len(live)))
                rep = gs.ingest_texts([(t, w.state[t] or "") for t in titles], OPTIONS)
                w.counts["unchanged"] += rep.documents_unchanged  # must be all of them: a no-op
                w.counts["unchanged_rewritten"] += rep.documents_new + rep.documents_replaced
            elif action == "restore":
                title = rng.choice(gone)
                text = w.originals[title]  # deleted, then ingested again
                rep = gs.ingest_texts([(title, text)], OPTIONS)
                w.state[title] = text
                w.counts["restored"] += rep.documents_new
            elif w.pending:
                docs, w.pending = w.pending[:batch], w.pending[batch:]
                rep = gs.ingest_texts(docs, OPTIONS)
                w.state.update(docs)
                w.counts["new"] += rep.documents_new
            else:
                if time.monotonic() >= deadline:
                    break  # the corpus is used up: min_actions cannot be reached
                time.sleep(0.1)  # the corpus is used up and nothing else applies
                continue
            if action != "delete":
                w.stage_seconds.update(rep.seconds)
            w.counts["actions"] += 1
        except Exception as e:  # a failed write leaves its document's state unknown: integrity says so
            w.errors.append(f"{action}: {type(e).__name__}: {str(e)[:300]}")
            time.sleep(0.5)
        finally:
            w.busy_seconds += time.perf_counter() - t0


@dataclass
class Reader:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter = field(default_factory=Counter)
    samples: list[str] = field(default_factory=list)


def read_loop(
    gs: GraphStrata,
    r: Reader,
    deadline: float,
    questions: list[str],
    methods: list[str],
    seed: int,
    interval: float = 0.0,
    writing: threading.Event | None = None,
) -> None:
    """Questions until `deadline` and while `writing` is set, cycling `methods`; one every `interval`
    seconds at most (0: back to back)."""
    rng = random.Random(seed)
    i = 0
    next_at = time.monotonic()
    while time.monotonic() < deadline or (writing is not None and writing.is_set()):
        method = methods[i % len(methods)]
        i += 1
        if interval:  # paced: a steady offered load leaves the writers their share of the 2 cores
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))
        t0 = time.perf_counter()
        try:
            gs.retrieve(rng.choice(questions), method, top_k=5)
            r.latencies[method].append((time.perf_counter() - t0) * 1000)
        except Exception as e:
            r.errors[f"{method}: {type(e).__name__}"] += 1
            if len(r.samples) < 5:
                r.samples.append(f"{method}: {type(e).__name__}: {str(e)[:300]}")


# --- integrity ----------------------------------------------------------------------------------------


def expected_constraints() -> set[str]:
    text = (ROOT / "graphstrata" / "cypher" / "schema.cypher").read_text()
    return set(re.findall(r"CREATE CONSTRAINT (\w+) IF NOT EXISTS", text))


def fingerprint(gs: GraphStrata) -> dict[str, Any]:
    """The graph in comparable form: digests of every node and relationship with its properties
    (vectors, timestamps and the lock counter aside), counts per label and type, keyword vectors."""
    nodes = gs.db.read(
        "MATCH (n) WHERE NOT n:GraphStrata "
        "RETURN labels(n) AS labels, n {.*, embedding: null, sum: null, ingested_at: null, _lock: null} AS p"
    )
    rels = gs.db.read(
        "MATCH (a)-[r]->(b) WHERE NOT a:GraphStrata AND NOT b:GraphStrata "
        "RETURN type(r) AS t, a.id AS a, b.id AS b, properties(r) AS p"
    )
    node_lines = sorted(json.dumps([sorted(n["labels"]), n["p"]], sort_keys=True, default=str) for n in nodes)
    rel_lines = sorted(json.dumps([r["t"], r["a"], r["b"], r["p"]], sort_keys=True, default=str) for r in rels)
    # a keyword's exact sum, and how far its indexed copy points from it (ingest.add_keywords: cosine >= 0.9999)
    rows = gs.db.read("MATCH (k:Keyword) RETURN k.id AS id, k.sum AS v, k.embedding AS e")
    keywords = {r["id"]: r["v"] for r in rows}
    copies = [float(np.dot(r["v"], r["e"]) / np.linalg.norm(r["v"]) / np.linalg.norm(r["e"])) for r in rows]
    return {
        "labels": dict(sorted(Counter(label for n in nodes for label in n["labels"]).items())),
        "relationships": dict(sorted(Counter(r["t"] for r in rels).items())),
        "digest": hashlib.sha256("\n".join([*node_lines, "--", *rel_lines]).encode()).hexdigest(),
        "_nodes": node_lines,
        "_rels": rel_lines,
        "_keywords": keywords,
        "keyword_copy_min_cosine": min(copies, default=1.0),
    }


def graph_checks(gs: GraphStrata, end_state: dict[str, str]) -> dict[str, Any]:
    """What must hold of the soaked graph itself (before the reference comparison)."""
    names = {r["name"] for r in gs.db.read("SHOW CONSTRAINTS YIELD name RETURN name")}
    duplicates = {}
    for label, key in UNIQUE_KEYS:
        row = gs.db.read_one(
            f"MATCH (n:{label}) WHERE n.{key} IS NOT NULL WITH n.{key} AS k, count(*) AS c WHERE c > 1 "
            "RETURN count(*) AS n"
        )  # label and key come from UNIQUE_KEYS above, never from input
        duplicates[f"{label}.{key}"] = row["n"] if row else 0
    orphans = {name: gs.db.read_one(q + " RETURN count(c) AS n")["n"] for name, q in ORPHANS.items()}
    in_graph = {r["t"]: r["sha"] for r in gs.db.read("MATCH (d:Document) RETURN d.title AS t, d.sha256 AS sha")}
    want = {t: SourceDocument(source=t, title=t, text=x).sha256 for t, x in end_state.items()}
    return {
        "constraints_missing": sorted(expected_constraints() - names),
        "duplicates": {k: v for k, v in duplicates.items() if v},
        "orphans": {k: v for k, v in orphans.items() if v},
        "documents_missing": sorted(set(want) - set(in_graph)),
        "documents_extra": sorted(set(in_graph) - set(want)),
        "documents_wrong_version": sorted(t for t in set(want) & set(in_graph) if want[t] != in_graph[t]),
    }


def compare(soak: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    diff_nodes = sorted(set(soak["_nodes"]) ^ set(ref["_nodes"]))
    diff_rels = sorted(set(soak["_rels"]) ^ set(ref["_rels"]))
    worst = 0.0
    for k in set(soak["_keywords"]) & set(ref["_keywords"]):
        a, b = np.asarray(soak["_keywords"][k]), np.asarray(ref["_keywords"][k])
        worst = max(worst, float(np.abs(a - b).max() / max(1e-9, float(np.abs(b).max()))))
    return {
        "counts_equal": soak["labels"] == ref["labels"] and soak["relationships"] == ref["relationships"],
        "graph_equal": soak["digest"] == ref["digest"],
        "keyword_vectors_max_relative_error": worst,
        "keyword_copy_min_cosine": soak["keyword_copy_min_cosine"],
        "differences": (diff_nodes + diff_rels)[:10],
    }


# --- the run ------------------------------------------------------------------------------------------


def run_soak(
    settings: Settings,
    corpus: list[tuple[str, str]],
    questions: list[str],
    seconds: float,
    writers: int = 2,
    readers: int = 2,
    graph_method: str = "ketrag",
    batch: int = 4,
    seed: int = 7,
    schedule: list[str] | None = None,
    qps: float = 0.0,
    log: Callable[[str], None] = print,
    min_actions: int = 0,
) -> dict[str, Any]:
    """Wipe the database of `settings`, soak it, check it, rebuild the end state sequentially, compare.
    `schedule`: the writers' actions in order (cycled) instead of the random MIX (tests use it);
    `min_actions`: each writer goes on past `seconds` until it has done that many.
    `qps`: the readers' total query rate (0: each sends back to back)."""
    with GraphStrata(settings) as gs:
        wipe(gs)
        gs.ingest_texts(corpus[:1], OPTIONS)  # schema, models and caches warm before the clock starts
        gs.delete(corpus[0][0])
        shares = [Writer(corpus[i::writers], dict(corpus[i::writers])) for i in range(writers)]
        rdrs = [Reader() for _ in range(readers)]
        methods = ["vector", "fulltext", graph_method]
        clients = [GraphStrata(settings, embedder=gs.embedder) for _ in range(writers + readers)]  # a driver each
        interval = readers / qps if qps > 0 else 0.0
        start = time.monotonic()
        deadline = start + seconds
        writing = threading.Event()  # readers keep reading while a writer is still busy past the deadline
        writing.set()
        write_threads = [
            threading.Thread(
                target=write_loop,
                args=(clients[i], w, deadline, random.Random(seed + i), batch, schedule, min_actions),
            )
            for i, w in enumerate(shares)
        ]
        read_threads = [
            threading.Thread(
                target=read_loop,
                args=(clients[writers + i], r, deadline, questions, methods, seed + 100 + i, interval, writing),
            )
            for i, r in enumerate(rdrs)
        ]
        for t in write_threads + read_threads:
            t.start()
        for t in write_threads:
            t.join()
        writing.clear()
        for t in read_threads:
            t.join()
        wall = time.monotonic() - start  # includes the actions in flight at the deadline
        for c in clients:
            c.close()
        log(f"soak done in {wall:.1f} s; checking integrity")

        end_state = {t: x for w in shares for t, x in w.state.items() if x is not None}
        checks = graph_checks(gs, end_state)
        soaked = fingerprint(gs)
        t0 = time.perf_counter()
        wipe(gs)
        ref_report = gs.ingest_texts(sorted(end_state.items()), OPTIONS)
        reference_seconds = time.perf_counter() - t0
        ref = fingerprint(gs)
        comparison = compare(soaked, ref)

    counts: Counter = Counter()
    stages: Counter = Counter()
    for w in shares:
        counts.update(w.counts)
        stages.update(w.stage_seconds)
    writer_errors = [e for w in shares for e in w.errors]
    latencies: dict[str, list[float]] = defaultdict(list)
    reader_errors = Counter()
    samples = []
    for r in rdrs:
        for m, xs in r.latencies.items():
            latencies[m] += xs
        reader_errors.update(r.errors)
        samples += r.samples
    queries = {
        m: {
            "queries": len(xs),
            "qps": round(len(xs) / wall, 2),
            "p50_ms": round(float(np.percentile(xs, 50)), 1) if xs else None,
            "p95_ms": round(float(np.percentile(xs, 95)), 1) if xs else None,
        }
        for m, xs in latencies.items()
    }
    every = [x for xs in latencies.values() for x in xs]
    docs_written = counts["new"] + counts["replaced"] + counts["restored"]
    integrity_ok = (
        not checks["constraints_missing"]
        and not checks["duplicates"]
        and not checks["orphans"]
        and not checks["documents_missing"]
        and not checks["documents_extra"]
        and not checks["documents_wrong_version"]
        and comparison["counts_equal"]
        and comparison["graph_equal"]
        and comparison["keyword_vectors_max_relative_error"] < 1e-4
        and comparison["keyword_copy_min_cosine"] >= 0.9999 - 1e-6
        and counts["unchanged_rewritten"] == 0
        and not writer_errors
    )
    return {
        "seconds": round(wall, 1),
        "writers": writers,
        "readers": readers,
        "graph_method": graph_method,
        "target_qps": qps or "unpaced",
        "actions": dict(counts),
        "documents_written": docs_written,
        "docs_per_second": round(docs_written / wall, 2),
        "writer_seconds": {
            "busy": round(sum(w.busy_seconds for w in shares), 1),
            **{k: round(v, 1) for k, v in sorted(stages.items())},
        },
        "writer_errors": writer_errors,
        "queries": queries,
        "queries_total": sum(len(xs) for xs in latencies.values()),
        "queries_per_second": round(sum(len(xs) for xs in latencies.values()) / wall, 2),
        "query_p50_ms": round(float(np.percentile(every, 50)), 1) if every else None,
        "query_p95_ms": round(float(np.percentile(every, 95)), 1) if every else None,
        "query_errors": dict(reader_errors),
        "query_error_samples": samples,
        "end_state_documents": len(end_state),
        "graph": {"labels": soaked["labels"], "relationships": soaked["relationships"]},
        "reference": {
            "labels": ref["labels"],
            "relationships": ref["relationships"],
            "seconds": round(reference_seconds, 1),
            "documents": ref_report.documents_new,
        },
        "checks": checks,
        "comparison": comparison,
        "integrity_ok": integrity_ok,
    }


def load_corpus(path: Path) -> list[tuple[str, str]]:
    docs: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            docs.setdefault(rec["title"], rec["text"])
    return list(docs.items())


def _largest_stage(ws: dict[str, Any]) -> str:
    names = {"embed": "embedding", "spacy": "spaCy", "extract": "extraction", "write": "Neo4j writes"}
    key = max(names, key=lambda k: ws.get(k, 0))
    return names[key]


def markdown(data: dict[str, Any]) -> str:
    a, c, k, ws = data["actions"], data["comparison"], data["checks"], data["writer_seconds"]
    lines = [
        "# Soak: ingest, replace, delete and query at once",
        "",
        f"{data['machine']['cpus']} CPUs, {data['machine']['when']}, load average at the start "
        f"{data['machine']['load_average_at_start']} (the machine is shared), "
        f"{data['machine'].get('cpu_hogs', 0)} CPU hog process(es) busy-looping beside it. Loopback, own "
        f"Neo4j instance; corpus hotpotqa_dev100 passages, no LLM (spaCy extraction). {data['seconds']} s with "
        f"{data['writers']} writer and {data['readers']} reader threads (readers aiming at "
        f"{data['target_qps']} queries/s in total).",
        "",
        "## Throughput",
        "",
        f"- Writes: {data['documents_written']} documents written ({a.get('new', 0)} new, {a.get('replaced', 0)} "
        f"replaced, {a.get('restored', 0)} deleted then re-ingested) = **{data['docs_per_second']} docs/s**; "
        f"{a.get('deleted', 0)} deleted; {a.get('unchanged', 0)} unchanged re-ingests skipped "
        f"({a.get('unchanged_rewritten', 0)} rewritten, must be 0); writer errors: {len(data['writer_errors'])}. "
        f"Writers' time (all {data['writers']} threads): {ws['busy']} s busy, of which embedding "
        f"{ws.get('embed', 0)} s, spaCy {ws.get('spacy', 0)} s, extraction {ws.get('extract', 0)} s and Neo4j "
        f"writes {ws.get('write', 0)} s (the largest part: {_largest_stage(ws)}).",
        f"- Queries: {data['queries_total']} = **{data['queries_per_second']} queries/s**, "
        f"p50 {data['query_p50_ms']} ms, p95 {data['query_p95_ms']} ms; errors: {sum(data['query_errors'].values())}"
        + (f" ({data['query_errors']})" if data["query_errors"] else "")
        + ".",
        "",
        "| method | queries | queries/s | p50 ms | p95 ms |",
        "|---|---:|---:|---:|---:|",
        *[
            f"| {m} | {q['queries']} | {q['qps']} | {q['p50_ms']} | {q['p95_ms']} |"
            for m, q in sorted(data["queries"].items())
        ],
        "",
        "## Integrity",
        "",
        f"- Constraints: {'MISSING ' + str(k['constraints_missing']) if k['constraints_missing'] else 'all present'}.",
        f"- Duplicates by key: {k['duplicates'] or 'none'}; orphans / bad counters: {k['orphans'] or 'none'}.",
        f"- Documents vs the end state ({data['end_state_documents']}): missing {len(k['documents_missing'])}, "
        f"extra {len(k['documents_extra'])}, wrong version {len(k['documents_wrong_version'])}.",
        f"- Against a sequential ingest of the end state into the wiped instance ({data['reference']['seconds']} s): "
        f"counts per label and type {'equal' if c['counts_equal'] else 'DIFFERENT'}, whole graph "
        f"{'identical' if c['graph_equal'] else 'DIFFERENT'} (every node and relationship with its properties), "
        f"keyword sums within {c['keyword_vectors_max_relative_error']:.1e} (relative), their indexed copies at "
        f"cosine >= {c.get('keyword_copy_min_cosine', float('nan')):.6f} from them.",
        "",
        "| label / type | soaked | reference |",
        "|---|---:|---:|",
        *[
            f"| {name} | {data['graph'][kind].get(name, 0)} | {data['reference'][kind].get(name, 0)} |"
            for kind in ("labels", "relationships")
            for name in sorted(set(data["graph"][kind]) | set(data["reference"][kind]))
        ],
        "",
        f"**Integrity: {'OK' if data['integrity_ok'] else 'FAILED'}.**",
    ]
    if data["query_error_samples"]:
        lines += ["", "Query error samples:", "", *[f"- `{s}`" for s in data["query_error_samples"]]]
    return "\n".join(lines) + "\n"


def main() -> None:
    import os

    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seconds", type=float, default=120.0, help="how long writers and readers run (default 120)")
    ap.add_argument("--writers", type=int, default=2, help="writer threads (default 2)")
    ap.add_argument("--readers", type=int, default=2, help="query threads (default 2)")
    ap.add_argument(
        "--qps", type=float, default=10.0, help="total query rate the readers aim at; 0: back to back (default 10)"
    )
    ap.add_argument("--graph-method", default="ketrag", help="the graph retrieval method in the mix (default ketrag)")
    ap.add_argument("--batch", type=int, default=4, help="documents per ingest call (default 4)")
    ap.add_argument("--corpus", type=Path, default=DATA / "corpus.jsonl")
    ap.add_argument("--questions", type=Path, default=DATA / "questions.jsonl")
    ap.add_argument("--keep", action="store_true", help="leave the soak instance running")
    ap.add_argument("--instance", default=SOAK_INSTANCE, help=f"local instance (wiped; default {SOAK_INSTANCE})")
    ap.add_argument("--bolt-port", type=int, default=SOAK_BOLT, help=f"its Bolt port (default {SOAK_BOLT})")
    ap.add_argument("--http-port", type=int, default=SOAK_HTTP, help=f"its HTTP port (default {SOAK_HTTP})")
    ap.add_argument("--hogs", type=int, default=0, help="busy-looping processes beside the soak (default 0)")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/soak.*")
    args = ap.parse_args()

    from common import machine, write  # bench/common.py (imported late: --help needs no Neo4j)

    corpus = load_corpus(args.corpus)
    questions = [json.loads(x)["question"] for x in args.questions.read_text().splitlines() if x.strip()]
    settings, stop = soak_settings(args.instance, args.bolt_port, args.http_port)
    info = machine()
    info["load_average_at_start"] = [round(x, 2) for x in os.getloadavg()]
    info["cpu_hogs"] = args.hogs
    import subprocess
    import sys

    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    try:
        data = run_soak(
            settings,
            corpus,
            questions,
            args.seconds,
            args.writers,
            args.readers,
            args.graph_method,
            args.batch,
            qps=args.qps,
        )
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        if not args.keep:
            stop()
    data = {"machine": info, **data}
    if args.no_write:
        print(markdown(data))
    else:
        write("soak", data, markdown(data))
    if not data["integrity_ok"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
