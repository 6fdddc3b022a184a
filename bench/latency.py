"""Every retrieval method's latency next to `vector`, interleaved question by question (issue #21:
every method's p50 within 3x of `vector`'s in one run), on hotpotqa_dev100's graph as bench/graphs.py
built it (instance ``bench-hotpotqa``; read only: nothing is written to it).

    python bench/latency.py [--methods vector,hipporag,…] [--repeats 3] [--label before]
                            [--compare before]   # bench/results/latency.{json,md}

Per question, each method runs back to back with a `vector` call of its own: which of the two goes
first alternates (by question and by method), and the methods' order rotates from one question to
the next, so that load from other processes on the shared machine falls on both of a pair alike.
The ratio of a method is its p50 over the p50 of the `vector` calls it was paired with. Before every
call the question caches are cleared (the embedder's vectors and the question entities, as
bench/graphs.py does between methods): each call pays for its own embedding and entities, as a new
question would. Parameters are bench/graphs.py's (budget 1000; top_k 10 unless the method has no
item cap; the variants of its VARIANTS table, e.g. ``fusion-all``).

Reported per method: p50 / p95 of the wall time of ``retrieve``, the ratio to vector's p50 (and
p95), the per-stage medians of its ``timings_ms`` ("other": the rest of the call), Recall@2/5
scored as bench/graphs.py scores them, and a digest of its results (every item's id and score, per
question): ``--compare LABEL`` checks that a speed change returned exactly what run LABEL returned.
Runs are kept in latency.json under their ``--label``; latency.md shows every kept run, the ratios
side by side. Only interleaved ratios are meaningful: the machine is shared, absolute ms are not.

The interleaving loop (:func:`interleaved`) is also bench/e2_latency.py's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

BASELINE = "vector"
CACHED = "vector, embedding cached"
DEFAULT_METHODS = [
    "vector",
    "hipporag",
    "noderag",
    "ketrag",
    "e2graphrag",
    "sgrag",
    "darag",
    "fusion",
    "fusion-all",
    "auto",
]
GRAPH = "hotpotqa"


def percentile(xs: list[float], q: float) -> float:
    import numpy as np

    return round(float(np.percentile(xs, q)), 2) if xs else float("nan")


def spread(xs: list[float]) -> dict[str, float]:
    return {"min": min(xs), "median": round(statistics.median(xs), 2), "max": max(xs)}


def result_key(res) -> list[list]:
    """What a retrieval returned, for comparing two runs: every item's id and score, in order."""
    return [[i.node_id, i.score] for i in res.items]


def digest(res) -> str:
    return hashlib.sha1(json.dumps(result_key(res)).encode()).hexdigest()[:12]


@dataclass
class Calls:
    """One row's calls in one pass: its times, the times of the `vector` calls paired with it, stages,
    scores, notes' branches and results."""

    ms: list[float] = field(default_factory=list)
    vector_ms: list[float] = field(default_factory=list)
    stages: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    scores: list[dict] = field(default_factory=list)
    branches: Counter = field(default_factory=Counter)
    digests: list[str] = field(default_factory=list)
    items: list[list] = field(default_factory=list)

    def add(self, res, total: float, scored: dict) -> None:
        self.ms.append(total)
        for name, v in res.timings_ms.items():
            self.stages[name].append(v)
        self.stages["other"].append(total - sum(res.timings_ms.values()))
        self.scores.append(scored)
        branch = res.notes.get("branch") or res.notes.get("route")
        if branch:
            self.branches[branch] += 1
        self.digests.append(digest(res))
        self.items.append(result_key(res))

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"p50_ms": percentile(self.ms, 50), "p95_ms": percentile(self.ms, 95)}
        if self.vector_ms:
            v50, v95 = percentile(self.vector_ms, 50), percentile(self.vector_ms, 95)
            out |= {
                "vector_p50_ms": v50,
                "vector_p95_ms": v95,
                "ratio_p50": round(out["p50_ms"] / v50, 2),
                "ratio_p95": round(out["p95_ms"] / v95, 2),
            }
        for k in ("r2", "r5"):
            if self.scores and k in self.scores[0]:
                out[f"recall@{k[1]}"] = round(statistics.mean(s[k] for s in self.scores), 3)
        # per-stage medians over the questions that ran the stage (n of them)
        out["stages"] = {k: {"median_ms": percentile(v, 50), "n": len(v)} for k, v in self.stages.items()}
        if self.branches:
            out["branches"] = dict(self.branches)
        out["digests"] = self.digests
        return out


