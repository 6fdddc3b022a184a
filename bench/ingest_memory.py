"""Peak memory of `graphstrata ingest` on one large text document, by document size.

    python bench/ingest_memory.py --sizes 1,5,10,25,50 [--max-seconds S] [--extractor none]
    # MB; bench/results/ingest_memory.{json,md} (--name for another file)

Each size is a seeded, generated prose file (names, places, years: spaCy finds entities in it) ingested
by the CLI in a fresh process with the default extractor (spaCy when no LLM is configured; ``--extractor
none``: chunks, embeddings and the keyword graph only, the same splitting and streaming); the peak
is that process's RSS sampled every 2 s from /proc (with ``--max-seconds`` the ingest is stopped after that
long, and the peak is that of the parts written so far: a large document on 2 cores takes hours). The database
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

from graphstrata.ingest.parts import PART_TEXT_CHARS

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
    "import sys\nfrom graphstrata.cli import app\nsys.argv = ['graphstrata', 'ingest', '-q', *sys.argv[1:]]\napp()\n"
)


def rss_mb(pid: int) -> float | None:
    """The resident set of process ``pid`` now (Linux /proc), MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def parts_written(stem: str) -> int:
    from graphstrata.client import GraphStrata

    with GraphStrata() as gs:
        return gs.db.read_one("MATCH (d:Document) WHERE d.source CONTAINS $s RETURN count(d) AS n", s=stem)["n"]


def measure(mb: float, folder: Path, max_seconds: float | None, extractor: str, every: float = 2.0) -> dict:
    """Ingest one generated document of ``mb`` MB in a child process, sampling its RSS every ``every``
    seconds and the parts written every 30 s; stopped after ``max_seconds`` (then ``complete`` is
    false and the peak is that of the parts written so far)."""
    path = folder / f"large-{mb:g}mb.txt"
    path.write_text(prose(int(mb * 1_000_000)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GRAPHSTRATA_CHAT_MODEL"):  # the default: spaCy extraction
        env.pop(name, None)
    t = time.perf_counter()
    argv = [sys.executable, "-c", _CHILD, str(path), "--extractor", extractor]
    child = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    samples: list[tuple[float, float]] = []  # (seconds, RSS MB)
    progress: list[tuple[float, int]] = []  # (seconds, parts written)
    next_count = 30.0
    while child.poll() is None:
        now = time.perf_counter() - t
        if (r := rss_mb(child.pid)) is not None:
            samples.append((round(now, 1), round(r, 1)))
        if now >= next_count:
            progress.append((round(now), parts_written(path.stem)))
            print(f"{mb:g} MB: {now:.0f} s, RSS {samples[-1][1]:.0f} MB, {progress[-1][1]} parts written", flush=True)
            next_count += 30.0
        if max_seconds is not None and now > max_seconds:
            child.terminate()
            child.wait(60)
            break
        time.sleep(every)
    seconds = time.perf_counter() - t
    complete = child.returncode == 0
    stderr = child.stderr.read() if child.stderr else ""
    progress.append((round(seconds), parts_written(path.stem)))
    path.unlink()
    peaks = [r for _, r in samples]
    half = len(peaks) // 2
    row = {
        "mb": mb,
        "extractor": extractor,
        "complete": complete,
        "seconds": round(seconds, 1),
        "parts_written": progress[-1][1],
        "parts_total": -(-int(mb * 1_000_000) // PART_TEXT_CHARS),
        "peak_rss_mb": round(max(peaks)) if peaks else None,
        "peak_rss_first_half_mb": round(max(peaks[:half])) if half else None,
        "peak_rss_second_half_mb": round(max(peaks[half:])) if half else None,
        "exit": child.returncode,
        "progress": progress,
        "tail": stderr.strip().splitlines()[-3:],
    }
    print(json.dumps({k: v for k, v in row.items() if k != "progress"}), flush=True)
    return row


def wipe() -> None:
    from graphstrata.client import GraphStrata

    with GraphStrata() as gs:
        gs.db.wipe()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,5,10,25,50", help="document sizes in MB (10^6 bytes), comma-separated")
    ap.add_argument("--name", default="ingest_memory", help="result file name under bench/results")
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        help="stop an ingest after this long (the peak is then that of the parts written so far)",
    )
    ap.add_argument(
        "--extractor", default="auto", help="the ingest's --extractor (auto: spaCy when no LLM is configured)"
    )
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="graphstrata-memory-") as tmp:
        for mb in (float(x) for x in args.sizes.split(",")):
            wipe()
            rows.append(measure(mb, Path(tmp), args.max_seconds, args.extractor))
    data = {"part_text_chars": PART_TEXT_CHARS, "max_seconds": args.max_seconds, "runs": rows}
    lines = [
        "# Peak memory of `graphstrata ingest` on one large text document",
        "",
        "Reproduce: `python bench/ingest_memory.py --sizes "
        + args.sizes
        + (f" --max-seconds {args.max_seconds:g}" if args.max_seconds else "")
        + (f" --extractor {args.extractor}" if args.extractor != "auto" else "")
        + f"` ({'spaCy extraction' if args.extractor == 'auto' else 'extractor ' + args.extractor}, "
        + "defaults otherwise).",
        "",
        "Peak RSS of the `graphstrata ingest` process, sampled every 2 s; first and second half of the run",
        "apart (a bound that holds shows no growth from one half to the other). A run stopped at "
        "`--max-seconds` is marked incomplete: its peak is that of the parts written so far.",
        "",
        "| document (MB) | parts written / total | complete | seconds | peak RSS (MB) | first half | second half |",
        "|---:|---:|---|---:|---:|---:|---:|",
        *[
            f"| {r['mb']:g} | {r['parts_written']} / {r['parts_total']} | {'yes' if r['complete'] else 'no'} | "
            f"{r['seconds']} | {r['peak_rss_mb']} | {r['peak_rss_first_half_mb']} | {r['peak_rss_second_half_mb']} |"
            for r in rows
        ],
        "",
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(data, indent=2))
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
