"""The `graphstrata` command. Each module registers its subcommands on the one :data:`app`."""

from __future__ import annotations

import sys

from graphstrata.cli import documents, local_llm, local_neo4j, questions  # noqa: F401  (they register their commands)
from graphstrata.cli.common import _fail, app, console
from graphstrata.cli.documents import print_report

__all__ = ["_fail", "app", "console", "main", "print_report"]


def main() -> None:  # pragma: no cover
    sys.exit(app())