def interleaved(
    gs,
    questions: list[dict],
    rows: list[str],
    plan: Callable[[str], tuple[str, dict]],
    score: Callable[[Any, dict], dict],
    *,
    cached: bool = False,
    clear: Callable[[], None] | None = None,
) -> dict[str, Calls]:
    """One pass over `questions`: every row (a method, or a variant that `plan` maps to (method,
    params)) back to back with a `vector` call of its own, who goes first alternating, the rows' order
    rotating per question; the question caches cleared (`clear`) before every call. With `cached`, one
    more `vector` call per question with the question's embedding cached (row CACHED: the graph half
    of `vector`). `vector` in `rows` is the baseline itself: its row pools every `vector` call."""
    clear = clear or (lambda: getattr(gs.embedder, "clear_cache", lambda: None)())
    others = [r for r in rows if r != BASELINE]
    calls: dict[str, Calls] = {r: Calls() for r in [BASELINE, *others, *([CACHED] if cached else [])]}
    base_method, base_params = plan(BASELINE)
    for i, q in enumerate(questions):
        order = others[i % len(others) :] + others[: i % len(others)] if others else []
        first_vector = True
        for j, row in enumerate(order or [None]):
            pair = [BASELINE] if row is None else [BASELINE, row] if (i + j) % 2 == 0 else [row, BASELINE]
            for m in pair:
                method, params = plan(m)
                clear()
                t = time.perf_counter()
                res = gs.retrieve(q["question"], method, **params)
                total = (time.perf_counter() - t) * 1000
                if m != BASELINE:
                    calls[m].add(res, total, score(res, q))
                    continue
                if row is not None:
                    calls[row].vector_ms.append(total)
                if first_vector:  # the baseline's results once per question; its times all
                    calls[BASELINE].add(res, total, score(res, q))
                    first_vector = False
                else:
                    calls[BASELINE].ms.append(total)
        if cached:
            gs.embedder.embed([q["question"]])  # cached now, whichever call was last
            t = time.perf_counter()
            gs.retrieve(q["question"], base_method, **base_params)
            calls[CACHED].ms.append((time.perf_counter() - t) * 1000)
    return calls


def one_run(gs, questions: list[dict], rows: list[str], repeats: int, warmup: int, items_file: str | None) -> dict:
    from graphs import clear_question_caches, passages, plan, score

    passage = passages(gs, GRAPH)
    for q in questions[:warmup]:  # loads spaCy and the embedder, reads the walk graphs, warms the plans
        for row in dict.fromkeys([BASELINE, *rows]):
            method, params = plan(row)
            gs.retrieve(q["question"], method, **params)
    reps = []
    for r in range(repeats):
        load = os.getloadavg()[0]
        t = time.perf_counter()
        calls = interleaved(
            gs, questions, rows, plan, lambda res, q: score(res, passage, q), clear=lambda: clear_question_caches(gs)
        )
        rep = {row: c.summary() for row, c in calls.items() if row in rows or row == BASELINE}
        rep["load_avg"] = [round(load, 2), round(os.getloadavg()[0], 2)]
        rep["seconds"] = round(time.perf_counter() - t, 1)
        reps.append(rep)
        print(
            f"repeat {r + 1} ({rep['seconds']} s, load {rep['load_avg']}): "
            + ", ".join(f"{m} {rep[m].get('ratio_p50', 1.0)}x" for m in rows if m != BASELINE),
            flush=True,
        )
        if items_file and r == 0:
            with open(items_file, "w") as f:
                json.dump({row: c.items for row, c in calls.items()}, f)
    return {"repeats": reps}


