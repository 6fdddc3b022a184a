"""How graphstrata scales: seeded corpora of 2k, 10k, 50k passages, each ingested and augmented into
an empty graph, every method asked the dev questions at each size.

    python bench/scale.py [--sizes 2000,10000,50000] [--questions 100] [--methods ...]
    python bench/scale.py --approx-check       # approximate vs exact augment on the dev graphs
    python bench/scale.py --ivf-check          # inverted file vs exact on the last size's vectors
    python bench/scale.py --sizes 50000 --keep-other-sizes   # one size again, the others' rows kept

A corpus of n passages: hotpotqa_dev100's 994 passages (its 100 questions stay answerable at every
size) plus n - 994 synthetic distractors drawn with a fixed seed: lengths sampled from the dev
passages', sentences built around named entities drawn from a Zipf-like (s = 1.1) vocabulary of
invented names (people, places, organisations, works), so the extracted graph has hubs and a long
tail as a real one does (bench/scale_corpus.py). Per size: ingest and augment milliseconds per passage
(every stage), every method's p50/p95 and Recall@5 with `vector` beside it, peak RSS of this process per
phase, Neo4j heap in use, the per-graph query caches' memory, and the augment after adding 1% more
documents against the full augment — with what its shortcuts cost: the updated top-k layers against a
full run's, and Recall@5 on the incremented graph before and after a full augment. Results:
bench/results/scale.{json,md,png} (the plot needs matplotlib).

The graph lives in a Neo4j instance of its own (``scale-bench``, heap 4g, page cache 7g, ports 17763/17764).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from common import RESULTS, clear_question_caches, machine, wipe
from scale_corpus import SEED, corpus, distractors, questions
from scale_exact import exactness, layer_ids

from graphstrata.client import GraphStrata
from graphstrata.config import get_settings
from graphstrata.retrieval.warmup import warm

os.environ.setdefault("GRAPHSTRATA_EMBED_CACHE", "false")  # latency includes embedding the question
SIZES = [2000, 10_000, 50_000]
METHODS = ["vector", "fulltext", "hipporag", "noderag", "ketrag", "darag", "e2graphrag", "sgrag", "fusion", "auto"]
UNCAPPED = {"ketrag", "darag", "sgrag"}  # as bench/graphs.py: their papers cap the context by tokens only
TOP_K, BUDGET = 10, 1000
#: the instance's memory: a page cache that holds the 50,000-passage store (~6.5 GB; 1.3 GB at 10,000), as
#: a user at that size would set it (docs/scaling.md)
HEAP, PAGECACHE = "4g", "7g"


def open_instance() -> GraphStrata:
    from graphstrata.neo4j_local import Instance

    s = get_settings().model_copy(
        update={
            "instance": "scale-bench",
            "bolt_port": 17763,
            "http_port": 17764,
            "heap": HEAP,
            "pagecache": PAGECACHE,
            "embed_cache": False,
        }
    )
    Instance.from_settings(s).start()
    return GraphStrata(s)


def commit() -> str:
    """The checked-out commit (with ``+`` when the work tree has changes)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=Path(__file__).parent).stdout.strip()

    return git("rev-parse", "--short", "HEAD") + ("+" if git("status", "--porcelain", "--untracked-files=no") else "")


def heap_used_mb(gs: GraphStrata) -> float | None:
    try:
        rows = gs.db.read("CALL dbms.queryJmx('java.lang:type=Memory') YIELD attributes RETURN attributes")
        return round(rows[0]["attributes"]["HeapMemoryUsage"]["value"]["properties"]["used"] / 2**20, 1)
    except Exception:
        return None


