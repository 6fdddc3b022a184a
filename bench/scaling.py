"""How ingest and every augment stage grow with the corpus: the first 50, 250, 994 and 1,890 passages
of musique_dev50 (identity: the record's id), each into an empty graph, no LLM, no vector cache.

    python bench/scaling.py [--sizes 50,250,994,1890]   # bench/results/scaling.{json,md,png}

The plot needs matplotlib (``pip install -e '.[bench]'``); without it the table is still written.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from common import RESULTS, ROOT, machine, open_graph, wipe, write

MUSIQUE = Path(os.environ.get("GRAPHSTRATA_MUSIQUE_DATA", ROOT.parent / "shared" / "data" / "musique_dev50"))
SIZES = [50, 250, 994, 1890]


def run_size(records: list[dict], n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp, open_graph() as gs:
        path = Path(tmp) / f"musique_first_{n}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records[:n]))
        wipe(gs)
        t = time.perf_counter()
        report = gs.ingest([path])
        ingest_s = time.perf_counter() - t
        t = time.perf_counter()
        stages = {r.stage: r.seconds for r in gs.augment()}
        augment_s = time.perf_counter() - t
    return {
        "passages": n,
        "documents": report.documents_new,
        "ingest_seconds": round(ingest_s, 2),
        "ingest_stages": {k: round(v, 2) for k, v in report.seconds.items()},
        "augment_seconds": round(augment_s, 2),
        "augment_stages": {k: round(v, 2) for k, v in stages.items()},
    }


def markdown(data: dict) -> str:
    rows = data["runs"]
    stages = list(rows[-1]["augment_stages"])
    head = "| passages | " + " | ".join(str(r["passages"]) for r in rows) + " |"
    sep = "|---|" + "---:|" * len(rows)

    def line(name: str, seconds: list[float]) -> str:
        cells = [f"{s:.1f} s ({1000 * s / r['passages']:.0f})" for s, r in zip(seconds, rows, strict=True)]
        return f"| {name} | " + " | ".join(cells) + " |"

    out = [
        "# Ingest and augment against corpus size (musique_dev50, no LLM, no vector cache)",
        "",
        f"{data['machine']['cpus']} CPUs, {data['machine']['when']}, load average at the start "
        f"{data['load_average_at_start']}. Each size: the first n passages into an empty graph, then "
        "`augment()` (every stage). Cells: seconds (ms per passage).",
        "",
        head,
        sep,
        line("**ingest**", [r["ingest_seconds"] for r in rows]),
        *(line(f"ingest: {k}", [r["ingest_stages"].get(k, 0.0) for r in rows]) for k in rows[-1]["ingest_stages"]),
        line("**augment**", [r["augment_seconds"] for r in rows]),
        *(line(f"augment: {k}", [r["augment_stages"].get(k, 0.0) for r in rows]) for k in stages),
        "",
        "![scaling](scaling.png)" if data.get("plot") else "(no plot: matplotlib is not installed)",
        "",
    ]
    return "\n".join(out)


def plot(data: dict, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = data["runs"]
    n = [r["passages"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    left.plot(n, [r["ingest_seconds"] for r in rows], "o-", label="ingest")
    left.plot(n, [r["augment_seconds"] for r in rows], "s-", label="augment")
    left.set(xlabel="passages", ylabel="seconds", title="total time")
    left.legend()
    series = {"ingest": [r["ingest_seconds"] for r in rows]}
    for k in rows[-1]["augment_stages"]:
        series[k] = [r["augment_stages"].get(k, 0.0) for r in rows]
    colours = plt.get_cmap("tab20").colors
    for i, (name, secs) in enumerate(series.items()):
        per = [1000 * s / p for s, p in zip(secs, n, strict=True)]
        right.plot(n, per, "os^v"[i % 4] + "-", color=colours[i % len(colours)], label=name)
    right.set(xlabel="passages", ylabel="ms per passage", title="time per passage", xscale="log", yscale="log")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated passage counts")
    ap.add_argument("--out", default="scaling", help="results file stem in bench/results")
    a = ap.parse_args()
    records = [json.loads(x) for x in (MUSIQUE / "corpus.jsonl").read_text().splitlines() if x.strip()]
    data = {"machine": machine(), "load_average_at_start": [round(x, 2) for x in os.getloadavg()], "runs": []}
    for n in (int(x) for x in a.sizes.split(",")):
        print(f"[{n} passages] ingest + augment …", flush=True)
        data["runs"].append(run_size(records, n))
    data["plot"] = plot(data, RESULTS / f"{a.out}.png")
    write(a.out, data, markdown(data))


if __name__ == "__main__":
    main()
