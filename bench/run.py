"""All benchmarks in one run: ingest (fresh graph), then retrieval over every method.

python bench/run.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import ingest
import retrieval

from graphstrata.retrieval.base import available_methods

if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__).parse_args()
    ingest.main()
    retrieval.main(list(available_methods()))
