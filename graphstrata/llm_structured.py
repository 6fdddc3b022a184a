"""Structured output and the endpoint's answers a small model provokes: JSON constrained by a schema
(``response_format`` json_schema, which llama.cpp's server, vLLM, Ollama and OpenAI turn into a
grammar, so the reply is valid JSON by construction), endpoints that do not support it, prompts
longer than the context window and replies cut off at the token limit."""

from __future__ import annotations

import re
from typing import Any

import openai

from graphstrata.llm_errors import LLMError

_CONTEXT = re.compile(r"context (length|size|window)|exceeds? the (available )?context|too many tokens", re.I)
_FORMAT = re.compile(r"response_format|json_schema|grammar|structured", re.I)


class PromptTooLong(LLMError):
    """The prompt does not fit the model's context window: retrying the same prompt cannot help."""


def response_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI ``response_format`` asking for JSON matching ``schema``."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "reply"
    return {"type": "json_schema", "json_schema": {"name": safe, "schema": schema}}


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    inner = body.get("error", body) if isinstance(body.get("error", body), dict) else {}
    return " ".join(str(x) for x in (exc.message, inner.get("message", ""), inner.get("type", ""), exc.code or ""))


def is_context_overflow(exc: BaseException) -> bool:
    """A 400 saying the prompt (plus the reply's budget) exceeds the context window."""
    return isinstance(exc, openai.BadRequestError) and bool(_CONTEXT.search(_message(exc)))


def rejects_response_format(exc: BaseException) -> bool:
    """A 4xx refusing the ``response_format`` itself (an endpoint without JSON-schema support)."""
    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 404, 415, 422, 501):
        return False
    return not is_context_overflow(exc) and bool(_FORMAT.search(_message(exc)))


def prompt_too_long(stage: str, exc: BaseException) -> PromptTooLong:
    return PromptTooLong(
        f"{stage}: the prompt does not fit the model's context window "
        f"({exc}). Use a model with a longer window (`graphstrata llm start --ctx N`), smaller chunks "
        "(--chunk-size) or fewer retrieved items (--top-k)"
    )


TRUNCATED = (
    "the reply was cut off at the token limit (max_tokens) before it was complete; "
    "reply again with a shorter JSON object: fewer items and shorter descriptions"
)
