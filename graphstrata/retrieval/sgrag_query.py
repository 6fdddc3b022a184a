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
    """Offline query graph: entities / noun chunks are known nodes, the wh-phrase the UNK target, each
    known node linked to the target by the verb (+ preposition) that governs it."""
    from graphstrata.text.nlp import get_nlp

    doc = get_nlp()(question)
    spans: list[Any] = list(doc.ents)
    taken = {t.i for s in spans for t in s}
    target = None
    for chunk in doc.noun_chunks:
        if any(t.tag_ in WH_TAGS for t in chunk):
            target = chunk
            continue
        if any(t.i in taken for t in chunk) or chunk.root.pos_ == "PRON":
            continue
        spans.append(chunk)
        taken.update(t.i for t in chunk)
    if target is None:
        wh = [t for t in doc if t.tag_ in WH_TAGS]
        target = doc[wh[0].i : wh[0].i + 1] if wh else None
    nodes = [QGNode(id="q0", label=UNK, description=_target_type(target))]
    edges: list[QGEdge] = []
    for s in sorted(spans, key=lambda s: s.start):
        if target is not None and s.start < target.end and target.start < s.end:
            continue
        name = _strip(s)
        if not name:
            continue
        qid = f"q{len(nodes)}"
        nodes.append(QGNode(id=qid, label=name))
        edges.append(QGEdge(src=qid, dst="q0", relation=_governing_relation(s.root)))
    return QueryGraphSpec(nodes=nodes, edges=edges)


def _strip(span: Any) -> str:
    toks = [t for t in span if not (t.pos_ in ("DET", "PUNCT") or t.tag_ in WH_TAGS)]
    return " ".join(t.text for t in toks).strip()


def _target_type(target: Any) -> str:
    if target is None:
        return ""
    return " ".join(t.text for t in target if t.tag_ not in WH_TAGS and t.pos_ != "DET")


def _governing_relation(root: Any) -> str:
    parts: list[str] = []
    tok = root
    while tok.head.i != tok.i:
        tok = tok.head
        if tok.pos_ == "ADP":
            parts.insert(0, tok.lower_)
        elif tok.pos_ in ("VERB", "AUX"):
            parts.insert(0, tok.lemma_.lower())
            break
    return " ".join(parts)
