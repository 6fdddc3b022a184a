"""Beyond the papers: ``auto`` picks one retrieval method per question by its shape.

**auto** routes by the question's shape, in this order (a rule whose method is not registered falls
through to the next):

1. only with ``try_sgrag``: a *multi-constraint factual* question — a wh-question whose dependency
   parse holds two or more constraints (verbal predicates, relational ``of`` phrases), e.g. "Which
   actor starred in Heat and was born in New York?" → ``sgrag`` (query graph, path matching), kept
   only when SG-RAG matches the query graph exactly (its 1-hop fallback is weaker context than
   NodeRAG's), else re-routed by the rules below. Off by default: SG-RAG matched none of the
   hotpotqa_dev100 questions of that shape and none of MuSiQue's (73 of 100 had it), so trying it
   only added its latency before NodeRAG ran;
2. no query entity at all, or summary-style wording ("summarize", "overview", "main themes" …) →
   the global view: ``e2graphrag`` (its global mode, dense retrieval over the summary tree, is what
   it runs when no query entity maps) when the question has no query entity, else ``noderag``
   (its ``HighLevel`` community summaries answer corpus-level questions);
3. otherwise by the question's kind (:func:`question_kind`: yes-no, multi-constraint, one-entity,
   entities) through ``ROUTES``, the methods measured best on that kind of dev question
   (bench/routes.py → bench/results/routes.md): ``vector`` for yes-no questions, ``hipporag`` (else
   ``noderag``, else ``fusion``) for the others. Routing entity-pair questions to ``e2graphrag`` was measured worse on
   hotpotqa_dev100 (46 questions: Recall@5 0.587 against noderag 0.935).

Query entities are those of :func:`graphstrata.text.nlp.query_entities`, found exactly as at
ingest. The route, the rule and the reason are in ``notes``, with the routed method's own notes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from graphstrata.retrieval.base import (
    RetrievalResult,
    Retrieved,
    Retriever,
    RetrieverParams,
    Timer,
    get_retriever,
    register,
    registered_methods,
)
from graphstrata.retrieval.shared import beside

SUMMARY_STYLE = re.compile(
    r"\b(summari[sz]e|summary|summaries|overview|overall|main (?:themes?|ideas?|points?|topics?|arguments?)"
    r"|key (?:themes?|ideas?|points?|topics?|takeaways?|findings?)|themes?|big picture|gist|high[- ]level"
    r"|in general|broadly|what (?:is|are) (?:this|these|the) (?:corpus|collection|documents?|texts?|articles?)"
    r"(?: \w+)? about)\b",
    re.IGNORECASE,
)
WH_START = re.compile(
    r"^\s*(?:(?:and|so|then|in|on|at|for|from|by|of|with|during)\s+)?"
    r"(?:what|which|who|whom|whose|when|where|how (?:many|much|old|long|far|tall|large|big))\b",
    re.IGNORECASE,
)
YES_NO_START = re.compile(
    r"^\s*(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", re.IGNORECASE
)
#: entity types that are values, not things to look up in the graph (and the numeric ones ingest skips)
VALUE_TYPES = {"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY", "NOUN"}


@dataclass
class Shape:
    """What the router looks at."""

    query_entities: list[str]  # graphstrata.text.nlp.query_entities (named entities and nouns)
    named: list[str]  # the named ones (spaCy NER, values such as dates excluded)
    wh: bool  # a wh-question (what/which/who/when/where/how many …)
    constraints: int  # verbal predicates + relational "of" phrases
    summary_style: bool
    yes_no: bool = False  # opens with an auxiliary: a yes/no or either-or question (often a comparison)

    @property
    def multi_constraint(self) -> bool:
        return self.wh and self.constraints >= 2 and not self.summary_style


def question_shape(question: str) -> Shape:
    """Parse the question once with the ingest spaCy pipeline and measure its shape."""
    from graphstrata.text.nlp import analyse, parsed_question

    doc = parsed_question(question)  # kept: the routed method's query entities read the same parse
    analysis = analyse(doc)  # the very analysis query_entities() returns the mentions of
    entities = list(analysis.mentions)
    named = [key for key in entities if analysis.names.get(key, ("", "NOUN"))[1] not in VALUE_TYPES]
    in_entity = {i for ent in doc.ents for i in range(ent.start, ent.end)}
    verbs = sum(1 for tok in doc if tok.pos_ == "VERB" and not tok.dep_.startswith("aux") and tok.i not in in_entity)
    ofs = sum(
        1
        for tok in doc
        if tok.lower_ == "of" and tok.dep_ == "prep" and tok.head.pos_ in ("NOUN", "PROPN") and tok.i not in in_entity
    )
    return Shape(
        query_entities=entities,
        named=named,
        wh=bool(WH_START.search(question)),
        constraints=verbs + ofs,
        summary_style=bool(SUMMARY_STYLE.search(question)),
        yes_no=bool(YES_NO_START.search(question)),
    )


def question_kind(shape: Shape) -> str:
    """The kind a route is chosen for, from the question's shape alone (bench/routes.py measures
    each method per kind on the dev graphs)."""
    if not shape.query_entities or shape.summary_style:
        return "global"
    if shape.yes_no:
        return "yes-no"
    if shape.multi_constraint:
        return "multi-constraint"
    return "one-entity" if len(shape.named) <= 1 else "entities"


#: kind -> the methods to take, best first, to be set from the best mean Recall@5 of the kind's
#: questions over the three dev graphs (bench/results/routes.md, written by bench/routes.py from
#: bench/graphs.py's per-question results). Measured on hotpotqa and musique-openie (150 questions):
#: hipporag best on entities, multi-constraint and one-entity questions; vector on the 9 yes-no
#: (comparison) questions, which name both things compared; "global" keeps the papers' global views
#: (no dev question is of that kind)
ROUTES: dict[str, tuple[str, ...]] = {
    "yes-no": ("vector", "hipporag", "noderag"),
    "multi-constraint": ("hipporag", "noderag", "fusion"),
    "one-entity": ("hipporag", "noderag", "fusion"),
    "entities": ("hipporag", "noderag", "fusion"),
}


@dataclass
class Route:
    method: str
    rule: str
    reason: str
    params: dict[str, Any] = field(default_factory=dict)
    passed_over: list[str] = field(default_factory=list)  # rules that matched but whose method is missing


def route(shape: Shape, available: set[str] | Sequence[str], try_sgrag: bool = False) -> Route:
    """The method for a question of this shape among the `available` ones (pure, no I/O).
    ``try_sgrag``: route multi-constraint questions to SG-RAG first (off by default, see the module doc)."""
    have = set(available)
    passed: list[str] = []

    def pick(rule: str, reason: str, *choices: str) -> Route | None:
        for m in choices:
            if m in have:
                return Route(m, rule, reason, passed_over=list(passed))
        passed.append(f"{rule} → {'/'.join(choices)} (not installed)")
        return None

    if shape.multi_constraint and try_sgrag:
        r = pick(
            "multi-constraint",
            f"a factual wh-question with {shape.constraints} constraints (predicates and 'of' relations): "
            "matched as a query graph",
            "sgrag",
        )
        if r:
            return r
    if not shape.query_entities:
        r = pick(
            "global",
            "no query entity: the global view (E2GraphRAG dense retrieval over the summary tree)",
            "e2graphrag",
            "noderag",
        )
        if r:
            return r
    elif shape.summary_style:
        r = pick(
            "global", "summary-style wording: community summaries (NodeRAG high-level nodes)", "noderag", "e2graphrag"
        )
        if r:
            return r
    kind = question_kind(shape)
    reason = (
        f"a {kind} question ({len(shape.named)} named entities, {shape.constraints} constraint(s)): the best "
        "Recall@5 on that kind of dev question (bench/results/routes.md)"
    )
    r = pick(kind, reason, *ROUTES.get(kind, ("hipporag", "noderag", "fusion")))
    if r:
        return r
    return Route("vector", "fallback", "no graph method is installed", passed_over=passed)


class AutoParams(RetrieverParams):
    top_k: int | None = Field(None, ge=1, le=1000, description="passed to the chosen method (default: its own)")
    try_sgrag: bool = Field(
        False,
        description="route multi-constraint questions to sgrag first, re-routing when it finds no exact match "
        "(off: measured, it never matched on hotpotqa_dev100 or MuSiQue and cost a second retrieval)",
    )
    method_params: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="parameters for whichever method is chosen, by method name"
    )


@register
class AutoRetriever(Retriever):
    name = "auto"
    summary = (
        "Auto: routes the question by its shape (multi-constraint → sgrag if it matches exactly, "
        "global/summary → e2graphrag or noderag, otherwise hipporag) and records why."
    )
    Params = AutoParams

    def _retrieve(self, question: str, p: AutoParams, t: Timer) -> Retrieved:
        installed = set(registered_methods())
        # every route but SG-RAG's embeds the question: the model runs beside the parse that picks the
        # route (the routed method then finds the vector made, or waits for it: Retriever.embed_query);
        # a failure there is the routed method's to report, when it embeds
        embedding = beside(self.embed_query, question, True)
        with t.stage("classify"):
            shape = question_shape(question)
            chosen = route(shape, installed, p.try_sgrag)
        result = self._run(question, chosen, p, t)
        embedding.exception()  # a route that does not embed (SG-RAG) still ends with the embedding
        rerouted = None
        if chosen.method == "sgrag" and result.notes.get("fallback"):
            # SG-RAG answers only what it matches exactly; its 1-hop fallback is weaker than the next route.
            rerouted = f"sgrag found no exact match for the query graph ({result.notes.get('reason', 'fallback')})"
            with t.stage("classify"):
                chosen = route(shape, installed - {"sgrag"})
            result = self._run(question, chosen, p, t)
        notes: dict[str, Any] = {
            "route": chosen.method,
            "rule": chosen.rule,
            "reason": chosen.reason,
            "shape": {
                "query_entities": shape.query_entities,
                "named_entities": shape.named,
                "wh_question": shape.wh,
                "constraints": shape.constraints,
                "summary_style": shape.summary_style,
            },
            "params": result.params,
        }
        if chosen.passed_over:
            notes["passed_over"] = chosen.passed_over
        if rerouted:
            notes["rerouted_from_sgrag"] = rerouted
        if result.notes:
            notes["routed_notes"] = result.notes
        return Retrieved(result.items, result.subgraph, notes)

    def _run(self, question: str, chosen: Route, p: AutoParams, t: Timer) -> RetrievalResult:
        params: dict[str, Any] = {"budget": p.budget, **chosen.params}
        if p.top_k is not None:
            params["top_k"] = p.top_k
        params.update(p.method_params.get(chosen.method, {}))
        result = get_retriever(chosen.method, self.db, self.embedder, self.settings, self.llm).retrieve(
            question, **params
        )
        for stage, ms in result.timings_ms.items():
            t.ms[f"{chosen.method}.{stage}"] = ms
        return result
