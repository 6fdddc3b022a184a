"""Questions in plain language for analysts: the configured LLM writes one Cypher query from the
documented data model (docs/data-model.md), which is shown and then run only if it is a plain read of
the graph (:mod:`graphstrata.cypher_guard`: allow-listed clauses, procedures and functions, checked in
the text and in the planner's ``EXPLAIN``), in a READ transaction with a timeout
(GRAPHSTRATA_CYPHER_TIMEOUT) and a row cap (GRAPHSTRATA_CYPHER_MAX_ROWS)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from neo4j.exceptions import Neo4jError
from pydantic import BaseModel, Field, field_validator

from graphstrata import analysts as lib
from graphstrata import limits
from graphstrata.cypher import query
from graphstrata.cypher_guard import CypherRefused, check_plan, check_text
from graphstrata.db import Database
from graphstrata.llm import LLMClient, LLMNotConfigured

DATA_MODEL = Path(__file__).resolve().parents[1] / "docs" / "data-model.md"
NO_LLM = (
    "text-to-Cypher needs a language model and none is configured (set OPENAI_BASE_URL and/or "
    "OPENAI_API_KEY, and GRAPHSTRATA_CHAT_MODEL); without one, write the query yourself: "
    "`graphstrata cypher --query '…'` or a library query (`graphstrata cypher --list`)"
)

SYSTEM = (
    "You translate an analyst's question into ONE read-only Cypher query for Neo4j 2026 over the graph "
    "described below. Use only the labels, relationship types and properties it documents. Never write "
    "(no CREATE, MERGE, SET, DELETE, REMOVE, CALL of write procedures). Never return `embedding` "
    "properties; return named scalar columns or nodes. Put a LIMIT (at most 100) on queries that "
    'can return many rows. Reply with one JSON object: {"cypher": "...", "explanation": "one sentence"}.'
)


class CypherError(ValueError):
    """The model's query is not valid Cypher (the message has the server's reason)."""

    def __init__(self, message: str, cypher: str) -> None:
        super().__init__(message)
        self.cypher = cypher


class CypherDraft(BaseModel):
    """What the model is asked to return."""

    cypher: str = Field(min_length=1, description="one Cypher statement, no trailing semicolon")
    explanation: str = ""

    @field_validator("cypher")
    @classmethod
    def _one_statement(cls, v: str) -> str:
        v = re.sub(r"^```(?:cypher)?\s*|\s*```$", "", v.strip()).strip().rstrip(";").strip()
        if not v:
            raise ValueError("the query is empty")
        return v


class CypherAnswer(BaseModel):
    question: str
    cypher: str
    explanation: str = ""
    keys: list[str] = Field(default_factory=list)
    rows: list[dict] = Field(default_factory=list)
    capped: bool = Field(False, description="more rows matched; only the first max_rows were fetched")
    max_rows: int | None = None


#: the parts of docs/data-model.md the model is given: what each layer is and how labels connect
#: (the properties come from the live schema). The whole document is ~5,000 tokens: a small local
#: model's context window and minutes of prompt processing on a CPU; these two are ~1,100.
PROMPT_SECTIONS = ("Layers at a glance", "Relationship types")


@cache
def data_model() -> str:
    """The documented data model the prompt gives the model: the title and PROMPT_SECTIONS of the
    repository's docs/data-model.md."""
    try:
        doc = DATA_MODEL.read_text(encoding="utf-8")
    except OSError:
        return ""  # an installed wheel has no docs/: the live schema below still describes the graph
    parts = re.split(r"(?m)^(?=## )", doc)
    kept = [p.strip() for p in parts[1:] if p[3:].split("\n", 1)[0].strip() in PROMPT_SECTIONS]
    return "\n\n".join([parts[0].strip().splitlines()[0], *kept])


def live_schema(db: Database) -> str:
    """Labels, relationship types and property keys as the database has them now."""
    rows = db.read(query("meta.node_type_properties")) + db.read(query("meta.rel_type_properties"))
    lines = []
    for r in rows:
        props = ", ".join(p for p in r["properties"] if p and p not in lib.HIDDEN_PROPERTIES)
        lines.append(f"{r.get('nodeType') or r.get('relType')} {{{props}}}")
    return "\n".join(lines)


def messages(question: str, schema: str) -> list[dict[str, str]]:
    doc = data_model()
    model = f"# Data model\n{doc}\n\n" if doc else ""
    user = f"{model}# Labels and relationship types in this database now\n{schema}\n\n# Question\n{question}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def draft(db: Database, llm: LLMClient | None, question: str) -> CypherDraft:
    """The model's query for ``question`` (not run); :class:`LLMNotConfigured` without a model."""
    if llm is None:
        raise LLMNotConfigured(NO_LLM)
    if not question.strip():
        raise ValueError("the question is empty")
    return llm.chat_json(messages(question, live_schema(db)), CypherDraft, stage="text2cypher")


class CypherTimeout(CypherError):
    """The query ran past its transaction timeout; Neo4j stopped it."""


def run(
    db: Database,
    cypher: str,
    question: str = "",
    explanation: str = "",
    *,
    max_rows: int = 1000,
    timeout: float = 30.0,
) -> CypherAnswer:
    """Run a model's query if it is a plain read: :class:`CypherRefused` (a ``WriteRefused``) when it
    is not, :class:`CypherError` when the server rejects it, :class:`CypherTimeout` past ``timeout``
    seconds (or the current request's deadline, if sooner). At most ``max_rows`` rows are fetched."""
    check_text(cypher)  # before the server sees anything: LOAD CSV would fetch even as a read
    left = limits.remaining()
    if left is not None:
        limits.check()
        timeout = min(timeout, max(left, 0.001))
    try:
        result = lib.run(db, cypher, timeout=timeout, max_rows=max_rows, check_plan=check_plan)
    except lib.QueryTimeout as e:
        raise CypherTimeout(str(e), cypher) from e
    except Neo4jError as e:
        if "AccessMode" in (e.code or ""):
            raise CypherRefused(
                f"refused: the server rejected a write in a read transaction ({e.message})", "write_refused"
            ) from e
        raise CypherError(f"the query is not valid Cypher: {e.code}: {e.message}", cypher) from e
    keys, rows, capped = result.keys, result.rows, result.capped
    return CypherAnswer(
        question=question,
        cypher=cypher,
        explanation=explanation,
        keys=keys,
        rows=rows,
        capped=capped,
        max_rows=max_rows,
    )


def ask(
    db: Database, llm: LLMClient | None, question: str, *, max_rows: int = 1000, timeout: float = 30.0
) -> CypherAnswer:
    """Draft a query for ``question`` with the model and run it if it is a plain read."""
    d = draft(db, llm, question)
    return run(db, d.cypher, question, d.explanation, max_rows=max_rows, timeout=timeout)
