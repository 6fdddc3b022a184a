"""Load test of the HTTP API: concurrent `POST /retrieve` calls against a real server process.

    python bench/load.py [--duration 30] [--levels 1,2,4,8,16] [--methods vector,noderag]

Bounded and local by construction: the server is started here on a free 127.0.0.1 port with a
random API key (nothing else can reach it), each method is measured for `--duration` seconds in
total (split evenly over the concurrency levels), then the server is stopped. The graph is the
benchmarks' own Neo4j (instance `bench`, or NEO4J_URI); the corpus (samples/ by default) is
ingested through `POST /documents` when it is not there yet, with the GDS layers NodeRAG uses.

Each level runs `c` client coroutines (httpx, one connection each) that send questions back to
back; reported per level: requests, errors, throughput, latency p50/p95/p99 (client-side wall
time). "Holds" is the highest level with no error. Questions cycle through the question file, so
after the first pass their embeddings come from the embedder's cache: this measures the graph
side of retrieval under concurrency, not the embedding of new text (~30 ms per question here).
Writes bench/results/load.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
from common import ROOT, bench_settings, machine, write

CORPUS = ROOT / "samples" / "corpus" / "hotpotqa_sample.jsonl"
QUESTIONS = ROOT / "samples" / "questions.jsonl"
NODERAG_STAGES = ["important_entities", "communities", "semantic_matching", "semantic_edges"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(settings, key: str) -> dict[str, str]:
    return settings.subprocess_env(GRAPHSTRATA_API_KEY=key, PYTHONPATH=str(ROOT))


def start_server(settings, key: str, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [sys.executable, "-c", "from graphstrata.cli import app; app()", "serve", "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--log-level", "warning"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=server_env(settings, key), stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}:\n{log.read_text()}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return proc, url
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"the server did not come up:\n{log.read_text()}")
        time.sleep(0.5)


def ensure_corpus(client: httpx.Client, corpus: Path) -> dict:
    """Ingest (a no-op when unchanged) and build NodeRAG's layers once; returns the job."""
    stats = client.get("/stats").json()
    has_layers = stats["labels"].get("HighLevel", 0) > 0
    with open(corpus, "rb") as f:
        data = {"augment": json.dumps(False if has_layers else NODERAG_STAGES)}
        r = client.post("/documents", files={"files": (corpus.name, f.read())}, data=data)
    r.raise_for_status()
    job_id = r.json()["id"]
    while True:
        job = client.get(f"/jobs/{job_id}").json()
        if job["state"] in ("succeeded", "failed"):
            break
        time.sleep(1)
    if job["state"] != "succeeded":
        raise SystemExit(f"ingest failed: {job['error']}")
    return job


async def level(url: str, key: str, method: str, questions: list[str], concurrency: int, seconds: float) -> dict:
    """`concurrency` clients sending back to back for `seconds`; latency of each request."""
    latencies: list[float] = []
    errors: dict[str, int] = {}
    deadline = time.perf_counter() + seconds
    counter = 0

    async def client(i: int) -> None:
        nonlocal counter
        async with httpx.AsyncClient(
            base_url=url,
            headers={"Authorization": f"Bearer {key}"},
            timeout=120,
            limits=httpx.Limits(max_connections=1),
        ) as http:
            while time.perf_counter() < deadline:
                q = questions[(counter + i) % len(questions)]
                counter += 1
                t = time.perf_counter()
                try:
                    r = await http.post("/retrieve", json={"question": q, "method": method})
                    ok = r.status_code == 200
                    kind = f"HTTP {r.status_code} {r.json().get('error', {}).get('code', '')}".strip() if not ok else ""
                except httpx.HTTPError as e:
                    ok, kind = False, type(e).__name__
                if ok:
                    latencies.append((time.perf_counter() - t) * 1000)
                else:
                    errors[kind] = errors.get(kind, 0) + 1

    start = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(concurrency)))
    wall = time.perf_counter() - start  # includes the requests in flight at the deadline
    ms = np.array(latencies) if latencies else np.array([np.nan])
    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "seconds": round(wall, 2),
        "throughput_rps": round(len(latencies) / wall, 2),
        "p50_ms": round(float(np.nanpercentile(ms, 50)), 1),
        "p95_ms": round(float(np.nanpercentile(ms, 95)), 1),
        "p99_ms": round(float(np.nanpercentile(ms, 99)), 1),
    }


