"""Ingest + augment of hotpotqa_dev100 by an earlier commit and by this checkout, one after the other on
the same machine (the earlier code from a git worktree, each run in a fresh process, no vector cache):

    python bench/ingest_vs.py --ref f4ba806      # writes bench/results/ingest_vs.{json,md}

Each side runs its own bench/ingest.py (an empty graph in the `bench` instance, then every augment
stage), so each is measured by the code and the benchmark of its time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import DATA, ROOT, machine, write


def run_ingest_bench(checkout: Path) -> dict:
    env = os.environ | {
        "PYTHONPATH": str(checkout),  # the checkout's graphstrata, not the installed one
        "GRAPHSTRATA_BENCH_DATA": str(DATA),
        "GRAPHSTRATA_EMBED_CACHE": "false",
    }
    subprocess.run([sys.executable, str(checkout / "bench" / "ingest.py")], cwd=checkout, env=env, check=True)
    return json.loads((checkout / "bench" / "results" / "ingest.json").read_text())


def augment_seconds(r: dict) -> float:
    """Augment's wall time (older benchmarks, whose stages ran one after the other, kept only the stages')."""
    return r.get("augment_total_seconds") or sum(r.get("augment_seconds", {}).values())


def total(r: dict) -> float:
    return r["total_seconds"] + augment_seconds(r)


def main(ref: str, rounds: int = 1) -> dict:
    """``rounds`` pairs of runs, alternating which side goes first (before/after, after/before, …): a
    shared machine's speed drifts by ~10% between runs, so one pair can mislead."""
    befores, afters = [], []
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        subprocess.run(["git", "worktree", "add", "--detach", str(old), ref], cwd=ROOT, check=True)
        try:
            for i in range(rounds):
                for side in ("before", "after") if i % 2 == 0 else ("after", "before"):
                    if side == "before":
                        befores.append(run_ingest_bench(old))
                    else:
                        afters.append(run_ingest_bench(ROOT))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, check=False)
    b, a = statistics.median(map(total, befores)), statistics.median(map(total, afters))
    before, after = befores[-1], afters[-1]
    data = {"machine": machine(), "ref": ref, "rounds": rounds, "before": before, "after": after}
    data |= {"before_runs": befores, "after_runs": afters, "median_ratio": round(a / b, 3)}
    order = "one run each, one after the other" if rounds == 1 else f"{rounds} rounds, alternating which goes first"
    md = [
        f"# Ingest + augment, {ref} vs this checkout (hotpotqa_dev100, no LLM, no vector cache)",
        "",
        f"{machine()['cpus']} CPUs, {machine()['when']}, {order}.",
        "",
        "| | run | ingest s | embed s | augment s | total s |",
        "|---|---|---|---|---|---|",
    ]
    for name, runs in (("before", befores), ("after", afters)):
        for i, r in enumerate(runs, 1):
            aug = augment_seconds(r)
            md.append(
                f"| {name} | {i} | {r['total_seconds']:.1f} | {r['embed_seconds']:.1f} | {aug:.1f} | {total(r):.1f} |"
            )
    md += ["", f"After / before (medians): **{a / b:.2f}** of the time ({b / a:.1f}x faster)."]
    if rounds > 1:
        ratios = ", ".join(f"{total(x) / total(y):.3f}" for x, y in zip(afters, befores, strict=True))
        md += [f"Each round's after / before: {ratios}."]
    stages = sorted(set(before.get("augment_seconds", {})) | set(after.get("augment_seconds", {})))
    md += ["", "Stages of the last run of each side (the after side's two lanes overlap).", ""]
    md += ["| augment stage | before s | after s |", "|---|---|---|"]
    was, now = before.get("augment_seconds", {}), after.get("augment_seconds", {})
    md += [f"| {s} | {was.get(s, '-')} | {now.get(s, '-')} |" for s in stages]
    write("ingest_vs", data, "\n".join(md) + "\n")
    return data


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", required=True, help="the earlier commit (e.g. the round's starting point)")
    ap.add_argument("--rounds", type=int, default=1, help="pairs of runs, alternating which side goes first")
    a = ap.parse_args()
    main(a.ref, a.rounds)
