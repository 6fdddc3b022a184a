"""Peak memory of `graphstrata ingest` on one large text document, by document size.

    python bench/ingest_memory.py --sizes 1,5,10,25,50   # MB; writes bench/results/ingest_memory.{json,md}

Each size is a seeded, generated prose file (names, places, years: spaCy finds entities in it) ingested
by the CLI in a fresh process with the default extractor (spaCy when no LLM is configured); the peak
is that process's own high-water RSS (``ru_maxrss``), printed by the process as it exits. The database
is the one the environment names (GRAPHSTRATA_INSTANCE/ports or NEO4J_URI); each run wipes it first.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
_SYLLABLES = ["ka", "lo", "mer", "an", "di", "tru", "vel", "os", "ha", "rin", "es", "ul", "bra", "ton", "ny", "se"]
_VERBS = ["founded", "visited", "described", "rebuilt", "governed", "painted", "mapped", "left", "praised", "studied"]
_NOUNS = ["mill", "archive", "bridge", "harbour", "library", "court", "river crossing", "market", "chapel", "school"]


def prose(size_bytes: int, seed: int = 45) -> str:
    """``size_bytes`` of English-like prose (ASCII), the same for the same seed."""
    rng = random.Random(seed)
    word = lambda n: "".join(rng.choice(_SYLLABLES) for _ in range(n)).capitalize()  # noqa: E731
    people = [f"{word(2)} {word(3)}" for _ in range(400)]
    places = [word(3) for _ in range(200)]
    parts: list[str] = []
    size = 0
    while size < size_bytes:
        paragraph = " ".join(
            f"{rng.choice(people)} {rng.choice(_VERBS)} the {rng.choice(_NOUNS)} of {rng.choice(places)} "
            f"in {rng.randint(1200, 2020)}."
            for _ in range(rng.randint(3, 8))
        )
        parts.append(paragraph + "\n\n")
        size += len(paragraph) + 2
    return "".join(parts)[:size_bytes]


_CHILD = (
    "import atexit, resource, sys\n"
    "atexit.register(lambda: print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
    "file=sys.stderr))\n"
    "from graphstrata.cli import app\n"
    "sys.argv = ['graphstrata', 'ingest', '-q', *sys.argv[1:]]\n"
    "app()\n"
)


def measure(mb: float, folder: Path) -> dict:
    path = folder / f"large-{mb:g}mb.txt"
    path.write_text(prose(int(mb * 1_000_000)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GRAPHSTRATA_CHAT_MODEL"):  # the default: spaCy extraction
        env.pop(name, None)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    peak = next((int(line.split()[1]) for line in out.stderr.splitlines() if line.startswith("PEAK_RSS_KB")), None)
    path.unlink()
    row = {
        "mb": mb,
        "peak_rss_mb": round(peak / 1024) if peak else None,
        "seconds": round(seconds, 1),
        "exit": out.returncode,
        "tail": (out.stdout + out.stderr).strip().splitlines()[-3:],
    }
    print(json.dumps(row), flush=True)
    return row


def wipe() -> None:
    from graphstrata.client import GraphStrata
    from graphstrata.cypher import query

    with GraphStrata() as gs:
        gs.db.auto(query("meta.wipe"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,5,10,25,50", help="document sizes in MB (10^6 bytes), comma-separated")
    ap.add_argument("--name", default="ingest_memory", help="result file name under bench/results")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="graphstrata-memory-") as tmp:
        for mb in (float(x) for x in args.sizes.split(",")):
            wipe()
            rows.append(measure(mb, Path(tmp)))
    from graphstrata.ingest.parts import PART_TEXT_CHARS

    data = {"part_text_chars": PART_TEXT_CHARS, "runs": rows}
    lines = [
        "# Peak memory of `graphstrata ingest` on one large text document",
        "",
        "Reproduce: `python bench/ingest_memory.py --sizes " + args.sizes + "` (spaCy extraction, defaults).",
        "",
        "| document (MB) | peak RSS (MB) | seconds | exit |",
        "|---:|---:|---:|---:|",
        *[f"| {r['mb']:g} | {r['peak_rss_mb']} | {r['seconds']} | {r['exit']} |" for r in rows],
        "",
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(data, indent=2))
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