def cache_mb(gs: GraphStrata) -> dict[str, float]:
    """The per-graph query caches (graphstrata/walkgraph.py read_once) of this connection, by name."""
    from graphstrata.walkgraph import cache_bytes

    return {name: round(b / 2**20, 1) for name, b in cache_bytes(gs.db).items()}


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def ask_all(gs: GraphStrata, methods: list[str], qs: list[dict]) -> dict[str, dict]:
    passage = {r["id"]: r["t"] for r in gs.db.read("MATCH (c:Chunk) RETURN c.id AS id, c.doc_title AS t")}
    out = {}
    for m in methods:
        params = {"budget": BUDGET} | ({} if m in UNCAPPED else {"top_k": TOP_K})
        gs.retrieve(qs[0]["question"], m, **params)  # warm-up: caches of this graph version
        # each method pays for its own question embeddings and entities (earlier methods saw the same questions)
        clear_question_caches(gs)
        rows = []
        for q in qs:
            t = time.perf_counter()
            res = gs.retrieve(q["question"], m, **params)
            ms = (time.perf_counter() - t) * 1000
            ranked = list(dict.fromkeys(passage[c] for c in res.chunk_ids() if c in passage))
            rows.append({"r5": len(q["gold"] & set(ranked[:5])) / len(q["gold"]), "ms": round(ms, 1)})
        ms = [r["ms"] for r in rows]
        out[m] = {
            "recall@5": round(float(np.mean([r["r5"] for r in rows])), 3),
            "p50_ms": round(float(np.percentile(ms, 50)), 1),
            "p95_ms": round(float(np.percentile(ms, 95)), 1),
            "per_question": rows,
        }
        print(f"  {m}: R@5 {out[m]['recall@5']} p50 {out[m]['p50_ms']} ms p95 {out[m]['p95_ms']} ms", flush=True)
    return out


class PeakRSS:
    """The process's peak resident memory per phase (sampled every 0.2 s from /proc/self/statm)."""

    def __init__(self) -> None:
        self.phase, self.peaks, self._stop = "start", {}, threading.Event()
        self._page = os.sysconf("SC_PAGE_SIZE") / 2**20
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            mb = int(Path("/proc/self/statm").read_text().split()[1]) * self._page
            self.peaks[self.phase] = round(max(self.peaks.get(self.phase, 0.0), mb), 1)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        return dict(self.peaks)


LAYERS = (
    "MATCH (a)-[r:SIMILAR|SEMANTIC]->(b) RETURN labels(a)[0] + ' ' + type(r) + ' ' + coalesce(r.kind, '') AS layer, "
    "a.id AS a, b.id AS b"
)


def layer_pairs(gs: GraphStrata) -> dict[str, set[tuple[str, str]]]:
    out: dict[str, set[tuple[str, str]]] = {}
    for layer, a, b in gs.db.read_rows(LAYERS, ["layer", "a", "b"]):
        out.setdefault(layer, set()).add((a, b))
    return out