def combine(run: dict, rows: list[str]) -> dict:
    """Per row over the repeats: median ratio (and its spread), last repeat's stages and recall, and
    whether every repeat returned the same results."""
    reps = run["repeats"]
    out = {}
    for row in rows:
        per = [x[row] for x in reps]
        s = {
            "p50_ms": round(statistics.median(x["p50_ms"] for x in per), 2),
            "p95_ms": round(statistics.median(x["p95_ms"] for x in per), 2),
            "recall@2": per[-1].get("recall@2"),
            "recall@5": per[-1].get("recall@5"),
            "stages": per[-1]["stages"],
            "branches": per[-1].get("branches"),
            # per question (space-separated), the distinct results seen over the repeats ('|'-separated:
            # one, unless the graph's answers vary)
            "digests": " ".join("|".join(sorted(set(d))) for d in zip(*(x["digests"] for x in per), strict=True)),
            "same_results_every_repeat": all(x["digests"] == per[0]["digests"] for x in per),
        }
        if row != BASELINE:
            ratios = [x["ratio_p50"] for x in per]
            s |= {
                "ratio_p50": round(statistics.median(ratios), 2),
                "ratio_p50_spread": spread(ratios),
                "ratio_p95": round(statistics.median(x["ratio_p95"] for x in per), 2),
                "vector_p50_ms": round(statistics.median(x["vector_p50_ms"] for x in per), 2),
            }
        out[row] = s
    return out


def compare(now: dict, before: dict) -> dict[str, Any]:
    """Per row in both runs: the questions on which this run returned a result (ids and scores) that
    the other run never returned in any of its repeats."""
    out = {}
    for row, s in now.items():
        if row in before:
            a, b = ([set(d.split("|")) for d in r["digests"].split()] for r in (s, before[row]))
            out[row] = [i for i, (x, y) in enumerate(zip(a, b, strict=False)) if not x <= y] + (
                ["question count differs"] if len(a) != len(b) else []
            )
    return out


