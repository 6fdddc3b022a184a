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


def main(ref: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        subprocess.run(["git", "worktree", "add", "--detach", str(old), ref], cwd=ROOT, check=True)
        try:
            before = run_ingest_bench(old)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, check=False)
    after = run_ingest_bench(ROOT)
    data = {"machine": machine(), "ref": ref, "before": before, "after": after}
    b, a = total(before), total(after)
    md = [
        f"# Ingest + augment, {ref} vs this checkout (hotpotqa_dev100, no LLM, no vector cache)",
        "",
        f"{machine()['cpus']} CPUs, {machine()['when']}, one run each, one after the other.",
        "",
        "| | ingest s | embed s | augment s | total s |",
        "|---|---|---|---|---|",
    ]
    for name, r in (("before", before), ("after", after)):
        aug = augment_seconds(r)
        md.append(f"| {name} | {r['total_seconds']:.1f} | {r['embed_seconds']:.1f} | {aug:.1f} | {total(r):.1f} |")
    md += ["", f"After / before: **{a / b:.2f}** of the time ({b / a:.1f}x faster)."]
    stages = sorted(set(before.get("augment_seconds", {})) | set(after.get("augment_seconds", {})))
    md += ["", "| augment stage | before s | after s |", "|---|---|---|"]
    was, now = before.get("augment_seconds", {}), after.get("augment_seconds", {})
    md += [f"| {s} | {was.get(s, '-')} | {now.get(s, '-')} |" for s in stages]
    write("ingest_vs", data, "\n".join(md) + "\n")
    return data


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", required=True, help="the earlier commit (e.g. the round's starting point)")
    main(ap.parse_args().ref)
