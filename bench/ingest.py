"""Ingest benchmark: hotpotqa_dev100's 994 passages into an empty graph, seconds per stage.

    python bench/ingest.py            # writes bench/results/ingest.{json,md}

Goal (issue 3): everything that is not embedding costs at most half of the embedding time.
"""

from __future__ import annotations

import time

from common import DATA, machine, open_graph, wipe, write


def main() -> dict:
    with open_graph() as gs:
        wipe(gs)
        t = time.perf_counter()
        report = gs.ingest([DATA / "corpus.jsonl"])
        total = time.perf_counter() - t
        t = time.perf_counter()
        augment = {r.stage: r.seconds for r in gs.augment()}  # issue 5: each augmentation stage's time
        augment_total = time.perf_counter() - t  # the stages in their two lanes, then the PPR warm-up
        stats = gs.stats()
    s = report.seconds
    embed = s.get("embed", 0.0)
    other = sum(v for k, v in s.items() if k != "embed")
    data = {
        "machine": machine(),
        "total_seconds": round(total, 2),
        "seconds": s,
        "embed_seconds": embed,
        "non_embed_seconds": round(other, 3),
        "non_embed_over_embed": round(other / embed, 3) if embed else None,
        "rows_written": report.rows_written,
        "rows_per_second_write": round(report.rows_per_second),
        "documents": report.documents_new,
        "chunks": report.chunks,
        "subchunks": report.subchunks,
        "sentences": report.sentences,
        "entities": report.entities_new,
        "keywords": report.keywords,
        "augment_seconds": augment,
        "augment_total_seconds": round(augment_total, 2),
        "graph": stats,
    }
    md = [
        "# Ingest benchmark (hotpotqa_dev100, 994 passages, no LLM)",
        "",
        f"{machine()['cpus']} CPUs, {machine()['when']}. Total {total:.1f} s.",
        "",
        "| stage | seconds |",
        "|---|---|",
        *[f"| {k} | {v:.2f} |" for k, v in s.items()],
        "",
        f"Non-embedding stages: {other:.2f} s = {other / embed:.2f} x the embedding time (goal <= 0.5).",
        f"Writes: {report.rows_written} rows in {s.get('write', 0):.2f} s = {report.rows_per_second:.0f} rows/s.",
        f"Graph: {report.documents_new} documents, {report.chunks} chunks, {report.subchunks} sub-chunks, "
        f"{report.sentences} sentences embedded, {report.entities_new} entities, {report.keywords} keywords.",
        "",
        "## Augmentation stages (graphstrata augment, no LLM)",
        "",
        f"Total {augment_total:.1f} s: the stages (NodeRAG's chain beside the others), then the warm-up of the PPR "
        "methods' projections.",
        "",
        "| stage | seconds |",
        "|---|---|",
        *[f"| {k} | {v:.2f} |" for k, v in augment.items()],
        "",
    ]
    write("ingest", data, "\n".join(md))
    return data


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