def report(runs: dict[str, dict]) -> str:
    labels = list(runs)
    rows = list(dict.fromkeys(r for x in runs.values() for r in x["methods"]))
    md = [
        "# Retrieval latency next to `vector` (hotpotqa_dev100, interleaved)",
        "",
        "Each method runs back to back with its own `vector` call on every question (first alternating, order of "
        "the methods rotating), the question caches cleared before every call; ratio = the method's p50 over the "
        "p50 of its paired `vector` calls (median over the repeats). Parameters as bench/graphs.py (budget 1000, "
        "top_k 10 unless uncapped). The machine is shared: only the ratios compare, not the ms. Written by "
        "bench/latency.py.",
        "",
        "| method | "
        + " | ".join(f"ratio p50 ({lab})" for lab in labels)
        + " | "
        + " | ".join(f"p50 ms ({lab})" for lab in labels)
        + " | "
        + " | ".join(f"R@5 ({lab})" for lab in labels)
        + " |",
        "|---|" + "---|" * (3 * len(labels)),
    ]
    for row in rows:
        cells = []
        for key, fmt in (("ratio_p50", "{}"), ("p50_ms", "{}"), ("recall@5", "{:.3f}")):
            for lab in labels:
                s = runs[lab]["methods"].get(row)
                v = None if s is None else (1.0 if key == "ratio_p50" and row == BASELINE else s.get(key))
                cells.append("-" if v is None else fmt.format(v))
        md.append(f"| {row} | " + " | ".join(cells) + " |")
    for lab in labels:
        x = runs[lab]
        md += [
            "",
            f"## {lab}",
            "",
            f"{x['machine']['when']}, {x['machine']['cpus']} CPUs shared with other work; "
            f"commit {x.get('commit', '?')}; "
            f"{x['questions']} questions, {x['warmup']} warm-up, {len(x['repeats'])} repeat(s); load average "
            + ", ".join(f"{a} → {b}" for a, b in (r["load_avg"] for r in x["repeats"]))
            + ".",
            *([x["note"], ""] if x.get("note") else []),
            "| method | p50 ms | p95 ms | paired vector p50 | ratio p50 (min–max) | ratio p95 | R@2 | R@5 | "
            "same results every repeat |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for row, s in x["methods"].items():
            sp = s.get("ratio_p50_spread")
            ratio = f"{s['ratio_p50']} ({sp['min']}–{sp['max']})" if sp else "1.0"
            md.append(
                f"| {row} | {s['p50_ms']} | {s['p95_ms']} | {s.get('vector_p50_ms', '-')} | {ratio} "
                f"| {s.get('ratio_p95', '-')} | {s['recall@2']:.3f} | {s['recall@5']:.3f} "
                f"| {'yes' if s['same_results_every_repeat'] else 'NO'} |"
            )
        md += ["", "Stages (last repeat; median ms over the questions that ran them, n):", ""]
        for row, s in x["methods"].items():
            stages = ", ".join(f"{k} {v['median_ms']} ({v['n']})" for k, v in s["stages"].items())
            md.append(f"- {row}: {stages}" + (f"; branches {s['branches']}" if s.get("branches") else ""))
        for other, diff in x.get("compared_to", {}).items():
            same = [r for r, d in diff.items() if not d]
            differ = {r: d for r, d in diff.items() if d}
            md += [
                "",
                f"Results compared with run `{other}` (every item's id and score, every question): identical for "
                + (", ".join(same) or "none")
                + (
                    "; differ for " + "; ".join(f"{r} ({len(d)} questions: {d[:10]})" for r, d in differ.items())
                    if differ
                    else ""
                )
                + ".",
            ]
    return "\n".join(md) + "\n"


def main(
    rows: list[str],
    repeats: int,
    warmup: int,
    limit: int | None,
    label: str,
    against: list[str],
    items: str | None,
    note: str = "",
    commit: str = "",
) -> dict:
    import subprocess

    from common import RESULTS, machine, write
    from graphs import open_instance, questions_of

    questions = questions_of(GRAPH)[:limit]
    with open_instance(GRAPH) as gs:
        run = one_run(gs, questions, rows, repeats, warmup, items)
    out_file = RESULTS / "latency.json"
    data = json.loads(out_file.read_text()) if out_file.exists() else {"runs": {}}
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    this = {
        "machine": machine(),
        "commit": commit or head,
        "questions": len(questions),
        "warmup": warmup,
        "repeats": [{k: v for k, v in r.items() if k in ("load_avg", "seconds")} for r in run["repeats"]],
        "methods": combine(run, [BASELINE, *[r for r in rows if r != BASELINE]]),
        **({"note": note} if note else {}),
    }
    this["compared_to"] = {o: compare(this["methods"], data["runs"][o]["methods"]) for o in against}
    data["runs"][label] = this
    write("latency", data, report(data["runs"]))
    return this


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS), help="methods or graphs.py variants")
    ap.add_argument("--repeats", type=int, default=3, help="passes over the questions (default 3)")
    ap.add_argument("--warmup", type=int, default=5, help="questions asked of every method before timing (default 5)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions (quick checks)")
    ap.add_argument("--label", default="latest", help="name of this run in latency.json (e.g. before, after)")
    ap.add_argument("--compare", default="", help="comma-separated labels of kept runs to check results against")
    ap.add_argument("--items", default=None, help="also write every result's items (id, score) to this file")
    ap.add_argument("--note", default="", help="a sentence about this run for latency.md")
    ap.add_argument("--commit", default="", help="commit of the code measured (default: HEAD)")
    a = ap.parse_args()
    against = [x for x in a.compare.split(",") if x]
    main(a.methods.split(","), a.repeats, a.warmup, a.limit, a.label, against, a.items, a.note, a.commit)
