"""A fake OpenAI-compatible HTTP server, so the real ``openai`` client can be tested without a model.

Real HTTP on a loopback ephemeral port (``http.server.ThreadingHTTPServer``):

* ``POST /v1/chat/completions`` — an extraction prompt (chunk text between the markers of
  ``graphstrata.ingest.extract``) is answered with the JSON of ``extract_with_spacy`` on that
  text, exactly as a well-behaved LLM would; any other prompt gets a deterministic text.
* ``POST /v1/embeddings`` — deterministic feature-hashed bag-of-words vectors of ``embed_dim``
  (texts sharing words are similar, so retrieval tests are meaningful); float or base64.
* ``GET /v1/models``.

It requires ``Authorization: Bearer <api_key>``, counts requests and tokens, and can be told to
misbehave for the next N POST requests: ``fail_next("429" | "500" | "hang" | "malformed" |
"invalid" | "garbage", n)``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import struct
import threading
import time
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from graphstrata.ingest.extract import text_from_extraction_prompt
from graphstrata.ingest.extract_spacy import extract_with_spacy
from graphstrata.text.nlp import get_nlp

if TYPE_CHECKING:
    from graphstrata.config import Settings

Failure = Literal["429", "500", "hang", "malformed", "invalid", "garbage"]
FAILURES: tuple[str, ...] = ("429", "500", "hang", "malformed", "invalid", "garbage")
CHAT_MODEL = "fake-chat"
EMBED_MODEL = "fake-embed"


def _tokens(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def hashed_vector(text: str, dim: int) -> list[float]:
    """Signed feature hashing of lower-cased words, L2-normalised (the empty text maps to e0)."""
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "big")
        vec[h % dim] += 1.0 if (h >> 32) & 1 else -1.0
    norm = sum(x * x for x in vec) ** 0.5
    if norm == 0:
        vec[0], norm = 1.0, 1.0
    return [x / norm for x in vec]


def _malformed(payload: dict[str, Any]) -> str:
    """Repairable: prose around a fenced object with a trailing comma."""
    body = json.dumps(payload, indent=1)
    body = body[: body.rfind("}")].rstrip() + ",\n}"
    return f"Sure! Here is the extraction:\n```json\n{body}\n```\nLet me know if you need more."


class FakeOpenAI:
    """The server; use as a context manager (``with FakeOpenAI() as fake: fake.base_url``)."""

    def __init__(
        self, api_key: str = "test-key", embed_dim: int = 16, hang_seconds: float = 10.0, delay: float = 0.0
    ) -> None:
        self.api_key = api_key
        self.embed_dim = embed_dim
        self.hang_seconds = hang_seconds
        self.delay = delay  # seconds added to every POST, to observe concurrency
        self._lock = threading.Lock()
        self._failures: deque[str] = deque()
        self._release = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.reset()

    # ---- control ---------------------------------------------------------------------------

    def reset(self) -> None:
        """Zero the counters and forget scheduled failures."""
        with self._lock:
            self.calls = 0  # POST requests received, whatever their outcome
            self.calls_by_path: Counter[str] = Counter()
            self.failures_served: Counter[str] = Counter()
            self.prompt_tokens = 0
            self.completion_tokens = 0
            self.unauthorized = 0
            self.in_flight = 0
            self.max_in_flight = 0  # most POST requests served at the same time
            self.requests: list[dict[str, Any]] = []
            self._failures.clear()

    def fail_next(self, kind: Failure, n: int = 1) -> None:
        """Misbehave on the next ``n`` POST requests (queued after failures already scheduled).

        429/500: error status; hang: answer only after ``hang_seconds`` (client timeouts);
        malformed: repairable JSON (fence, prose, trailing comma); invalid: JSON of the wrong shape;
        garbage: no JSON at all. The last three apply to chat; embeddings answer normally.
        """
        if kind not in FAILURES:
            raise ValueError(f"unknown failure {kind!r}; one of {FAILURES}")
        with self._lock:
            self._failures.extend([kind] * n)

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def handler_base(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class (a subclass of the fake may serve more of the API)."""
        return _Handler

    def start(self) -> FakeOpenAI:
        get_nlp()  # load spaCy now (seconds), not inside the first request, where clients time out
        handler = type("Handler", (self.handler_base(),), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._release.clear()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()  # wake hanging handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- behaviour -------------------------------------------------------------------------

    def _next_failure(self) -> str | None:
        with self._lock:
            return self._failures.popleft() if self._failures else None

    def _count(self, prompt: int, completion: int) -> None:
        with self._lock:
            self.prompt_tokens += prompt
            self.completion_tokens += completion

    def chat_reply(self, messages: list[dict[str, Any]], failure: str | None) -> str:
        """The assistant's text for ``messages`` (deterministic)."""
        chunk = None
        for m in messages:
            if m.get("role") == "user" and isinstance(m.get("content"), str):
                chunk = text_from_extraction_prompt(m["content"])
                if chunk is not None:
                    break
        if failure == "garbage":
            return "I am sorry, I cannot produce that format today."
        if chunk is None:
            last = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
            digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:8]
            return f"Fake answer {digest}: {str(last).strip()[:200]}"
        payload = extract_with_spacy(chunk).llm_json()
        if failure == "malformed":
            return _malformed(payload)
        if failure == "invalid":
            return json.dumps({"title": payload["title"], "entities": "none", "relations": 3})
        return json.dumps(payload)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            self.wfile.write(data)

    def _error(self, status: int, message: str, type_: str) -> None:
        self._send(status, {"error": {"message": message, "type": type_, "param": None, "code": None}})

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {self.fake.api_key}":
            return True
        with self.fake._lock:
            self.fake.unauthorized += 1
        self._error(401, "Incorrect API key provided.", "invalid_request_error")
        return False

    def do_GET(self) -> None:
        if not self._authorized():
            return
        if self.path.rstrip("/") == "/v1/models":
            models = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in (CHAT_MODEL, EMBED_MODEL)]
            self._send(200, {"object": "list", "data": models})
        else:
            self._error(404, f"no route {self.path}", "invalid_request_error")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self._authorized():
            return
        path = self.path.rstrip("/")
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._error(400, "body is not JSON", "invalid_request_error")
            return
        fake = self.fake
        with fake._lock:
            fake.calls += 1
            fake.calls_by_path[path] += 1
            fake.requests.append({"path": path, "body": body})
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            self._post(path, body)
        finally:
            with fake._lock:
                fake.in_flight -= 1

    def _post(self, path: str, body: dict[str, Any]) -> None:
        fake = self.fake
        if fake.delay:
            time.sleep(fake.delay)
        failure = fake._next_failure()
        if failure:
            with fake._lock:
                fake.failures_served[failure] += 1
        if failure == "429":
            self._error(429, "Rate limit reached (fake).", "rate_limit_error")
            return
        if failure == "500":
            self._error(500, "The server had an error (fake).", "server_error")
            return
        if failure == "hang":
            fake._release.wait(fake.hang_seconds)
        if path == "/v1/chat/completions":
            self._chat(body, failure)
        elif path == "/v1/embeddings":
            self._embeddings(body)
        else:
            self._error(404, f"no route {self.path}", "invalid_request_error")

    def _chat(self, body: dict[str, Any], failure: str | None) -> None:
        messages = body.get("messages") or []
        text = self.fake.chat_reply(messages, failure)
        prompt = sum(_tokens(str(m.get("content", ""))) for m in messages)
        completion = _tokens(text)
        self.fake._count(prompt, completion)
        self._send(
            200,
            {
                "id": "chatcmpl-" + hashlib.sha256(text.encode()).hexdigest()[:12],
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", CHAT_MODEL),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                        "logprobs": None,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            },
        )

    def _embeddings(self, body: dict[str, Any]) -> None:
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        dim = int(body.get("dimensions") or self.fake.embed_dim)
        data = []
        for i, text in enumerate(texts):
            vec = hashed_vector(str(text), dim)
            if body.get("encoding_format") == "base64":
                embedding: Any = base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode()
            else:
                embedding = vec
            data.append({"object": "embedding", "index": i, "embedding": embedding})
        prompt = sum(_tokens(str(t)) for t in texts)
        self.fake._count(prompt, 0)
        self._send(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", EMBED_MODEL),
                "usage": {"prompt_tokens": prompt, "total_tokens": prompt},
            },
        )


def fake_llm_settings(base: Settings, fake: FakeOpenAI, cache_dir: Path, llm_timeout: float = 5.0) -> Settings:
    """``base`` (e.g. the test database's settings) with its chat model at ``fake`` and an LLM cache of its own."""
    return base.model_copy(
        update={
            "openai_api_key": fake.api_key,
            "openai_base_url": fake.base_url,
            "chat_model": CHAT_MODEL,
            "cache_dir": cache_dir,
            "llm_timeout": llm_timeout,
        }
    )