def markdown(data: dict) -> str:
    lines = [
        "# HTTP load test: concurrent `POST /retrieve`",
        "",
        f"{data['machine']['cpus']} CPUs, {data['machine']['when']}; server and load generator on the same "
        f"machine (loopback), one uvicorn process; load average at the start "
        f"{data['machine'].get('load_average_at_start')} (other work on the machine competes for the 2 cores). "
        f"Corpus: {data['corpus']} ({data['documents']} documents). "
        f"{data['seconds_per_level']:g} s per level, {len(data['questions'])} questions cycled (their embeddings "
        "are cached after the first pass).",
        "",
        "| method | concurrency | requests | errors | throughput (req/s) | p50 ms | p95 ms | p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for method, levels in data["methods"].items():
        for lv in levels:
            lines.append(
                f"| {method} | {lv['concurrency']} | {lv['requests']} | {lv['errors']} | {lv['throughput_rps']} "
                f"| {lv['p50_ms']} | {lv['p95_ms']} | {lv['p99_ms']} |"
            )
    lines.append("")
    top = max(lv["concurrency"] for levels in data["methods"].values() for lv in levels)
    for method, held in data["holds"].items():
        best = max(data["methods"][method], key=lambda lv: lv["throughput_rps"])
        lines.append(
            f"- **{method}**: no errors up to concurrency {held}"
            + (" (the highest level measured)" if held == top else "")
            + f"; peak {best['throughput_rps']} req/s at concurrency {best['concurrency']} "
            f"(p95 {best['p95_ms']} ms). Past the peak, more clients only queue: latency grows, throughput does not."
        )
    if data.get("notes"):
        lines += ["", *data["notes"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=30.0, help="seconds of load per method (split over levels)")
    ap.add_argument("--levels", default="1,2,4,8,16", help="concurrency levels")
    ap.add_argument("--methods", default="vector,noderag")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    methods = [m for m in args.methods.split(",") if m]
    per_level = max(3.0, args.duration / len(levels))
    questions = [json.loads(x)["question"] for x in args.questions.read_text().splitlines() if x.strip()]

    settings = bench_settings()
    key = secrets.token_urlsafe(24)
    log = Path(tempfile.mkdtemp(prefix="graphstrata-load-")) / "server.log"
    proc, url = start_server(settings, key, log)
    out: dict = {"machine": machine(), "corpus": str(args.corpus.relative_to(ROOT)), "seconds_per_level": per_level}
    out["machine"]["load_average_at_start"] = [round(x, 2) for x in os.getloadavg()]  # a shared machine?
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=600) as client:
            job = ensure_corpus(client, args.corpus)
            out["ingest_seconds"] = job["seconds"]
            out["documents"] = client.get("/stats").json()["labels"].get("Document", 0)
            for m in methods:  # warm-up: projections, caches, the first embedding of every question
                for q in questions:
                    client.post("/retrieve", json={"question": q, "method": m}).raise_for_status()
        out["questions"] = questions
        out["methods"] = {}
        for m in methods:
            out["methods"][m] = []
            for c in levels:
                result = asyncio.run(level(url, key, m, questions, c, per_level))
                print(m, result, flush=True)
                out["methods"][m].append(result)
        out["holds"] = {
            m: max((lv["concurrency"] for lv in lvls if lv["errors"] == 0 and lv["requests"]), default=0)
            for m, lvls in out["methods"].items()
        }
        if proc.poll() is not None:
            raise SystemExit(f"the server died during the test:\n{log.read_text()}")
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    write("load", out, markdown(out))


if __name__ == "__main__":
    main()
