"""``POST /v1/embeddings``: the graph's own embedder, OpenAI-compatibly.

A LangChain or neo4j-graphrag user embeds questions in the graph's vector space with their
``OpenAIEmbeddings`` pointed at this server, without installing graphstrata or a model. The vectors
are the ones the ``vector`` method searches with (the same embedder object, so the same cache and
precision), so a client's vector search over the ``Chunk`` index finds what ``graphstrata
retrieve`` finds.

Inputs as OpenAI takes them: a string, a list of strings, or token ids (cl100k, which LangChain
sends by default) that are decoded back into text. ``encoding_format`` ``float`` or ``base64``
(little-endian float32, the ``openai`` client's default). The model is ``graphstrata-embed`` or the
embedder's own name (``GET /v1/embeddings/model``); any other name is refused, so a vector from
another space is never mistaken for one of the graph's. Limits: at most GRAPHSTRATA_MAX_EMBED_INPUTS
inputs of at most GRAPHSTRATA_MAX_QUESTION_CHARS characters each; the work is bounded by
GRAPHSTRATA_REQUEST_TIMEOUT like every question.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

import numpy as np
from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from graphstrata.server.errors import ApiError

MODEL = "graphstrata-embed"


class EmbeddingsIn(BaseModel):
    model_config = ConfigDict(extra="allow")  # `user` and other OpenAI fields graphstrata does not use
    model: str = Field(description=f"{MODEL} (or the embedder's name)")
    input: str | list[str] | list[int] | list[list[int]] = Field(description="text(s), or cl100k token ids")
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, description="must be the embedder's dimension when given")


def texts_of(body: EmbeddingsIn, max_inputs: int, max_chars: int) -> list[str]:
    """The inputs as texts, checked against the limits."""
    from graphstrata.text.tokens import encoder

    raw = body.input
    if isinstance(raw, str):
        items: list[Any] = [raw]
    elif raw and all(isinstance(x, int) for x in raw):
        items = [raw]  # one input given as token ids
    else:
        items = list(raw)
    if not items:
        raise ApiError(400, "bad_parameters", "input is empty")
    if len(items) > max_inputs:
        raise ApiError(
            400,
            "bad_parameters",
            f"{len(items)} inputs, over the limit of {max_inputs} per request (GRAPHSTRATA_MAX_EMBED_INPUTS)",
        )
    texts = []
    for i, item in enumerate(items):
        if isinstance(item, list):
            if len(item) > max_chars:  # a token is at least one character: bound before decoding
                raise ApiError(400, "bad_parameters", f"input {i} has {len(item)} tokens, over the limit")
            try:
                item = encoder().decode(item)
            except Exception as e:  # ids outside cl100k
                raise ApiError(400, "bad_parameters", f"input {i}: not cl100k token ids ({e})") from e
        if not item.strip():
            raise ApiError(400, "bad_parameters", f"input {i} is empty")
        if len(item) > max_chars:
            raise ApiError(
                400,
                "bad_parameters",
                f"input {i} has {len(item)} characters, over the limit of {max_chars} (GRAPHSTRATA_MAX_QUESTION_CHARS)",
            )
        texts.append(item)
    return texts


def encoded(vector: np.ndarray, fmt: str) -> list[float] | str:
    if fmt == "base64":
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
    return [float(x) for x in vector]


def router(state: Any) -> APIRouter:
    api = APIRouter(prefix="/v1", tags=["openai-compatible"])

    @api.get("/embeddings/model", summary="The embedding model /v1/embeddings serves")
    def embedding_model() -> dict[str, Any]:
        emb = state.embedder
        return {"id": MODEL, "object": "model", "embedder": emb.name, "dimensions": emb.dim, "owned_by": "graphstrata"}

    @api.post("/embeddings", summary="Embed texts in the graph's vector space (OpenAI embeddings)")
    async def embeddings(body: EmbeddingsIn, request: Request) -> dict[str, Any]:
        """The vectors the `vector` method searches with, for each input, in order."""
        from graphstrata.text.tokens import count_tokens

        emb = state.embedder
        if body.model not in (MODEL, emb.name):
            raise ApiError(404, "not_found", f"no embedding model {body.model!r}; this server embeds with {MODEL}")
        if body.dimensions is not None and body.dimensions != emb.dim:
            raise ApiError(
                400, "bad_parameters", f"dimensions must be {emb.dim} (the graph's vectors), not {body.dimensions}"
            )
        settings = state.settings
        texts = texts_of(body, settings.max_embed_inputs, settings.max_question_chars)
        vectors = await state.bounded.run(request, lambda: emb.embed(texts), settings.request_timeout)
        tokens = sum(count_tokens(t) for t in texts)
        return {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": encoded(v, body.encoding_format)}
                for i, v in enumerate(vectors)
            ],
            "model": body.model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    return api
