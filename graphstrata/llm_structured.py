"""Structured output and the endpoint's answers a small model provokes: JSON constrained by a schema
(``response_format`` json_schema, which llama.cpp's server, vLLM, Ollama and OpenAI turn into a
grammar, so the reply is valid JSON by construction), endpoints that do not support it, prompts
longer than the context window and replies cut off at the token limit."""

from __future__ import annotations

import re
from collections.abc import Callable
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


#: What a reply's JSON may hold where its schema sets no bound (a string's characters, a list's
#: items): room for every answer graphstrata asks for, and a cap that stops a small model repeating
#: itself through the grammar, before the token limit cuts the reply (invalid JSON) — llama.cpp's
#: server and vLLM turn maxLength/maxItems into the grammar.
REPLY_STRING_CHARS = 1000
REPLY_ITEMS = 20


def _rewrite(node: Any, fix: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """A copy of the JSON schema ``node`` with ``fix`` applied to every object in it, innermost first."""
    if isinstance(node, list):
        return [_rewrite(x, fix) for x in node]
    if not isinstance(node, dict):
        return node
    return fix({k: _rewrite(v, fix) for k, v in node.items()})


def bounded(schema: dict[str, Any], chars: int = REPLY_STRING_CHARS, items: int = REPLY_ITEMS) -> dict[str, Any]:
    """``schema`` with a ``maxLength`` on every free string and a ``maxItems`` on every array that has
    none (enumerations, constants and formatted strings are left as they are). Validation is still
    the pydantic model's: the bounds only shape what a constrained endpoint lets the model write."""

    def fix(out: dict[str, Any]) -> dict[str, Any]:
        if out.get("type") == "string" and not {"enum", "const", "format", "pattern", "maxLength"} & out.keys():
            out["maxLength"] = chars
        if out.get("type") == "array" and "maxItems" not in out:
            out["maxItems"] = items
        return out

    return _rewrite(schema, fix)


def shorter(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its bounds cut to a quarter (lists at least 1 item, strings at least 40
    characters): what the next attempt is constrained to after a reply ran into the token limit."""

    def fix(out: dict[str, Any]) -> dict[str, Any]:
        if isinstance(out.get("maxItems"), int):
            out["maxItems"] = max(1, out["maxItems"] // 4, out.get("minItems", 0))
        if isinstance(out.get("maxLength"), int):
            out["maxLength"] = max(40, out["maxLength"] // 4, out.get("minLength", 0))
        return out

    return _rewrite(schema, fix)


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
