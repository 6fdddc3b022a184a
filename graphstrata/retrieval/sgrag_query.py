"""SG-RAG's query graph (§4.3, Table 10): the question as a graph of known entities and the ``UNK``
target, from the LLM (its reply schema and prompt) or, offline, from a spaCy dependency parse.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from graphstrata.algorithms.sgrag import Edge, QueryGraph
from graphstrata.text.names import predicate_key

UNK = "UNK"
WH_TAGS = {"WDT", "WP", "WP$", "WRB"}


class QGNode(BaseModel):
    id: str = Field(description="unique node identifier")
    label: str = Field(description='entity name; "UNK" for the target the question asks for')
    description: str = Field("", description="optional description (e.g. the target's type)")


class QGEdge(BaseModel):
    src: str
    dst: str
    relation: str = Field("", description="how the two are related, in a few words (may be empty)")


class QueryGraphSpec(BaseModel):
    """The query graph of Table 10 as JSON (also the LLM's reply schema)."""

    nodes: list[QGNode]
    edges: list[QGEdge] = Field(default_factory=list)

    @model_validator(mode="after")
    def _well_formed(self) -> QueryGraphSpec:
        # raised as a validation error, so chat_json re-asks the model with this message
        if not self.nodes:
            raise ValueError("the query graph needs at least one node")
        ids = [n.id for n in self.nodes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"node ids must be unique, got {ids}")
        return self

    def to_query_graph(self, match_relations: bool) -> QueryGraph:
        ids = {n.id for n in self.nodes}
        edges = [
            Edge(e.src, e.dst, predicate_key(e.relation) if match_relations and e.relation.strip() else None)
            for e in self.edges
            if e.src in ids and e.dst in ids and e.src != e.dst
        ]
        return QueryGraph({n.id: n.label for n in self.nodes}, edges)


QUERY_GRAPH_PROMPT = """Goal: Given a user question, identify all semantically independent entities and extract their
implicit structural relations to construct a query graph. If the question contains a target entity (i.e. the
answer is unknown), extract it as a node with label "UNK".
Step 1, nodes: identify all entities. For each: id (unique node identifier), label (entity name as written;
"UNK" if it is the target to be queried), description (optional; for the target, its type, e.g. "person").
Step 2, edges: for each related entity pair: src and dst node ids, relation (the relation in a few words).
Step 3: return JSON {"nodes": [{"id", "label", "description"}], "edges": [{"src", "dst", "relation"}]}.
Example: "Which film was directed by James Cameron and starred Kate Winslet?" ->
{"nodes": [{"id": "q0", "label": "UNK", "description": "film"},
           {"id": "q1", "label": "James Cameron", "description": ""},
           {"id": "q2", "label": "Kate Winslet", "description": ""}],
 "edges": [{"src": "q1", "dst": "q0", "relation": "directed"},
           {"src": "q2", "dst": "q0", "relation": "starred in"}]}"""


def spacy_query_graph(question: str) -> QueryGraphSpec:
    """Offline query graph from a spaCy dependency parse, keeping only what the question constrains.

    * the wh-phrase is the ``UNK`` target ``q0`` (its noun, e.g. "film" of "which film", its description);
    * named entities and proper-noun phrases are known nodes: constraints to match in the graph;
    * a common-noun phrase ("the film", "the band") names an entity the question describes but does
      not identify: an ``UNK`` node with that description, which joins constraints ("the film shot in
      Leland" puts Leland two hops from the target) but is not itself one. One that joins nothing is
      dropped, and one that is the copula's complement of the target ("what is the capital of …") is
      the target itself;
    * each node hangs off the nearest node above it in the parse (else the target), the verbs and
      prepositions passed on the way its relation.
    """
    from graphstrata.text.nlp import get_nlp

    doc = get_nlp()(question)
    known: list[Any] = list(doc.ents)
    taken = {t.i for s in known for t in s}
    target = None
    described: list[Any] = []
    for chunk in doc.noun_chunks:
        if any(t.tag_ in WH_TAGS for t in chunk):
            target = target or chunk  # the first wh-phrase (a later "that" opens a relative clause)
            continue
        if any(t.i in taken for t in chunk) or chunk.root.pos_ == "PRON":
            continue
        (known if any(t.pos_ == "PROPN" for t in chunk) else described).append(chunk)
        taken.update(t.i for t in chunk)
    if target is None:
        wh = [t for t in doc if t.tag_ in WH_TAGS]
        target = doc[wh[0].i : wh[0].i + 1] if wh else None

    def overlaps_target(s: Any) -> bool:
        return target is not None and s.start < target.end and target.start < s.end

    spans = sorted((s for s in known + described if not overlaps_target(s) and _strip(s)), key=lambda s: s.start)
    owner = {t.i: k for k, s in enumerate(spans) for t in s}  # token -> its span
    target_tokens = {t.i for t in target} if target is not None else set()
    is_known = [any(s is k for k in known) for s in spans]
    parent: list[int | None] = []  # index of the span above, None: the target
    relation: list[str] = []
    copula: list[bool] = []  # hangs off the target through "be" alone
    merged: list[bool] = []  # a known node that only qualifies the one above ("Leland, North Carolina")
    for k, s in enumerate(spans):
        parts: list[str] = []
        tok, up, verb = s.root, None, False
        while tok.head.i != tok.i:
            tok = tok.head
            if tok.i in target_tokens:
                break
            if tok.i in owner and owner[tok.i] != k:
                up = owner[tok.i]
                break
            if verb:  # the relation is the words up to the first verb; the walk goes on for the parent
                continue
            if tok.pos_ == "ADP":
                parts.insert(0, tok.lower_)
            elif tok.pos_ in ("VERB", "AUX"):
                parts.insert(0, tok.lemma_.lower())
                verb = True
        if s.root.dep_ == "conj" and up is not None and not parts:  # "Titanic and Avatar": siblings
            up, parts = parent[up], relation[up].split()
        parent.append(up)
        relation.append(" ".join(parts))
        copula.append(up is None and parts == ["be"])
        merged.append(s.root.dep_ == "appos" and up is not None and not parts)

    # keep a described node only while some known node hangs below it; the target's copula
    # complement describes the target
    def constrained(k: int) -> bool:
        return any(parent[j] == k and (is_known[j] or constrained(j)) for j in range(len(spans)))

    target_description = _target_type(target)
    keep: list[bool] = []
    for k, s in enumerate(spans):
        if is_known[k] and merged[k] and is_known[parent[k] or 0]:
            keep.append(False)
            for j in range(len(spans)):
                if parent[j] == k:
                    parent[j] = parent[k]
        elif is_known[k]:
            keep.append(True)
        elif copula[k]:
            target_description = target_description or _strip(s)
            keep.append(False)
            for j in range(len(spans)):  # what hung below it hangs off the target
                if parent[j] == k:
                    parent[j] = None
        else:
            keep.append(constrained(k))
    nodes = [QGNode(id="q0", label=UNK, description=target_description)]
    qid: dict[int, str] = {}
    for k, s in enumerate(spans):
        if keep[k]:
            qid[k] = f"q{len(nodes)}"
            nodes.append(QGNode(id=qid[k], label=_strip(s) if is_known[k] else UNK, description=_strip(s)))
    edges: list[QGEdge] = []
    for k in qid:
        up = parent[k]
        while up is not None and not keep[up]:  # hang off the nearest kept node above
            up = parent[up]
        edges.append(QGEdge(src=qid[k], dst=qid[up] if up is not None else "q0", relation=relation[k]))
    return QueryGraphSpec(nodes=nodes, edges=edges)


def _strip(span: Any) -> str:
    toks = [t for t in span if not (t.pos_ in ("DET", "PUNCT") or t.tag_ in WH_TAGS)]
    return " ".join(t.text for t in toks).strip()


def _target_type(target: Any) -> str:
    if target is None:
        return ""
    return " ".join(t.text for t in target if t.tag_ not in WH_TAGS and t.pos_ != "DET")
