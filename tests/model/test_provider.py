"""The OpenAI-compatible provider over real HTTP on 127.0.0.1: retries, timeouts, failures,
cancellation, and the key staying out of every message."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from acp_agent.content import TextContent
from acp_agent.journal.events import SourceKind, source
from acp_agent.model.base import ModelError, ModelRequest, StreamEvent, TextDelta, UserTurn
from acp_agent.model.openai import Endpoint, OpenAICompatible, RetryPolicy, Secret
from tests.model.loopback import JSON_HEADERS, Reply, failed, loopback, rate_limited

KEY = "sk-test-echo-1234"
FAST = RetryPolicy(max_retries=3, base_delay_s=0.001, max_delay_s=0.002)
REQUEST = ModelRequest("s", 1, 1, [UserTurn([TextContent(text="hi")], source(SourceKind.USER))], [])


@asynccontextmanager
async def provider(
    base_url: str, *, retry: RetryPolicy = FAST, timeout_s: float = 10.0, key: str | None = KEY
) -> AsyncIterator[OpenAICompatible]:
    endpoint = Endpoint(
        "openai", base_url, Secret(key) if key else None, "OPENAI_API_KEY", timeout_s=timeout_s
    )
    model = OpenAICompatible(endpoint, "gpt-test", retry)
    try:
        yield model
    finally:
        await model.aclose()


async def collect(model: OpenAICompatible) -> list[StreamEvent]:
    return [event async for event in model.stream(REQUEST)]


def text_of(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def retries(logs: Iterable[Mapping[str, object]]) -> list[Mapping[str, object]]:
    return [entry for entry in logs if entry["event"] == "model_request_retry"]


async def test_429_and_5xx_are_retried_and_each_retry_is_logged() -> None:
    async with (
        loopback(rate_limited(20), failed(503), Reply("text.sse")) as server,
        provider(server.base_url) as model,
    ):
        with capture_logs() as logs:
            events = await collect(model)
    assert text_of(events) == "Hello, world!"
    logged = retries(logs)
    assert [(e["attempt"], e["log_level"]) for e in logged] == [(1, "warning"), (2, "warning")]
    assert logged[0]["delay_ms"] == 20  # retry-after-ms wins over the backoff
    assert str(logged[0]["reason"]).startswith("HTTP 429: Rate limit reached")
    assert str(logged[1]["reason"]).startswith("HTTP 503: The server is overloaded")
    assert len(server.requests) == 3


async def test_retries_run_out() -> None:
    async with (
        loopback(*[failed(502)] * 3) as server,
        provider(server.base_url, retry=RetryPolicy(2, 0.001, 0.002)) as model,
    ):
        with pytest.raises(ModelError, match=r"HTTP 502: .* after 3 attempts"):
            await collect(model)
    assert len(server.requests) == 3


async def test_a_refused_connection_is_retried_then_fails_naming_the_url() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    async with provider(base_url) as model:
        with capture_logs() as logs, pytest.raises(ModelError, match="ConnectError") as error:
            await collect(model)
    assert base_url in str(error.value)
    assert len(retries(logs)) == FAST.max_retries


async def test_a_stream_that_stalls_before_any_delta_times_out_and_is_retried() -> None:
    async with (
        loopback(Reply("stalled.sse", hang=True), Reply("text.sse")) as server,
        provider(server.base_url, timeout_s=0.5) as model,
    ):
        with capture_logs() as logs:
            events = await collect(model)
    assert text_of(events) == "Hello, world!"
    assert "ReadTimeout" in str(retries(logs)[0]["reason"])


async def test_a_stream_that_stalls_mid_answer_fails_without_a_retry() -> None:
    async with (
        loopback(Reply("slow.sse", hang=True), Reply("text.sse")) as server,
        provider(server.base_url, timeout_s=0.5) as model,
    ):
        seen: list[StreamEvent] = []
        with pytest.raises(ModelError, match="mid-answer: ReadTimeout"):
            async for event in model.stream(REQUEST):
                seen.append(event)
    assert text_of(seen) == "Thinking slowly"
    assert len(server.requests) == 1


async def test_a_cut_before_any_delta_is_retried_a_cut_after_one_is_final() -> None:
    async with (
        loopback(Reply("stalled.sse", cut=True), Reply("text.sse")) as server,
        provider(server.base_url) as model,
    ):
        assert text_of(await collect(model)) == "Hello, world!"
    async with (
        loopback(Reply("disconnect.sse", cut=True), Reply("text.sse")) as server,
        provider(server.base_url) as model,
    ):
        with pytest.raises(ModelError, match="mid-answer: RemoteProtocolError"):
            await collect(model)
        assert len(server.requests) == 1


async def test_401_is_final_names_the_variable_and_never_quotes_the_key() -> None:
    async with (
        loopback(failed(401, "unauthorized.json")) as server,
        provider(server.base_url) as model,
    ):
        with capture_logs() as logs, pytest.raises(ModelError) as error:
            await collect(model)
    message = str(error.value)
    assert "Incorrect API key provided: [redacted]" in message
    assert "check OPENAI_API_KEY" in message
    assert KEY not in message and KEY not in repr(logs)
    assert len(server.requests) == 1


async def test_a_json_answer_to_a_stream_request_fails_clearly() -> None:
    async with (
        loopback(Reply("rate-limited.json", headers=JSON_HEADERS)) as server,
        provider(server.base_url) as model,
    ):
        with pytest.raises(ModelError, match="expected an event stream, got application/json"):
            await collect(model)


async def test_without_a_key_nothing_is_sent() -> None:
    async with loopback(Reply("text.sse")) as server, provider(server.base_url, key=None) as model:
        with pytest.raises(ModelError, match="no API key: set OPENAI_API_KEY"):
            await collect(model)
    assert server.requests == []


async def test_cancelling_the_consumer_closes_the_http_stream_at_once() -> None:
    async with loopback(Reply("slow.sse", hang=True)) as server, provider(server.base_url) as model:
        with anyio.CancelScope() as scope:
            async for _ in model.stream(REQUEST):
                scope.cancel()  # the next read inside the provider is cancelled
        with anyio.fail_after(5):
            await server.disconnected.wait()  # while the client and its pool live on


async def test_closing_a_stream_suspended_at_a_delta_closes_the_connection() -> None:
    async with loopback(Reply("slow.sse", hang=True)) as server, provider(server.base_url) as model:
        events = model.stream(REQUEST)
        assert isinstance(await events.__anext__(), TextDelta)
        await events.aclose()  # type: ignore[attr-defined]
        with anyio.fail_after(5):
            await server.disconnected.wait()


async def test_the_connection_is_reused_between_requests() -> None:
    async with (
        loopback(Reply("text.sse"), Reply("usage.sse")) as server,
        provider(server.base_url) as model,
    ):
        await collect(model)
        await collect(model)
    assert [r.connection for r in server.requests] == [1, 1]


def test_the_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(max_retries=9, base_delay_s=1.0, max_delay_s=4.0)
    assert 0.5 <= policy.delay(1, None) <= 1.0
    assert 1.0 <= policy.delay(2, None) <= 2.0
    assert 2.0 <= policy.delay(9, None) <= 4.0
    assert policy.delay(1, 0.02) == 0.02
    assert policy.delay(1, 3600.0) <= 1.0  # an absurd retry-after is not obeyed


async def test_an_error_inside_the_stream_is_final_and_never_quotes_the_key(
    tmp_path: Path,
) -> None:
    stream = tmp_path / "error.sse"
    error = f'{{"error": {{"message": "bad key {KEY} for this model", "type": "auth"}}}}'
    stream.write_text(f"data: {error}\n\ndata: [DONE]\n\n", "utf-8")
    async with (
        loopback(Reply(str(stream)), Reply("text.sse")) as server,
        provider(server.base_url) as model,
    ):
        with pytest.raises(ModelError) as failure:
            await collect(model)
    assert "bad key [redacted] for this model (auth)" in str(failure.value)
    assert KEY not in str(failure.value)
    assert len(server.requests) == 1


async def test_think_tags_are_a_provider_option() -> None:
    async with loopback(Reply("text.sse")) as server:
        endpoint = Endpoint("local", server.base_url)
        model = OpenAICompatible(endpoint, "m", FAST, think_tags=True)
        try:
            assert text_of(await collect(model)) == "Hello, world!"
        finally:
            await model.aclose()
    assert OpenAICompatible(endpoint, "m").think_tags is False


async def test_text_read_together_with_an_error_still_goes_out_before_it(tmp_path: Path) -> None:
    text = '{"choices": [{"index": 0, "delta": {"content": "Partial"}}]}'
    error = '{"error": {"message": "engine died"}}'
    stream = tmp_path / "one-piece.sse"  # CRLF: the loopback sends it as one piece
    stream.write_bytes(f"data: {text}\r\n\r\ndata: {error}\r\n\r\n".encode())
    seen: list[StreamEvent] = []
    async with loopback(Reply(str(stream))) as server, provider(server.base_url) as model:
        with pytest.raises(ModelError, match="engine died"):
            async for event in model.stream(REQUEST):
                seen.append(event)
    assert text_of(seen) == "Partial"
