"""Repairing a model's almost-JSON: code fences, prose around the object, trailing commas,
single quotes and Python literals (what :meth:`graphstrata.llm.LLMClient.chat_json` parses)."""

from __future__ import annotations

import ast
import contextlib
import json
import re
from typing import Any

from pydantic import ValidationError

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_JSON_LITERALS = {"true": "True", "false": "False", "null": "None"}


def _outermost_object(text: str) -> str | None:
    """The text from the first ``{`` to its matching ``}`` (string-aware), or to the last ``}``."""
    start = text.find("{")
    if start < 0:
        return None
    depth, in_str, quote, escaped = 0, False, "", False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                in_str = False
        elif ch in "\"'":
            in_str, quote = True, ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    end = text.rfind("}")
    return text[start : end + 1] if end > start else None


def parse_json_lenient(text: str) -> Any:
    """Parse a model's JSON reply, repairing what models commonly get wrong.

    Tries, in order: the text as is; the content of a Markdown code fence; the outermost ``{...}``
    (drops prose around it); without trailing commas; as a Python literal (single quotes,
    ``True``/``None``), which ``ast.literal_eval`` evaluates safely. Raises ``ValueError`` if all fail.
    """
    text = (text or "").strip()
    if not text:
        raise ValueError("the reply was empty")
    candidates: list[str] = [text]
    fence = _FENCE.search(text)
    if fence:
        candidates.append(fence.group(1).strip())
    for cand in list(candidates):
        obj = _outermost_object(cand)
        if obj and obj != cand:
            candidates.append(obj)
    candidates += [_TRAILING_COMMA.sub(r"\1", c) for c in candidates]
    for cand in candidates:
        with contextlib.suppress(ValueError):
            return json.loads(cand)
    for cand in candidates:
        for src in (cand, re.sub(r"\b(true|false|null)\b", lambda m: _JSON_LITERALS[m.group(1)], cand)):
            with contextlib.suppress(ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                value = ast.literal_eval(src)
                if isinstance(value, dict | list):
                    return value
    raise ValueError(f"reply is not JSON: {text[:200]!r}")


REASK_PROMPT = (
    "Your reply could not be used: {error}\n"
    "Reply again with only the corrected JSON object, matching the requested format exactly, "
    "with no text before or after it and no code fences."
)


def reask_reason(exc: Exception, limit: int = 800) -> str:
    """What was wrong with a reply, short enough to send back to the model with :data:`REASK_PROMPT`."""
    if isinstance(exc, ValidationError):
        text = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()[:10]
        )
        text = f"the JSON does not match the schema: {text}"
    else:
        text = str(exc)
    return text[:limit]
