"""The OpenAI-compatible Chat Completions provider: one HTTP stream per model request.

Theory of operation
-------------------
``stream`` POSTs ``<base_url>/chat/completions`` with ``stream: true`` and turns the SSE body
into ``StreamEvent``s as bytes arrive (``sse.py`` → ``reader.py``). The HTTP stack is httpx,
imported at the first request, never at startup: ``initialize`` must not pay for it (httpx
about 70-90 ms to import here, the ``openai`` SDK 0.6-0.9 s; see ``docs/providers.md``).

Retries: a request that fails *before anything was yielded* is retried up to
``RetryPolicy.max_retries`` times — on HTTP 408/409/429/5xx, on connection errors and
timeouts, and on a body that ends early — after ``retry-after-ms`` / ``retry-after`` when the
server sends one, else after an exponential, jittered backoff. Each retry is logged
(``model_request_retry``) and yielded as ``Retrying`` (the session tells the user). Once a delta went out, a failure is final (``ModelError``): what the
client saw cannot be taken back, and the partial answer is journaled as such. An error the
server reports inside the stream (``reader.py``) is final too; a 200 whose stream brings
nothing at all is retried like a broken one and, when retries run out, reported as such
(``EmptyStream``). After ``[DONE]`` the answer is complete: a transport error while draining
the rest of the body is logged (debug) and ignored.

Cancellation is anyio cancellation: the session actor cancels the scope around the iteration
and closes the generator (``aclosing``); leaving ``client.stream(...)`` closes the response,
and httpcore closes a connection whose body was not read to the end, so the provider stops
generating at once. Nothing here yields inside a cancel scope.

Request options (``ModelSettings``, resolved per model by ``registry.py``): every request
carries an output bound, ``max_tokens`` (or ``max_completion_tokens``): what is left of the
context window once the request is counted (characters of the encoded messages and tools / 4,
rounded up), and no more than ``max_output_tokens``. When nothing is left the request is not
sent: ``ContextOverflow``. A server that refuses a request as too long for its window (HTTP
400 or 413 with OpenAI's ``context_length_exceeded``, llama.cpp's ``exceed_context_size_error``,
or vLLM's, SGLang's, DeepSeek's … wording; or the same inside the stream) fails it with
``ContextOverflow`` too, not retried: the session may compact and try once more. A ``Usage``
without a cost gets one from ``input_price`` / ``output_price`` (per million tokens) when set.

Secrets: the API key lives in a ``Secret`` (its repr hides it) and goes only into the
``Authorization`` header of the client. Every error message that may quote the server is
scrubbed of the key before it becomes a ``ModelError`` (journal) or a log line.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING

import anyio
import msgspec

from acp_agent import __version__
from acp_agent.logs import get_logger
from acp_agent.model.base import (
    Capabilities,
    ContextOverflow,
    ModelError,
    ModelRequest,
    Retrying,
    StreamEvent,
    Usage,
)
from acp_agent.model.openai.probe import is_loopback, probe_window
from acp_agent.model.openai.reader import ChatStreamReader, IncompleteStream
from acp_agent.model.openai.settings import (
    DEFAULT_CONTEXT_WINDOW,
    Endpoint,
    ModelSettings,
    RetryPolicy,
)
from acp_agent.model.openai.sse import SseEvent, SseParser
from acp_agent.model.openai.warm import ssl_context
from acp_agent.model.openai.wire import (
    ERROR_DOCUMENT,
    encode_body,
    encode_parts,
    error_text,
)
from acp_agent.model.window import overflow_facts

if TYPE_CHECKING:
    import httpx

log = get_logger("acp_agent.model")

RETRY_STATUSES = frozenset({408, 409, 429})
ERROR_BODY_LIMIT = 64 * 1024
DRAIN_AFTER_DONE_S = 2.0
"""The process default window (``--context-window``) when no setting names one."""
OVERFLOW_STATUSES = frozenset({400, 413})
OVERFLOWED = "the context window was exceeded"
_OVERFLOW = re.compile(
    "|".join(
        [
            r"context_length_exceeded",  # OpenAI, Azure, Groq: error.code
            r"exceed_context_size_error",  # llama.cpp: error.type
            r"maximum context length",  # OpenAI, DeepSeek, vLLM, SGLang, Mistral, OpenRouter
            r"context length is only",  # vLLM (renderers/params.py)
            r"longer than the model'?s context length",  # SGLang, Together
            r"longer than the maximum model length",  # vLLM (V1 engine)
            r"exceeds? (?:the )?(?:available )?context size",  # llama.cpp, every wording
            r"larger than the max context size",  # llama.cpp, older builds
            r"`inputs` tokens \+ `max_new_tokens` must be",  # TGI
            r"prompt is too long",  # Anthropic models behind OpenRouter
            r"exceeded (?:max )?context length",  # Ollama
        ]
    ),
    re.IGNORECASE,
)


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class OpenAICompatible:
    """A ``ModelProvider`` for one model of one OpenAI-compatible endpoint."""

    def __init__(
        self,
        endpoint: Endpoint,
        model: str,
        retry: RetryPolicy | None = None,
        *,
        think_tags: bool | None = None,
        settings: ModelSettings | None = None,
        context_window: int = DEFAULT_CONTEXT_WINDOW,
    ) -> None:
        self.endpoint = endpoint
        self.model = model
        self.retry = retry or RetryPolicy()
        self.settings = settings or ModelSettings()
        self.think_tags = self.settings.think_tags if think_tags is None else think_tags
        """Read ``<think>…</think>`` in the content as thoughts (see ``reader.py``)."""
        self.context_window = self.settings.context_window or context_window
        self._probe = self.settings.context_window is None and (
            self.settings.local or is_loopback(endpoint.base_url)
        )
        """Ask the server for its window before the first request (``probe.py``)."""
        self.capabilities = Capabilities(
            writes_titles=not self.settings.local,
            context_window=self.context_window,
            local_cpu=self.settings.local,
            images=self.settings.images,
            reasoning_echo=self.settings.reasoning_echo,
            thinking_levels=True,
            http_endpoint=endpoint.base_url,
        )
        """The model's window in tokens: its settings' ``context_window``, else the process
        default passed in (``--context-window``)."""
        self.images = self.settings.images
        self.name = f"{endpoint.name}:{model}"
        self._http: httpx.AsyncClient | None = None
        self._log = log.bind(provider=endpoint.name, model=model)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        import httpx

        if self.endpoint.missing_key:
            raise ModelError(f"{self.name}: no API key: set {self.endpoint.api_key_env}")
        if self._probe:
            await self._learn_window()
        body = self._body(request)
        for attempt in itertools.count(1):
            yielded = False
            try:
                async with self._client().stream("POST", "chat/completions", content=body) as r:
                    await self._check(r)
                    reader = ChatStreamReader(self.name, think_tags=self.think_tags)
                    parser = SseParser()
                    chunks = r.aiter_bytes()
                    async for data in chunks:
                        for item in self._read(reader, parser.feed(data)):
                            yielded = True
                            yield item
                        if reader.done:
                            break
                    for item in self._read(reader, parser.close()):
                        yielded = True
                        yield item
                    await self._drain(chunks, reader)
                    for item in reader.end():
                        yield self.settings.priced(item) if isinstance(item, Usage) else item
                    return
            except (_Retryable, IncompleteStream, httpx.HTTPError, httpx.InvalidURL) as exc:
                reason = self._reason(exc)
                if yielded or attempt > self.retry.max_retries or not _retryable(exc):
                    raise self._failure(exc, reason, attempt, yielded) from None
                retry_after = exc.retry_after if isinstance(exc, _Retryable) else None
                delay = self.retry.delay(attempt, retry_after)
                self._log.warning(
                    "model_request_retry",
                    attempt=attempt,
                    max_retries=self.retry.max_retries,
                    reason=reason,
                    delay_ms=round(delay * 1000),
                )
                yield Retrying(attempt, self.retry.max_retries, reason, round(delay * 1000))
                await anyio.sleep(delay)

    async def learn_window(self) -> None:
        """Ask the server for its window now (before the session builds its first request),
        when this provider would (``probe.py``); once."""
        if self._probe:
            await self._learn_window()

    async def _learn_window(self) -> None:
        """Once: the window the server names becomes the one this provider declares (the
        session reads ``capabilities.context_window`` for every request)."""
        self._probe = False
        window = await probe_window(self._client(), self.endpoint.base_url, self.model)
        if window is not None:
            self.context_window = window
            self.capabilities = msgspec.structs.replace(self.capabilities, context_window=window)

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    # -- pieces ---------------------------------------------------------------------------------

    def _body(self, request: ModelRequest) -> bytes:
        """The encoded body with its output bound; ``ContextOverflow`` when nothing is left."""
        options = self.settings.wire
        parts = encode_parts(request, options)
        estimate = math.ceil(parts.estimated_tokens * max(request.token_ratio, 1.0))
        window = min(request.context_window or self.context_window, self.context_window)
        left = window - estimate
        if left < 1:
            raise ContextOverflow(
                f"{self.name}: {OVERFLOWED}: the request is about {estimate} tokens "
                f"(its characters / 4, calibrated), the window {window} (nothing was sent)"
            )
        bound = min(
            left, self.settings.max_output_tokens or left, request.max_output_tokens or left
        )
        body = encode_body(self.model, request, parts, options, bound)
        self._log.debug(
            "model_request_sent",
            session_id=request.session_id,
            turn=request.turn,
            step=request.step,
            messages=len(request.messages),
            body_bytes=len(body),
            estimated_tokens=estimate,
            max_tokens=bound,
        )
        return body

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            import httpx

            timeout = httpx.Timeout(
                self.endpoint.timeout_s, connect=self.endpoint.connect_timeout_s
            )
            self._http = httpx.AsyncClient(
                base_url=self.endpoint.base_url,
                headers=self._headers(),
                timeout=timeout,
                verify=ssl_context(self.endpoint.base_url),  # ahead of time (warm.py)
            )
        return self._http

    def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "text/event-stream",
            "Content-Type": "application/json",
            "User-Agent": f"acp-agent/{__version__}",
        }
        if self.endpoint.api_key is not None:
            headers["Authorization"] = "Bearer " + self.endpoint.api_key.reveal()
        return headers

    def _read(self, reader: ChatStreamReader, events: list[SseEvent]) -> Iterator[StreamEvent]:
        """Feed the reader event by event, lazily: what came before an error in the same read
        still goes out first. An error the server reported fails the request (no retry), its
        message scrubbed of the key."""
        for event in events:
            try:
                items = reader.feed(event.data, event.event)
            except ModelError as exc:
                raise _stream_failure(self._scrub(str(exc))) from None
            yield from items

    async def _drain(self, chunks: AsyncIterator[bytes], reader: ChatStreamReader) -> None:
        """After ``[DONE]``, read the rest of the body briefly so the connection can be reused.
        The answer is complete: a transport error now (llama-cpp-python's server resets the
        connection after ``[DONE]``) only costs the connection, never the answer."""
        import httpx

        if not reader.done:
            return
        try:
            with anyio.move_on_after(DRAIN_AFTER_DONE_S):
                async for _ in chunks:
                    pass
        except httpx.TransportError as exc:
            reason = self._scrub(f"{type(exc).__name__}: {exc}")
            self._log.debug("model_stream_closed_after_done", reason=reason)

    async def _check(self, response: httpx.Response) -> None:
        """Raise for a response that is no event stream: ``_Retryable`` or ``ModelError``."""
        status = response.status_code
        content_type = response.headers.get("content-type", "")
        if status == 200 and content_type.startswith("text/event-stream"):
            return
        body = await _read_capped(response)
        detail = _error_message(body) or response.reason_phrase
        reason = f"HTTP {status}: {detail}"
        if status in RETRY_STATUSES or status >= 500:
            raise _Retryable(reason, _retry_after(response.headers))
        text = body.decode("utf-8", "replace")
        if status in OVERFLOW_STATUSES and overflowed(text):
            message = self._scrub(f"{self.name}: {OVERFLOWED}: {reason}")
            raise ContextOverflow(message, **overflow_facts(text))
        if status in (401, 403) and self.endpoint.api_key_env:
            reason += f" (check {self.endpoint.api_key_env})"
        elif status == 200:
            reason = f"expected an event stream, got {content_type or 'no content type'}: {detail}"
        raise ModelError(self._scrub(f"{self.name}: {reason}"))

    def _reason(self, exc: Exception) -> str:
        if isinstance(exc, _Retryable | IncompleteStream):
            return self._scrub(str(exc))
        text = str(exc) or "no detail"
        return self._scrub(f"{type(exc).__name__}: {text}")

    def _failure(self, exc: Exception, reason: str, attempt: int, mid_answer: bool) -> ModelError:
        if isinstance(exc, IncompleteStream):
            return ModelError(reason)
        if mid_answer:
            return ModelError(f"{self.name}: the connection broke mid-answer: {reason}")
        where = "" if isinstance(exc, _Retryable) else f" (at {self.endpoint.base_url})"
        tries = f" after {attempt} attempts" if attempt > 1 else ""
        return ModelError(f"{self.name}: {reason}{where}{tries}")

    def _scrub(self, text: str) -> str:
        key = self.endpoint.api_key
        return key.scrub(text) if key is not None else text


def overflowed(text: str) -> bool:
    """Whether a server's error (its whole body, or the message the reader made of it) says
    the request was longer than the model's context window."""
    return _OVERFLOW.search(text) is not None


def _stream_failure(text: str) -> ModelError:
    """An error the server reported inside the stream: ``ContextOverflow`` when it says so."""
    if not overflowed(text):
        return ModelError(text)
    return ContextOverflow(f"{text} ({OVERFLOWED})", **overflow_facts(text))


def _retryable(exc: Exception) -> bool:
    import httpx

    if isinstance(exc, _Retryable | IncompleteStream):
        return True
    return isinstance(exc, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError)


async def _read_capped(response: httpx.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= ERROR_BODY_LIMIT:
            break
    return bytes(body[:ERROR_BODY_LIMIT])


def _error_message(body: bytes) -> str:
    try:
        document = ERROR_DOCUMENT.decode(body)
    except msgspec.DecodeError:
        return body.decode("utf-8", "replace").strip()[:500]
    error = document.body()
    return (error_text(error) or "") if error.message or error.type or error.code else ""


def _retry_after(headers: Mapping[str, str]) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            continue  # an HTTP date: fall back to the backoff
    return None
