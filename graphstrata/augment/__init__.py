"""Index augmentation: the layers the papers build on top of extraction, as named, re-runnable
stages (`graphstrata augment`). Each stage is a function registered with `@stage(name)` taking an
`AugmentContext` and returning a `StageReport`; stages are idempotent (re-running one replaces
what it wrote before, never duplicates it)."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from neo4j.exceptions import TransientError
from pydantic import BaseModel, Field

from graphstrata.augment.params import AugmentParams
from graphstrata.config import Settings
from graphstrata.db import Database, transient_retries
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


#: NodeRAG's chain, each stage reading the one before (G1's important entities and their attributes,
#: Leiden over G1 + A, K-means over S/A/H, semantic edges over T/S/A/H): it reads nothing the other
#: stages write (chunk and entity similarity, synonyms, descriptions, core chunks, DA-RAG's chunk
#: layer, the summary tree) and they read nothing it writes, so the two lanes run side by side, each
#: waiting on Neo4j or the embedder while the other computes.
NODERAG_LANE = ("important_entities", "communities", "semantic_matching", "semantic_edges")
#: Runs of a stage a transient error (a deadlock with the other lane's writes) may end: stages are
#: idempotent, so such a stage is run again.
STAGE_ATTEMPTS = 3


def run(
    ctx: AugmentContext, names: list[str] | None = None, on_stage: Callable[[str, int, int], None] | None = None
) -> list[StageReport]:
    """Run the stages ``names`` (default: all; a whole-graph stage may then be deferred, see
    :mod:`graphstrata.augment.deferral`), each lane (:data:`NODERAG_LANE`, the rest) in pipeline
    order, the two side by side; ``on_stage(name, i, n)`` as each starts. Reports in pipeline order."""
    pipeline = order()
    unknown = [n for n in names or [] if n not in STAGES]
    if unknown:
        raise ValueError(f"unknown augment stage(s) {unknown}; available: {', '.join(pipeline)}")
    todo = [n for n in pipeline if not names or n in names]
    noderag = [n for n in todo if n in NODERAG_LANE]
    lanes = [lane for lane in (noderag, [n for n in todo if n not in NODERAG_LANE]) if lane]
    reports: dict[str, StageReport] = {}
    started = itertools.count(1)
    failed = threading.Event()  # one lane's failure: the other starts no further stage

    def run_lane(stages: list[str], advance: Callable[[int], None]) -> None:
        for name in stages:
            if failed.is_set():
                return
            if on_stage is not None:
                on_stage(name, next(started), len(todo))
            try:
                reports[name] = _run_stage(ctx, name, defer=not names)
            except BaseException:
                failed.set()
                raise
            advance(1)

    try:
        with (
            ctx.tracker.stage("augment", len(todo)) as advance,
            ThreadPoolExecutor(max(1, len(lanes)), thread_name_prefix="graphstrata-augment") as pool,
        ):
            for f in [pool.submit(run_lane, stages, advance) for stages in lanes]:
                f.result()  # the first lane's error, once both lanes have stopped
    finally:
        ctx.tracker.close()
    return [reports[n] for n in todo]


def _run_stage(ctx: AugmentContext, name: str, defer: bool = True) -> StageReport:
    """Run one stage (retried after a transient error); ``defer``: a whole-graph stage may keep its last
    full run's layer after a small ingest (graphstrata/augment/deferral.py; a stage named by the caller
    always runs)."""
    from graphstrata.augment import deferral

    t = time.perf_counter()  # a stage's time includes its attempts a transient error ended
    if defer and (kept := deferral.deferred(ctx, name)) is not None:
        return StageReport(stage=name, seconds=round(time.perf_counter() - t, 3), **kept)
    retried = transient_retries()
    for attempt in range(1, STAGE_ATTEMPTS + 1):
        with ctx.tracker.stage(name, None):  # elapsed time; item bars inside the stage add rate and time left
            try:
                seen = deferral.starting(ctx, name)
                report = STAGES[name](ctx)
                deferral.finished(ctx, name, seen)
            except GDSError as e:  # e.g. a projection too large: say which stage
                raise type(e)(f"augment stage {name}: {e}") from e
            except TransientError:
                if attempt == STAGE_ATTEMPTS:
                    raise
                continue
        report.seconds = round(time.perf_counter() - t, 3)
        if attempt > 1:  # counted: a retry by design (module docstring of NODERAG_LANE), never silent
            report.notes["transient_retries"] = attempt - 1
        if transient_retries() > retried:  # its write transactions retried after a deadlock: counted too
            report.notes["transaction_retries"] = transient_retries() - retried
        return report
    raise AssertionError("unreachable")
