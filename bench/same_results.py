"""Does a change return exactly what the code before it returned? Every method's items (id and score,
in order) on every question of hotpotqa_dev100's graph (instance ``bench-hotpotqa``, read only),
from the code at a base commit and from the work tree, back to back on the same graph:

    python bench/same_results.py --base main [--methods ketrag,fusion,…] [--limit N]

The base commit's ``graphstrata`` package is exported (``git archive``) to a temporary folder and run
in a child process with it first on PYTHONPATH; the harness (this file, bench/graphs.py) is the work
tree's. Parameters as bench/graphs.py (budget 1000, top_k 10 unless uncapped); the question caches
are cleared before every call. Prints, per method, the questions whose items differ (ids, or only
scores, with the largest score difference) and exits 1 if any do.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_METHODS = "vector,hipporag,noderag,ketrag,e2graphrag,sgrag,darag,fusion,fusion-all,auto"


def dump(methods: list[str], limit: int | None, out: str) -> None:
    """Every method on every question: {method: [[[id, score], …] per question]} into `out`."""
    from graphs import clear_question_caches, open_instance, plan, questions_of

    import graphstrata

    print(f"graphstrata from {Path(graphstrata.__file__).parent}", file=sys.stderr)
    questions = questions_of("hotpotqa")[:limit]
    found: dict[str, list] = {}
    with open_instance("hotpotqa") as gs:
        for row in methods:
            method, params = plan(row)
            rows = []
            for q in questions:
                clear_question_caches(gs)
                res = gs.retrieve(q["question"], method, **params)
                rows.append([[i.node_id, i.score] for i in res.items])
            found[row] = rows
    Path(out).write_text(json.dumps(found))


def differences(before: dict, after: dict) -> dict[str, list[str]]:
    out = {}
    for m in before:
        diffs = []
        for i, (a, b) in enumerate(zip(before[m], after[m], strict=True)):
            if a == b:
                continue
            if [x[0] for x in a] != [x[0] for x in b]:
                diffs.append(f"q{i}: ids differ")
            else:
                worst = max(abs(x[1] - y[1]) for x, y in zip(a, b, strict=True))
                diffs.append(f"q{i}: scores differ by up to {worst:.3g}")
        out[m] = diffs
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="main", help="commit (or branch) whose results are the reference")
    ap.add_argument("--methods", default=DEFAULT_METHODS, help="methods or graphs.py variants, comma-separated")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions")
    ap.add_argument("--dump", default=None, help=argparse.SUPPRESS)  # child mode: write the results here
    a = ap.parse_args()
    methods = a.methods.split(",")
    if a.dump:
        dump(methods, a.limit, a.dump)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "base.tar"
        subprocess.run(["git", "archive", "-o", str(archive), a.base, "graphstrata"], cwd=ROOT, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(Path(tmp) / "base", filter="data")
        files = {"base": Path(tmp) / "base.json", "work tree": Path(tmp) / "now.json"}
        for label, path in files.items():
            first = Path(tmp) / "base" if label == "base" else ROOT
            env = os.environ | {"PYTHONPATH": os.pathsep.join([str(first), str(HERE)])}
            args = [sys.executable, str(Path(__file__)), "--dump", str(path), "--methods", a.methods]
            subprocess.run(args + (["--limit", str(a.limit)] if a.limit else []), env=env, check=True)
        before, after = (json.loads(p.read_text()) for p in files.values())
    diffs = differences(before, after)
    n = len(next(iter(before.values())))
    for m, d in diffs.items():
        shown = sorted(d, key=lambda x: "ids" not in x)[:10]  # a question whose items changed first
        print(f"{m}: " + (f"identical on all {n} questions" if not d else f"{len(d)} differ: {shown}"))
    return 1 if any(diffs.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
