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

from graphstrata.config import Settings
from graphstrata.db import Database
from graphstrata.embed import Embedder


@dataclass
class AugmentContext:
    db: Database
    embedder: Embedder
    settings: Settings
    progress: bool = False
    llm: Any = None  # an LLMClient when a model is configured, else None (no-LLM substitutes)
    params: dict[str, Any] = field(default_factory=dict)  # stage-specific overrides


class StageReport(BaseModel):
    stage: str
    seconds: float = 0.0
    counts: dict[str, int] = Field(default_factory=dict)
    notes: dict[str, Any] = Field(default_factory=dict)


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
    selected = [n for n in pipeline if not names or n in names]
    for i, name in enumerate(selected, 1):
        if on_stage is not None:
            on_stage(name, i, len(selected))
        t = time.perf_counter()
        report = STAGES[name](ctx)
        report.seconds = round(time.perf_counter() - t, 3)
        reports.append(report)
    return reports
