"""The project's one LLM client: chat completions and embeddings from any OpenAI-compatible endpoint.

Every LLM call of graphstrata goes through :class:`LLMClient`, so retry policy, timeouts,
concurrency, cost accounting and caching live in one place: tenacity retries with jittered
exponential backoff (honouring ``Retry-After``) on 429, 5xx, timeouts and connection errors
(:mod:`graphstrata.llm_errors`; the ``openai`` package's own retries are off); a semaphore around
every HTTP request (:meth:`LLMClient.map` runs many prompts over a thread pool); calls, tokens,
cache hits, retries and failures per named stage (:meth:`usage`); a content-addressed reply cache
(:mod:`graphstrata.llm_cache`, so re-running an ingest costs no calls); and structured output
(:meth:`chat_json`: constrained by the endpoint's JSON-schema support where it has one
(:mod:`graphstrata.llm_structured`), validated with pydantic, repaired (:mod:`graphstrata.llm_json`),
re-asked with the validation error, :class:`ExtractionFailed` rather than half data).
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import httpx
import openai
from pydantic import BaseModel, ValidationError
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from graphstrata.config import Settings, get_settings
from graphstrata.llm_cache import ReplyCache
from graphstrata.llm_errors import (
    ExtractionFailed,
    LLMCallFailed,
    LLMError,
    LLMNotConfigured,
    is_retryable,
    retry_after,
)
from graphstrata.llm_json import REASK_PROMPT, parse_json_lenient, reask_reason
from graphstrata.llm_pool import map_threads
from graphstrata.llm_structured import (
    TRUNCATED,
    PromptTooLong,
    bounded,
    is_context_overflow,
    prompt_too_long,
    rejects_response_format,
    response_format,
    shorter,
)

T = TypeVar("T")
R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)
Message = dict[str, Any]


@dataclass
class StageUsage:
    """Cost of one named stage. ``calls`` counts successful HTTP requests (each one billed)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    failures: int = 0
    retries: int = 0


# --------------------------------------------------------------------------------------------
# the client
# --------------------------------------------------------------------------------------------


