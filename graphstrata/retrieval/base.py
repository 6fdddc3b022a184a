"""What every retrieval method shares: typed parameters, one result type, a registry, timing and
token-budget packing. A method module only says how it finds and ranks context (its paper's
algorithm); everything around that lives here once."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from pydantic import BaseModel, Field, ValidationError

from graphstrata.config import Settings, get_settings
from graphstrata.cypher import query
from graphstrata.db import Database
from graphstrata.embed import Embedder
from graphstrata.text.tokens import count_tokens, fit, truncate

if TYPE_CHECKING:
    from graphstrata.llm import LLMClient

# Lucene's HNSW search uses k as its beam width, so a small k can miss a true nearest neighbour
# (measured on hotpotqa: 5 of 1,000 semantic-unit top-10 slots). Queries ask the index for at least
# this many candidates and keep their k best.
HNSW_CANDIDATES = 100


def hnsw_candidates(k: int) -> int:
    return max(k, HNSW_CANDIDATES)


class RetrievalError(ValueError):
    """A retrieval request that cannot be served (unknown method, empty question, bad parameter)."""


class ContextItem(BaseModel):
    """One piece of retrieved context."""

    node_id: str = Field(description="graphstrata id of the node (Chunk, SemanticUnit, Relation …)")
    label: str = Field(description="its label")
    text: str
    score: float = Field(description="the method's own score; higher is better")
    why: str = Field(description="how the method reached it")
    chunk_ids: list[str] = Field(default_factory=list, description="source chunks, for provenance and Recall@k")
    doc_titles: list[str] = Field(default_factory=list)
    tokens: int = 0


class Subgraph(BaseModel):
    """The part of the graph that explains the result (ids; relationships as `a-TYPE->b`)."""

    nodes: list[str] = Field(default_factory=list)
    relationships: list[str] = Field(default_factory=list)


class RetrievalResult(BaseModel):
    method: str
    question: str
    items: list[ContextItem]
    subgraph: Subgraph = Field(default_factory=Subgraph)
    tokens: int = Field(description="tokens of all items (cl100k)")
    budget: int = Field(description="token budget the items were packed into")
    timings_ms: dict[str, float] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)
    notes: dict[str, Any] = Field(default_factory=dict, description="method-specific facts, e.g. branch taken")

    def chunk_ids(self) -> list[str]:
        """Source chunks of the returned (packed) items in their order, each once: what the user gets,
        and what Recall@k is measured on."""
        seen: dict[str, None] = {}
        for item in self.items:
            for c in item.chunk_ids:
                seen.setdefault(c, None)
        return list(seen)

    def context_text(self) -> str:
        return "\n\n".join(f"[{i}] ({it.label} {it.node_id}) {it.text}" for i, it in enumerate(self.items, 1))


TOP_K = "the most context items returned, best first, before budget packing"


class RetrieverParams(BaseModel):
    """Parameters every method has."""

    model_config = {"extra": "forbid"}
    #: one meaning for every method: a cap on the items returned (what an item is differs: a chunk, a
    #: NodeRAG node, a community report); methods whose paper has no such cap default to none
    top_k: int | None = Field(5, ge=1, le=1000, description=TOP_K)
    budget: int = Field(4000, ge=1, description="token budget of the context (cl100k tokens)")


class Timer:
    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - t) * 1000


def _plain(text: str) -> str:
    return " ".join(text.split()).casefold()


def dedupe(items: list[ContextItem]) -> list[ContextItem]:
    """No item repeats text an earlier item holds, so the budget is never spent twice on one text:
    an item whose text an earlier one contains is dropped; an item that contains earlier ones (the
    passage of a sentence returned before it) takes the place of the first of them. Source chunks
    of what is dropped stay with the item that holds its text."""
    out: list[ContextItem] = []
    plain: list[str] = []
    for it in items:
        t = _plain(it.text)
        if not t or any(t in p for p in plain):
            holder = next((i for i, p in enumerate(plain) if t in p), None)
            if holder is not None:
                out[holder].chunk_ids += [c for c in it.chunk_ids if c not in out[holder].chunk_ids]
            continue
        inside = [i for i, p in enumerate(plain) if p in t]
        if not inside:
            out.append(it)
            plain.append(t)
            continue
        # it keeps the best rank (and score) of the items it holds
        merged = it.model_copy(
            update={"chunk_ids": list(it.chunk_ids), "score": max([it.score] + [out[i].score for i in inside])}
        )
        for i in inside:
            merged.chunk_ids += [c for c in out[i].chunk_ids if c not in merged.chunk_ids]
        first = inside[0]
        out[first], plain[first] = merged, t
        for i in reversed(inside[1:]):
            del out[i], plain[i]
    return out


def fit_items(items: list[ContextItem], budget: int, *, stop_at_overflow: bool = False) -> list[ContextItem]:
    """The items, in rank order, that fit the token budget (:func:`graphstrata.text.tokens.fit`); their
    token counts are filled in."""
    for it in items:
        it.tokens = it.tokens or count_tokens(it.text)
    return [items[i] for i in fit([it.tokens for it in items], budget, stop_at_overflow=stop_at_overflow)]


def pack(items: list[ContextItem], budget: int) -> list[ContextItem]:
    """Keep items in rank order while they fit the token budget (the first is cut to fit, never dropped)."""
    if items and (items[0].tokens or count_tokens(items[0].text)) > budget:
        return [items[0].model_copy(update={"text": truncate(items[0].text, budget), "tokens": budget})]
    return fit_items(items, budget)


def chunk_text(title: str, text: str) -> str:
    """A chunk as context: its document's title on the first line, when it has one."""
    return f"{title}\n{text}" if title else text


