"""The errors of the LLM client (:mod:`graphstrata.llm`), and which failures are worth a retry."""

from __future__ import annotations

import openai


class LLMError(RuntimeError):
    """Base class of the errors this module raises."""


class LLMNotConfigured(LLMError):
    """No endpoint or model is configured (the caller should fall back to no-LLM mode)."""


class LLMCallFailed(LLMError):
    """A request still failed after every retry (rate limits, 5xx, timeouts, connection errors)."""


class ExtractionFailed(LLMError):
    """The model gave no reply that validates against the expected schema, even after repair and re-asks.

    Carries what a report needs: the stage, how many replies were tried, each reply's error and the
    last raw reply.
    """

    def __init__(self, message: str, *, stage: str, attempts: int, errors: list[str], last_reply: str | None) -> None:
        super().__init__(message)
        self.stage = stage
        self.attempts = attempts
        self.errors = errors
        self.last_reply = last_reply


def is_retryable(exc: BaseException) -> bool:
    """Transient failures: timeouts, connection errors, 408/409/429 and 5xx (not an exhausted quota)."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 429 and getattr(exc, "code", None) == "insufficient_quota":
            return False  # OpenAI's 429 for an empty account: waiting will not help
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


def retry_after(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return float(value) / scale
            except ValueError:
                return None
    return None
