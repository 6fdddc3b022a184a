"""The HTTP API's request bodies (and the OpenAPI schemas of the document upload).

Every body is strict: a value of the wrong JSON type is refused (400), never coerced — `true` is
no number, `"yes"` no boolean, `5` no text."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# ------------------------------------------------------------------------------------------------
# request and response bodies
# ------------------------------------------------------------------------------------------------


class DocumentIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    title: str = Field(min_length=1, description="the document's title")
    text: str = Field(min_length=1, description="its text")
    id: str | None = Field(None, min_length=1, description="its identity; same id = same document")
    source: str | None = Field(None, description="its identity when it has no id")


class DocumentsIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    documents: list[DocumentIn] = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict, description="ingest options (IngestOptions fields)")
    augment: bool | list[str] = Field(
        False, description="after the ingest, build the GDS layers: true for every stage, or a list of stages"
    )


class QueryIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    question: str = Field(description="the question")
    method: str = Field("vector", description="a retrieval method (GET /methods)")
    params: dict[str, Any] = Field(default_factory=dict, description="the method's parameters (GET /methods)")


class AskIn(QueryIn):
    stream: bool = Field(
        False,
        description="stream the answer as server-sent events: `retrieval`, then `token`s, then `done` "
        "(answer and citations) — or `error`",
    )


class CypherQuestion(BaseModel):
    model_config = ConfigDict(strict=True)
    question: str = Field(min_length=1, description="a question about the graph in plain language")


_DOCUMENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["documents"],
    "properties": {
        "documents": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["title", "text"],
                "properties": {
                    "title": {"type": "string", "minLength": 1},
                    "text": {"type": "string", "minLength": 1},
                    "id": {"type": "string", "description": "identity; same id = same document"},
                    "source": {"type": "string", "description": "identity when there is no id (default: the title)"},
                },
            },
        },
        "options": {"type": "object", "description": 'IngestOptions fields, e.g. {"chunk_size": 600}'},
        "augment": {
            "description": "build the GDS layers afterwards: true, or a list of stage names",
            "oneOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "string"}}],
        },
    },
}
_UPLOAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["files"],
    "properties": {
        "files": {
            "type": "array",
            "items": {"type": "string", "format": "binary"},
            "description": ".txt, .md, .json, .jsonl, .pdf, .html or .docx files",
        },
        "options": {"type": "string", "description": "ingest options as a JSON object"},
        "augment": {"type": "string", "description": "`true`, or a JSON list of stage names"},
    },
}