def fill_chunk_texts(db: Database, items: Iterable[ContextItem]) -> None:
    """Give the ``Chunk`` items that have no text yet theirs (after their document's title) and their
    document title, in one read. A method that ranks chunks in memory returns them without text; the
    texts are read once for all of them (for all of a fusion's members at once). A chunk a concurrent
    delete took away keeps no text, and packing leaves it out."""
    todo = [it for it in items if it.label == "Chunk" and not it.text]
    if not todo:
        return
    ids = list(dict.fromkeys(it.node_id for it in todo))
    (row,) = db.read_plain(query("retrieval.chunks_by_id"), ids=ids)
    rows = {r["id"]: r for r in row["chunks"]}
    for it in todo:
        r = rows.get(it.node_id)
        if r is not None:
            it.text = chunk_text(r["title"], r["text"])
            it.doc_titles = [r["title"]] if r["title"] else []


def pack_result(result: RetrievalResult) -> RetrievalResult:
    """The result with its items de-duplicated, capped at its ``top_k`` and packed into its budget
    (an item without text, a chunk deleted meanwhile, is left out)."""
    items = pack(dedupe([it for it in result.items if it.text])[: result.params.get("top_k")], result.budget)
    return result.model_copy(update={"items": items, "tokens": sum(it.tokens for it in items)})


class Retrieved(NamedTuple):
    """What a method's ``_retrieve`` finds, before de-duplication and packing (``Chunk`` items may
    come without their text: :func:`fill_chunk_texts`)."""

    items: list[ContextItem]  # best first
    subgraph: Subgraph  # the nodes and relationships that explain the items
    notes: dict[str, Any]  # the method's own diagnostics, shown to the user as they are


METHODS: dict[str, type[Retriever]] = {}


def register(cls: type[Retriever]) -> type[Retriever]:
    METHODS[cls.name] = cls
    return cls


