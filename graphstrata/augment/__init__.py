"""Index augmentation: the layers the papers build on top of extraction, as named, re-runnable
stages (`graphstrata augment`). Each stage is a function registered with `@stage(name)` taking an
`AugmentContext` and returning a `StageReport`; stages are idempotent (re-running one replaces
what it wrote before, never duplicates it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from graphstrata.augment.params import AugmentParams
from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.embed import Embedder
from graphstrata.gds import GDSError
from graphstrata.progress import Tracker


@dataclass
class AugmentContext:
    db: Database
    embedder: Embedder
    settings: Settings
    progress: bool = False
    llm: Any = None  # an LLMClient when a model is configured, else None (no-LLM substitutes)
    #: stage parameters; a dict is validated into :class:`AugmentParams` (unknown names are an error)
    params: AugmentParams | dict[str, Any] = field(default_factory=AugmentParams)
    on_progress: Callable[[str, int, int], None] | None = None  # on_progress(step, done, total)
    tracker: Tracker = field(init=False)
    texts: Embedder = field(init=False)  # the embedder of the graph's sentence-level texts (its precision)

    def __post_init__(self) -> None:
        from graphstrata.schema import document_embedder

        # summaries and descriptions at the graph's precision; ``embedder`` (float32) for passages' attributes
        self.texts = document_embedder(self.db, self.embedder)
        if isinstance(self.params, dict):
            self.params = AugmentParams.model_validate(self.params)
        self.tracker = Tracker(self.progress, self.on_progress)


class StageReport(BaseModel):
    stage: str
    seconds: float = 0.0
    counts: dict[str, int] = Field(default_factory=dict)
    notes: dict[str, Any] = Field(default_factory=dict)


def refresh_text_vectors(
    ctx: AugmentContext,
    texts: list[tuple[str, str | None, str | None]],
    kind: str,
    write: str,
    clear: str,
    label: str,
    embedder: Embedder | None = None,
) -> tuple[int, int]:
    """Keep a vector per node in step with a text derived from it: ``texts`` holds (node id, its text
    now or None, the key of the text its vector was last computed from). Embeds the nodes whose key
    differs from ``hid(kind, text)`` and writes them with ``write`` (rows: id, embedding, key); clears
    with ``clear`` (ids) the vectors of nodes that no longer have a text; ``label`` names the progress
    bar; ``embedder`` defaults to the graph's text embedder. Returns (embedded, cleared)."""
    from graphstrata.cypher import query
    from graphstrata.text.names import hid

    todo = [(i, text, hid(kind, text)) for i, text, key in texts if text is not None and key != hid(kind, text)]
    stale = [i for i, text, key in texts if text is None and key is not None]
    with ctx.tracker.stage(label, len(todo)) as advance:
        vectors = (embedder or ctx.texts).embed([t for _, t, _ in todo], advance) if todo else []
    rows = [{"id": i, "embedding": v.tolist(), "key": k} for (i, _, k), v in zip(todo, vectors, strict=True)]
    ctx.db.write_batches(query(write), rows, batch_size=500)
    if stale:
        ctx.db.write(query(clear), ids=stale)
    return len(rows), len(stale)


StageFn = Callable[[AugmentContext], StageReport]
STAGES: dict[str, StageFn] = {}
_RANK: dict[str, int] = {}


def stage(name: str, order: int) -> Callable[[StageFn], StageFn]:
    """Register a stage; `order` places it in the pipeline (knn 10, core chunks 20, important entities 30,
    communities 40, semantic matching 50, DA-RAG chunk edges 60, summary tree 70)."""

    def deco(fn: StageFn) -> StageFn:
        STAGES[name] = fn
        _RANK[name] = order
        return fn

    return deco


def order() -> list[str]:
    load_stages()
    return sorted(STAGES, key=lambda n: _RANK[n])


def load_stages() -> None:
    """Import the stage modules (they register themselves), in pipeline order."""
    import importlib
    import pkgutil

    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        importlib.import_module(f"{__name__}.{mod}")


def run(
    ctx: AugmentContext, names: list[str] | None = None, on_stage: Callable[[str, int, int], None] | None = None
) -> list[StageReport]:
    """Run the stages ``names`` (default: all) in pipeline order; ``on_stage(name, i, n)`` before each."""
    pipeline = order()
    unknown = [n for n in names or [] if n not in STAGES]
    if unknown:
        raise ValueError(f"unknown augment stage(s) {unknown}; available: {', '.join(pipeline)}")
    reports = []
    todo = [n for n in pipeline if not names or n in names]
    try:
        with ctx.tracker.stage("augment", len(todo)) as advance:
            for i, name in enumerate(todo, 1):
                if on_stage is not None:
                    on_stage(name, i, len(todo))
                t = time.perf_counter()
                with ctx.tracker.stage(name, None):  # elapsed time; item bars inside the stage add rate and time left
                    try:
                        report = STAGES[name](ctx)
                    except GDSError as e:  # e.g. a projection too large: say which stage
                        raise type(e)(f"augment stage {name}: {e}") from e
                report.seconds = round(time.perf_counter() - t, 3)
                reports.append(report)
                advance(1)
    finally:
        ctx.tracker.close()
    return reports