def run_size(gs: GraphStrata, n: int, methods: list[str], n_questions: int, reuse: float | None = None) -> dict:
    """One size; ``reuse``: the graph in the instance is this size's, already ingested (in that many
    seconds): it is augmented again, fully, and measured."""
    records, lengths = corpus(n)
    rss = PeakRSS()
    with tempfile.TemporaryDirectory() as tmp:
        if reuse is None:
            wipe(gs)
            path = Path(tmp) / f"scale_{n}.jsonl"
            write_jsonl(path, records)
            rss.phase = "ingest"
            t = time.perf_counter()
            ingest_stages = {k: round(v, 2) for k, v in gs.ingest([path]).seconds.items()}
            ingest_s = time.perf_counter() - t
        else:
            ingest_s, ingest_stages = reuse, {}
        print(f"{n}: ingest {ingest_s:.0f} s", flush=True)
        rss.phase = "augment"
        t = time.perf_counter()
        # a full augment: every layer computed whole (a graph already augmented would otherwise be updated)
        reports = gs.augment(knn_incremental=False, defer_share=0, warm=False)
        stages = {r.stage: {"seconds": r.seconds, "notes": r.notes, "counts": r.counts} for r in reports}
        augment_s = time.perf_counter() - t
        print(f"{n}: augment {augment_s:.0f} s", flush=True)
        rss.phase = "questions"
        t = time.perf_counter()
        warm(gs.db, gs.settings.gds_concurrency)  # the walk graphs read into this process (retrieval's cache)
        warm_s = time.perf_counter() - t
        qs = questions(n_questions)
        answers = ask_all(gs, methods, qs)
        caches = cache_mb(gs)
        heap = heap_used_mb(gs)
        # +1%: new distractors (other seed, other titles), ingested, then augment again: the whole-graph
        # stages are deferred and the top-k layers updated in place (graphstrata/augment/deferral.py, knn_index.py)
        rss.phase = "increment"
        more = distractors(max(1, n // 100), lengths, seed=SEED + 1, start=n)
        path2 = Path(tmp) / f"scale_{n}_more.jsonl"
        write_jsonl(path2, more)
        before = layer_ids(gs)
        t = time.perf_counter()
        gs.ingest([path2])
        inc_ingest_s = time.perf_counter() - t
        t = time.perf_counter()
        inc_reports = gs.augment(warm=False)
        inc = {
            r.stage: {"seconds": r.seconds, "path": r.notes.get("path"), "deferred": "deferred" in r.notes}
            for r in inc_reports
        }
        inc_s = time.perf_counter() - t
        print(f"{n}: +1% augment {inc_s:.0f} s", flush=True)
        exact_topk = exactness(gs, before)  # the index path's lists against brute force (bench/scale_exact.py)
        # what the increment's shortcuts cost: the questions on its graph, then a full augment of the same
        # graph, its top-k layers against the updated ones, and the questions again
        after_inc = ask_all(gs, methods, qs)
        updated = layer_pairs(gs)
        t = time.perf_counter()
        gs.augment(knn_incremental=False, defer_share=0, warm=False)
        full_again_s = time.perf_counter() - t
        whole = layer_pairs(gs)
        after_full = ask_all(gs, methods, qs)
    counts = gs.db.read_one(
        "MATCH (c:Chunk) WITH count(c) AS chunks MATCH (e:Entity) RETURN chunks, count(e) AS entities"
    )
    return {
        "passages": n,
        "documents": gs.db.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"] - len(more),
        "chunks": counts["chunks"],
        "entities": counts["entities"],
        "ingest_seconds": round(ingest_s, 1),
        "ingest_stages": ingest_stages,
        "augment_seconds": round(augment_s, 1),
        "augment_stages": stages,
        "walk_graphs_read_seconds": round(warm_s, 1),
        "methods": answers,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_rss_mb_by_phase": rss.stop(),
        "neo4j_heap_used_mb": heap,
        "query_caches_mb": caches,
        "incremental": {
            "added": len(more),
            "ingest_seconds": round(inc_ingest_s, 1),
            "augment_seconds": round(inc_s, 1),
            "augment_stages": inc,
            "share_of_full_augment": round(inc_s / augment_s, 3) if augment_s else None,
            "full_augment_after_seconds": round(full_again_s, 1),
            "index_path_exact_topk": exact_topk,
            "layers_kept": {
                k: round(len(whole[k] & updated.get(k, set())) / len(whole[k]), 4) for k in whole if whole[k]
            },
            "recall@5_after_increment": {m: a["recall@5"] for m, a in after_inc.items()},
            "recall@5_after_full_augment": {m: a["recall@5"] for m, a in after_full.items()},
        },
    }


def markdown(data: dict) -> str:
    runs = data["runs"]
    sizes = " | ".join(f"{r['passages']:,}" for r in runs)
    sep = "|---|" + "---:|" * len(runs)
    out = [
        "# Scale: ingest, augment and every method against corpus size",
        "",
        f"{data['machine']['cpus']} CPUs, {data['machine']['when']}; load average at the start "
        f"{data['load_average_at_start']} (a machine shared with other work: compare ratios, not seconds). "
        f"Corpora: hotpotqa_dev100's 994 passages + seeded synthetic distractors (bench/scale.py); "
        f"{data['questions']} dev questions, top_k {TOP_K}, budget {BUDGET}. Sizes run: "
        + ", ".join(str(r["passages"]) for r in runs)
        + (f"; not run: {', '.join(map(str, data['not_run']))}" if data.get("not_run") else "")
        + ".",
        "",
        f"| | {sizes} |",
        sep,
    ]

    def row(name: str, cells: list[str]) -> None:
        out.append(f"| {name} | " + " | ".join(cells) + " |")

    if len({r.get("when") for r in runs}) > 1:  # sizes kept from other runs (--keep-other-sizes)
        row("run at (commit)", [f"{r.get('when', '?')} ({r.get('commit', '?')})" for r in runs])
    row("chunks / entities", [f"{r['chunks']:,} / {r['entities']:,}" for r in runs])
    row("ingest ms/passage", [f"{1000 * r['ingest_seconds'] / r['passages']:.0f}" for r in runs])
    row("augment ms/passage", [f"{1000 * r['augment_seconds'] / r['passages']:.1f}" for r in runs])
    for stage in runs[-1]["augment_stages"]:
        row(
            f"&nbsp;&nbsp;{stage}",
            [f"{1000 * r['augment_stages'].get(stage, {}).get('seconds', 0) / r['passages']:.2f}" for r in runs],
        )
    row(
        "+1% documents: augment s (share of full)",
        [f"{r['incremental']['augment_seconds']} ({r['incremental']['share_of_full_augment']})" for r in runs],
    )
    for stage in runs[-1]["incremental"]["augment_stages"]:
        row(
            f"&nbsp;&nbsp;+1%: {stage}",
            [_inc_stage(r["incremental"]["augment_stages"].get(stage)) for r in runs],
        )
    row(
        "+1%: updated top-k layers' pairs in a full run's",
        [", ".join(f"{k} {v}" for k, v in r["incremental"]["layers_kept"].items()) for r in runs],
    )
    row(
        "+1%: new nodes' top-k from the index path vs brute force (same ids / as close as the k-th)",
        [_exact(r["incremental"].get("index_path_exact_topk")) for r in runs],
    )
    row("walk graphs read after augment, s", [str(r.get("walk_graphs_read_seconds")) for r in runs])
    row("peak Python RSS MB", [str(r["peak_rss_mb"]) for r in runs])
    row(
        "&nbsp;&nbsp;by phase",
        [", ".join(f"{k} {v}" for k, v in r.get("peak_rss_mb_by_phase", {}).items()) for r in runs],
    )
    row("Neo4j heap used MB", [str(r["neo4j_heap_used_mb"]) for r in runs])
    row("query caches MB", [", ".join(f"{k} {v}" for k, v in r["query_caches_mb"].items()) for r in runs])
    out += [
        "",
        "Per method: Recall@5 · p50 / p95 ms (p50 as a multiple of vector's).",
        "",
        f"| method | {sizes} |",
        sep,
    ]
    for m in runs[0]["methods"]:
        cells = []
        for r in runs:
            x, v = r["methods"][m], r["methods"]["vector"]
            cells.append(
                f"{x['recall@5']:.3f} · {x['p50_ms']:.0f} / {x['p95_ms']:.0f} ({x['p50_ms'] / v['p50_ms']:.1f}x)"
            )
        row(m, cells)
    out += [
        "",
        "Recall@5 after the +1% documents: with the increment's augment (whole-graph stages deferred, top-k "
        "layers updated in place) → after a full augment of the same graph.",
        "",
        f"| method | {sizes} |",
        sep,
    ]
    for m in runs[0]["methods"]:
        row(m, [_after(r["incremental"], m) for r in runs])
    return "\n".join(out) + "\n"


def _exact(layers: dict | None) -> str:
    if not layers:
        return "-"
    cells = [
        f"{k} {v['same_ids']} / {v['as_close_as_kth']} ({v['sampled']} of {v['new_nodes']})"
        if v.get("sampled")
        else f"{k} -"
        for k, v in layers.items()
    ]
    return ", ".join(cells)


def _inc_stage(s: dict | None) -> str:
    if s is None:
        return ""
    return f"{s['seconds']:.1f} s" + (" deferred" if s.get("deferred") else f" {s['path']}" if s.get("path") else "")


def _after(inc: dict, m: str) -> str:
    a, b = inc.get("recall@5_after_increment", {}).get(m), inc.get("recall@5_after_full_augment", {}).get(m)
    return "" if a is None or b is None else f"{a:.3f} → {b:.3f}"


def plot(data: dict) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    runs = data["runs"]
    n = [r["passages"] for r in runs]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    a.plot(n, [1000 * r["ingest_seconds"] / r["passages"] for r in runs], "o-", label="ingest")
    a.plot(n, [1000 * r["augment_seconds"] / r["passages"] for r in runs], "o-", label="augment")
    a.set(xscale="log", xlabel="passages", ylabel="ms per passage", title="cost per passage")
    a.legend()
    for m in runs[0]["methods"]:
        b.plot(n, [r["methods"][m]["p50_ms"] for r in runs], "o-", label=m)
    b.set(xscale="log", yscale="log", xlabel="passages", ylabel="p50 ms", title="latency per question")
    b.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "scale.png", dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated passage counts")
    ap.add_argument("--questions", type=int, default=100, help="dev questions asked per method and size")
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated method names")
    ap.add_argument("--approx-check", action="store_true", help="approximate vs exact augment on the dev graphs")
    ap.add_argument(
        "--reuse-ingest",
        type=float,
        default=None,
        help="SECONDS: the instance already holds the (single) size's ingested graph, which took SECONDS",
    )
    ap.add_argument("--ivf-check", action="store_true", help="inverted file vs exact on the last size's vectors")
    ap.add_argument(
        "--keep-other-sizes",
        action="store_true",
        help="keep the runs of the sizes not given in --sizes from bench/results/scale.json (each row says "
        "when and at which commit its size was run); default: the file holds this run's sizes only",
    )
    args = ap.parse_args()
    if args.ivf_check:
        from scale_approx import ivf_check

        return ivf_check()
    if args.approx_check:
        from scale_approx import main as approx

        return approx()
    sizes = [int(s) for s in args.sizes.split(",")]
    data = {"machine": machine(), "load_average_at_start": list(os.getloadavg()), "questions": args.questions}
    kept = []
    if args.keep_other_sizes and (RESULTS / "scale.json").exists():
        before = json.loads((RESULTS / "scale.json").read_text())
        kept = [r for r in before["runs"] if r["passages"] not in sizes]
        for r in kept:
            r.setdefault("when", before["machine"]["when"])
            r.setdefault("load_average_at_start", before["load_average_at_start"])
    data["runs"] = kept
    gs = open_instance()
    for n in sizes:
        started = {
            "when": machine()["when"],
            "commit": commit(),
            "load_average_at_start": list(os.getloadavg()),
            "neo4j_memory": {"heap": HEAP, "pagecache": PAGECACHE},
        }
        data["runs"].append(started | run_size(gs, n, args.methods.split(","), args.questions, args.reuse_ingest))
        data["runs"].sort(key=lambda r: r["passages"])
        data["not_run"] = [s for s in SIZES if s not in [r["passages"] for r in data["runs"]]]
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "scale.json").write_text(json.dumps(data, indent=2))  # each size as it ends
        (RESULTS / "scale.md").write_text(markdown(data))
        plot(data)
    print(markdown(data))


if __name__ == "__main__":
    main()