class Retriever(ABC):
    """Base of every method: `retrieve(question, **params) -> RetrievalResult`."""

    name: ClassVar[str]
    summary: ClassVar[str]
    Params: ClassVar[type[RetrieverParams]] = RetrieverParams
    #: position in `fusion`'s default set of methods; None: fused only when asked for by name
    fusion_rank: ClassVar[int | None] = None

    def __init__(
        self, db: Database, embedder: Embedder, settings: Settings | None = None, llm: LLMClient | None = None
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.settings = settings or get_settings()
        #: the client of the GraphStrata (or server) that made this retriever: one cache, one usage
        #: ledger, one concurrency bound for every model call it makes
        self.llm = llm
        #: set by fusion on its members: :meth:`retrieve` then returns the items as found, chunks
        #: without their texts and nothing packed; fusion reads the texts of all its members' chunks
        #: in one round trip and packs each result (:func:`fill_chunk_texts`, :func:`pack_result`)
        self.defer_texts = False

    @contextmanager
    def llm_client(self) -> Iterator[LLMClient]:
        """The shared client when the retriever was given one, else one for its settings, closed after."""
        if self.llm is not None:
            yield self.llm
            return
        from graphstrata.llm import LLMClient

        with LLMClient.from_settings(self.settings) as client:
            yield client

    def retrieve(self, question: str, **params: Any) -> RetrievalResult:
        if not isinstance(question, str) or not question.strip():
            raise RetrievalError("the question is empty")
        try:
            p = self.Params(**params)
        except ValidationError as e:
            raise RetrievalError(f"bad parameters for {self.name}: {e}") from e
        timer = Timer()
        found = Retrieved(*self._retrieve(question.strip(), p, timer))
        result = RetrievalResult(
            method=self.name,
            question=question,
            items=found.items,
            subgraph=found.subgraph,
            tokens=0,
            budget=p.budget,
            params=p.model_dump(),
            notes=found.notes,
        )
        if not self.defer_texts:
            with timer.stage("texts"):
                fill_chunk_texts(self.db, result.items)
            with timer.stage("pack"):
                result = pack_result(result)
        return result.model_copy(update={"timings_ms": timer.ms})

    @abstractmethod
    def _retrieve(self, question: str, p: Any, t: Timer) -> Retrieved:
        """Find and rank context; return (items best first, explaining subgraph, notes)."""

    def embed_query(self, question: str, beside_parse: bool = False) -> list[float]:
        """The question's vector; methods fused on the same question compute it once. A method that
        parses the question meanwhile says so (``beside_parse``): the local model then runs on one
        core and leaves the other to the parse (the same vector)."""
        from graphstrata.retrieval.shared import single_flight

        embed = getattr(self.embedder, "embed_beside", None) if beside_parse else None
        embed = embed or self.embedder.embed
        return single_flight(("embed", id(self.embedder), question), lambda: embed([question])[0].tolist())


def get_retriever(
    method: str, db: Database, embedder: Embedder, settings: Settings | None = None, llm: LLMClient | None = None
) -> Retriever:
    _load_methods()
    if method not in METHODS:
        raise RetrievalError(f"unknown method {method!r}; available: {', '.join(sorted(METHODS))}")
    return METHODS[method](db, embedder, settings, llm)


def registered_methods() -> dict[str, type[Retriever]]:
    """Every method of this installation, by name (the registry, loaded on first use)."""
    _load_methods()
    return dict(sorted(METHODS.items()))


def available_methods() -> dict[str, dict[str, Any]]:
    """Method name → summary and parameter JSON schema (with defaults)."""
    _load_methods()
    return {n: {"summary": c.summary, "parameters": c.Params.model_json_schema()} for n, c in sorted(METHODS.items())}


_LOADED: list[bool] = []


def _load_methods() -> None:
    """Import every method module of this package (each registers its Retriever on import), once:
    listing the package's folder on every question would cost more than some methods' queries."""
    if _LOADED:
        return
    import importlib
    import pkgutil
    from pathlib import Path

    # the package's folder and name from this file (importing the package here would be an import cycle)
    package = __name__.rpartition(".")[0]
    for mod in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if mod.name not in ("base", "warmup"):
            importlib.import_module(f"{package}.{mod.name}")
    _LOADED.append(True)