class LLMClient:
    """OpenAI-compatible chat + embeddings with retries, a concurrency bound, accounting and a cache.

    Thread-safe: one instance is meant to be shared by every stage of a run (see :func:`get_llm`).
    Keyword arguments override the settings (tests use fast backoff and a temporary cache).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        chat_model: str | None = None,
        embed_model: str | None = None,
        timeout: float | None = None,
        concurrency: int | None = None,
        cache_dir: Path | str | None = None,
        use_cache: bool = True,
        max_attempts: int = 6,
        backoff_initial: float = 1.0,
        backoff_max: float = 60.0,
        json_schema: bool | None = None,
    ) -> None:
        s = settings or get_settings()
        self.base_url = base_url or s.openai_base_url
        api_key = api_key or s.openai_api_key
        if not (self.base_url or api_key):
            raise LLMNotConfigured("set OPENAI_BASE_URL and/or OPENAI_API_KEY to use an LLM endpoint")
        self.chat_model = chat_model or s.chat_model
        remote_embed = s.embed_model if not s.embed_model.startswith("local:") else None
        self.embed_model = embed_model or remote_embed
        self.timeout = timeout if timeout is not None else s.llm_timeout
        self.concurrency = max(1, concurrency or s.llm_concurrency)
        self.cache = ReplyCache(Path(cache_dir) if cache_dir else Path(s.cache_dir) / "llm", enabled=use_cache)
        self.max_attempts = max(1, max_attempts)
        self.backoff_initial, self.backoff_max = backoff_initial, backoff_max
        self.embed_batch_size = s.embed_batch_size
        self.json_schema = s.llm_json_schema if json_schema is None else json_schema
        self._finish = threading.local()  # finish_reason of this thread's last completion
        # Local servers (vLLM, Ollama, llama.cpp) need no key, but the openai package insists on one.
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed", base_url=self.base_url, timeout=self.timeout, max_retries=0
        )
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._lock = threading.Lock()
        self._usage: dict[str, StageUsage] = {}

    @classmethod
    def from_settings(cls, settings: Settings | None = None, **overrides: Any) -> LLMClient:
        """A client for the configured endpoint; raises :class:`LLMNotConfigured` in no-LLM mode."""
        s = settings or get_settings()
        if not s.llm_enabled:
            raise LLMNotConfigured("no chat model/endpoint configured (GRAPHSTRATA_CHAT_MODEL, OPENAI_*)")
        return cls(s, **overrides)

    def check_cache(self) -> None:
        """Raise :class:`CacheWriteError` now if the reply cache cannot be written (see :meth:`ReplyCache.check`)."""
        self.cache.check()

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- accounting ----------------------------------------------------------------------

    def _add(self, stage: str, **counts: int) -> None:
        with self._lock:
            entry = self._usage.setdefault(stage, StageUsage())
            for name, n in counts.items():
                setattr(entry, name, getattr(entry, name) + n)

    def usage(self) -> dict[str, dict[str, int]]:
        """``{stage: {calls, prompt_tokens, completion_tokens, cache_hits, failures, retries}}``."""
        with self._lock:
            return {stage: asdict(u) for stage, u in sorted(self._usage.items())}

    def reset_usage(self) -> None:
        with self._lock:
            self._usage.clear()

    @contextlib.contextmanager
    def _counting_failures(self, stage: str) -> Iterator[None]:
        """Count one failure for every public call that ends in an exception (counted exactly once)."""
        try:
            yield
        except Exception:
            self._add(stage, failures=1)
            raise

    # ---- transport -------------------------------------------------------------------------

    def _wait(self, state: RetryCallState) -> float:
        """Exponential backoff with jitter (threads must not retry in lockstep); obey Retry-After."""
        ceiling = min(self.backoff_max, self.backoff_initial * 2 ** (state.attempt_number - 1))
        delay = random.uniform(ceiling / 2, ceiling)
        exc = state.outcome.exception() if state.outcome else None
        hinted = retry_after(exc)
        if hinted is not None:
            delay = max(delay, min(hinted, self.backoff_max))
        return delay

    def _request(self, stage: str, send: Callable[[], T]) -> T:
        """Send one request with retries; each attempt holds a concurrency slot, backoff sleeps do not."""

        def attempt() -> T:
            with self._slots:
                return send()

        retrying = Retrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(is_retryable),
            before_sleep=lambda _state: self._add(stage, retries=1),
            reraise=True,
        )
        try:
            return retrying(attempt)
        except openai.APIError as exc:
            if is_context_overflow(exc):
                raise prompt_too_long(stage, exc) from exc
            if is_retryable(exc):
                raise LLMCallFailed(f"{stage}: request failed after {self.max_attempts} attempts: {exc}") from exc
            raise

    def _require_chat_model(self) -> str:
        if not self.chat_model:
            raise LLMNotConfigured("no chat model configured (GRAPHSTRATA_CHAT_MODEL)")
        return self.chat_model

    def _complete_json(
        self, messages: Sequence[Message], stage: str, params: dict[str, Any], fmt: dict[str, Any] | None
    ) -> str:
        """A completion constrained to ``fmt`` (a response_format) where the endpoint supports it."""
        if fmt is not None and self.json_schema:
            try:
                return self._complete(messages, stage, {**params, "response_format": fmt})
            except openai.APIStatusError as exc:
                if not rejects_response_format(exc):
                    raise
                self.json_schema = False  # remembered: this endpoint gets the prompt-only request from now on
        return self._complete(messages, stage, params)

    def _complete(self, messages: Sequence[Message], stage: str, params: dict[str, Any]) -> str:
        """One chat completion through the retry policy (uncached); accounts calls and tokens."""
        model = self._require_chat_model()
        response = self._request(
            stage, lambda: self._client.chat.completions.create(model=model, messages=messages, **params)
        )
        text = (response.choices[0].message.content if response.choices else None) or ""
        self._finish.reason = response.choices[0].finish_reason if response.choices else None
        usage = response.usage
        prompt = usage.prompt_tokens if usage else _estimate_tokens(json.dumps(list(messages)))
        completion = usage.completion_tokens if usage else _estimate_tokens(text)
        self._add(stage, calls=1, prompt_tokens=prompt, completion_tokens=completion)
        return text

    @staticmethod
    def _params(params: dict[str, Any]) -> dict[str, Any]:
        return {"temperature": 0, **params}  # the papers run at temperature 0; it also makes caching sound

    def _cached_reply(
        self, messages: Sequence[Message], stage: str, params: dict[str, Any]
    ) -> tuple[str, str, str | None]:
        """(chat model, cache key, cached reply or None) of a chat request; a hit is counted."""
        model = self._require_chat_model()
        key = ReplyCache.key("chat", model, {"messages": list(messages), "params": params})
        hit = self.cache.get(key)
        if hit is not None and isinstance(hit.get("reply"), str):
            self._add(stage, cache_hits=1)
            return model, key, hit["reply"]
        return model, key, None

    # ---- public API ------------------------------------------------------------------------

    def chat(self, messages: Sequence[Message], *, stage: str = "chat", **params: Any) -> str:
        """The assistant's reply text; served from the cache when the same request was made before."""
        params = self._params(params)
        with self._counting_failures(stage):
            _model, key, hit = self._cached_reply(messages, stage, params)
            if hit is not None:
                return hit
            reply = self._complete(messages, stage, params)
            self.cache.put(key, {"reply": reply})
            return reply

    def chat_stream(self, messages: Sequence[Message], *, stage: str = "chat", **params: Any) -> Iterator[str]:
        """The reply as it is generated: text pieces in order, whose concatenation is what :meth:`chat`
        returns (the two share the cache; a hit is served as one piece).

        Opening the stream goes through the retry policy and the concurrency bound like every other
        request; once a piece has been yielded a failure raises :class:`LLMCallFailed` (a retry would
        repeat text). Accounting uses the usage the endpoint reports in the stream, else an estimate.
        Closing the iterator early (the reader went away) closes the HTTP response, so the endpoint
        stops generating; only a complete reply is cached.
        """
        params = self._params(params)
        with self._counting_failures(stage):
            model, key, hit = self._cached_reply(messages, stage, params)
            if hit is not None:
                yield hit
                return
            stream = self._request(
                stage,
                lambda: self._client.chat.completions.create(model=model, messages=messages, stream=True, **params),
            )
            pieces: list[str] = []
            usage = None
            try:
                for chunk in stream:
                    usage = getattr(chunk, "usage", None) or usage
                    for choice in chunk.choices or []:
                        piece = choice.delta.content if choice.delta is not None else None
                        if piece:
                            pieces.append(piece)
                            yield piece
            except (openai.APIError, httpx.HTTPError) as exc:
                raise LLMCallFailed(f"{stage}: the stream broke after {len(pieces)} pieces: {exc}") from exc
            finally:
                stream.close()  # early close (GeneratorExit) included: the endpoint stops generating
                text = "".join(pieces)
                prompt = usage.prompt_tokens if usage else _estimate_tokens(json.dumps(list(messages)))
                completion = usage.completion_tokens if usage else _estimate_tokens(text)
                self._add(stage, calls=1, prompt_tokens=prompt, completion_tokens=completion)
            self.cache.put(key, {"reply": text})

    def chat_json(
        self,
        messages: Sequence[Message],
        schema: type[M],
        stage: str = "chat_json",
        *,
        max_reasks: int = 2,
        json_schema: dict[str, Any] | None = None,
        shorter: Callable[[dict[str, Any]], dict[str, Any]] = shorter,
        **params: Any,
    ) -> M:
        """A reply validated as ``schema``: repaired if malformed, re-asked with the error if invalid.
        Only validated results are cached (keyed by the original messages and the schema), so a
        re-run costs no calls even when the first run needed re-asks, and a failure is never cached.
        Raises :class:`ExtractionFailed` when ``1 + max_reasks`` replies all fail, when the endpoint
        stays unreachable or when the prompt exceeds its context window. The reply is constrained to
        ``json_schema`` (default: ``schema``'s with every free string and list bounded, ``bounded``)
        unless the caller sets a ``response_format``; after a reply cut at the token limit, to
        ``shorter(json_schema)`` (bounds quartered, so it fits)."""
        params = self._params(params)
        with self._counting_failures(stage):
            model = self._require_chat_model()
            fingerprint = {"name": schema.__name__, "schema": schema.model_json_schema()}
            key = ReplyCache.key(
                "chat_json", model, {"messages": list(messages), "params": params, "schema": fingerprint}
            )
            hit = self.cache.get(key)
            if hit is not None:
                with contextlib.suppress(ValidationError):
                    value = schema.model_validate(hit.get("value"))
                    self._add(stage, cache_hits=1)
                    return value

            json_schema = json_schema or bounded(fingerprint["schema"])  # only for a call the cache cannot answer
            constrain = "response_format" not in params
            fmt = response_format(schema.__name__, json_schema) if constrain else None
            conversation = list(messages)
            errors: list[str] = []
            reply: str | None = None
            for _ in range(1 + max(0, max_reasks)):
                try:
                    reply = self._complete_json(conversation, stage, params, fmt)
                except (LLMCallFailed, PromptTooLong) as exc:
                    raise ExtractionFailed(
                        f"{stage}: endpoint failed: {exc}",
                        stage=stage,
                        attempts=len(errors),
                        errors=[*errors, str(exc)],
                        last_reply=reply,
                    ) from exc
                try:
                    value = schema.model_validate(parse_json_lenient(reply))
                except (ValueError, ValidationError) as exc:  # ValidationError is a ValueError too
                    error = reask_reason(exc)
                    if getattr(self._finish, "reason", None) == "length":
                        error = f"{TRUNCATED} ({error})"
                        if fmt is not None:  # a quarter of the bounds, so that the next reply fits
                            fmt = response_format(schema.__name__, json_schema := shorter(json_schema))
                    errors.append(error)
                    conversation = [
                        *messages,
                        {"role": "assistant", "content": reply},
                        {"role": "user", "content": REASK_PROMPT.format(error=error)},
                    ]
                    continue
                self.cache.put(key, {"value": value.model_dump(mode="json")})
                return value
            raise ExtractionFailed(
                f"{stage}: no valid {schema.__name__} after {len(errors)} replies; last error: {errors[-1]}",
                stage=stage,
                attempts=len(errors),
                errors=errors,
                last_reply=reply,
            )

    def embed(
        self,
        texts: Sequence[str],
        *,
        stage: str = "embed",
        model: str | None = None,
        dimensions: int | None = None,
        batch_size: int | None = None,
    ) -> list[list[float]]:
        """One vector per text, in order. Cached per text, so only unseen texts are sent."""
        with self._counting_failures(stage):
            model = model or self.embed_model
            if not model:
                raise LLMNotConfigured("no remote embedding model configured (GRAPHSTRATA_EMBED_MODEL)")
            out: list[list[float] | None] = [None] * len(texts)
            keys = [ReplyCache.key("embed", model, {"text": t, "dimensions": dimensions}) for t in texts]
            missing: list[int] = []
            for i, key in enumerate(keys):
                hit = self.cache.get(key)
                if hit is not None and isinstance(hit.get("vector"), list):
                    out[i] = hit["vector"]
                else:
                    missing.append(i)
            if len(missing) < len(texts):
                self._add(stage, cache_hits=len(texts) - len(missing))
            size = max(1, batch_size or self.embed_batch_size)
            extra = {"dimensions": dimensions} if dimensions else {}
            for start in range(0, len(missing), size):
                idx = missing[start : start + size]
                batch = [texts[i] or " " for i in idx]  # endpoints reject empty strings
                response = self._request(
                    stage,
                    lambda batch=batch: self._client.embeddings.create(
                        model=model, input=batch, encoding_format="float", **extra
                    ),
                )
                data = sorted(response.data, key=lambda d: d.index)
                if len(data) != len(batch):
                    raise LLMError(f"{stage}: {len(batch)} texts sent, {len(data)} vectors returned")
                tokens = response.usage.prompt_tokens if response.usage else _estimate_tokens(" ".join(batch))
                self._add(stage, calls=1, prompt_tokens=tokens)
                for i, item in zip(idx, data, strict=True):
                    vector = [float(x) for x in item.embedding]
                    out[i] = vector
                    self.cache.put(keys[i], {"vector": vector})
            return [v for v in out if v is not None]

    def map(
        self,
        fn: Callable[[T], R],
        items: Iterable[T],
        *,
        progress: Callable[[int, int], None] | None = None,
        return_exceptions: bool = False,
    ) -> list[R | BaseException]:
        """``[fn(item) ...]`` over ``concurrency`` threads, results in input order (see :func:`map_threads`)."""
        return map_threads(fn, items, self.concurrency, progress=progress, return_exceptions=return_exceptions)


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)  # ~4 characters a token, for endpoints that report no usage


@lru_cache(maxsize=1)
def get_llm() -> LLMClient:
    """The process-wide client (one cache, one usage ledger); :class:`LLMNotConfigured` without an endpoint."""
    return LLMClient.from_settings(get_settings())
