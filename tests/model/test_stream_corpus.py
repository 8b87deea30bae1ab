"""The stream corpus: what real OpenAI-compatible servers send, and what must come of it.

``streams/<family>/<case>.sse`` is a response body as the server sends it (written from the
server's documented format or source, cited in the ``.json`` beside it, never a copy of a
real transcript); ``<case>.json`` says what the stream events must add up to:

- ``expect``: ``text`` and ``thought`` (the deltas joined), ``tool_calls`` (id when the
  server sent one, name, parsed arguments), ``usage`` (or ``null``), ``stop``,
  ``reasoning_details`` (the JSON objects ``Finish`` carries), ``logs`` (the warning events
  logged, exactly);
- or ``error``: a substring of the ``ModelError`` the request must fail with (``expect.text``
  then is the text that went out before it);
- ``reader``: options (``think_tags``); ``transport``: how the body ends on the wire
  (``reset``: a TCP reset after the last byte, ``cut``: closed without the final chunk),
  ``provider_logs``: events the provider must log (any level);
- ``source`` and ``pins``: where the shape comes from and what the case is for.

Each case runs twice: through ``SseParser`` and ``ChatStreamReader`` alone, the body cut in
small pieces (every boundary a network could make), and through the real provider over real
HTTP on 127.0.0.1 (``loopback.py``), so what ``provider.py`` adds (draining after ``[DONE]``,
the empty-stream report, scrubbing) is covered too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from acp_agent.content import TextContent
from acp_agent.journal.events import SourceKind, source
from acp_agent.model.base import (
    Finish,
    ModelError,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallReady,
    Usage,
    UserTurn,
)
from acp_agent.model.openai import Endpoint, OpenAICompatible, RetryPolicy, Secret
from acp_agent.model.openai.reader import ChatStreamReader
from acp_agent.model.openai.sse import SseParser
from tests.model.loopback import Reply, loopback

STREAMS = Path(__file__).parent / "streams"
FAMILIES = {
    "deepseek",
    "openai",
    "azure",
    "vllm",
    "sglang",
    "llamacpp",
    "ollama",
    "openrouter",
    "mistral",
    "groq",
    "together",
    "tgi",
}
PROVIDER = "corpus:model"
REQUEST = ModelRequest("s", 1, 1, [UserTurn([TextContent(text="hi")], source(SourceKind.USER))], [])
PIECE = 7
"""Bytes per piece on the reader-only path: every case is cut at many odd places."""

Json = dict[str, Any]


@dataclass(frozen=True)
class Case:
    sse: Path
    spec: Json

    @property
    def name(self) -> str:
        return f"{self.sse.parent.name}/{self.sse.stem}"

    @property
    def body(self) -> bytes:
        return self.sse.read_bytes()

    @property
    def think_tags(self) -> bool:
        return bool(self.spec.get("reader", {}).get("think_tags", False))

    @property
    def expected(self) -> Json:
        expect = self.spec.get("expect", {})
        return {
            "text": expect.get("text", ""),
            "thought": expect.get("thought", ""),
            "tool_calls": expect.get("tool_calls", []),
            "usage": expect.get("usage"),
            "stop": expect.get("stop", "end_turn"),
            "reasoning_details": expect.get("reasoning_details", []),
        }


def corpus() -> list[Case]:
    cases = []
    for sse in sorted(STREAMS.glob("*/*.sse")):
        spec = json.loads(sse.with_suffix(".json").read_text("utf-8"))
        cases.append(Case(sse, spec))
    return cases


CASES = corpus()
IDS = [case.name for case in CASES]


# -- what the events add up to ----------------------------------------------------------------


def outcome(events: list[StreamEvent]) -> Json:
    finishes = [e for e in events if isinstance(e, Finish)]
    usages = [e for e in events if isinstance(e, Usage)]
    assert len(finishes) == 1 and events[-1] is finishes[0], "exactly one Finish, last"
    assert len(usages) <= 1, "at most one Usage"
    finish = finishes[0]
    return {
        "text": text_of(events),
        "thought": "".join(e.text for e in events if isinstance(e, ThoughtDelta)),
        "tool_calls": [call_row(e) for e in events if isinstance(e, ToolCallReady)],
        "usage": usage_row(usages[0]) if usages else None,
        "stop": finish.stop.value,
        "reasoning_details": [json.loads(bytes(raw)) for raw in finish.reasoning_details],
    }


def text_of(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def call_row(event: ToolCallReady) -> Json:
    call = event.call
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


def usage_row(usage: Usage) -> Json:
    fields = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens", "cost")
    return {name: getattr(usage, name) for name in fields}


def check(case: Case, events: list[StreamEvent], error: ModelError | None) -> None:
    expected = case.expected
    if "error" in case.spec:
        assert error is not None, f"{case.name} must fail, got {outcome(events)}"
        assert case.spec["error"] in str(error)
        assert text_of(events) == expected["text"]
        return
    assert error is None, f"{case.name} failed: {error}"
    got = outcome(events)
    for want, call in zip(expected["tool_calls"], got["tool_calls"], strict=False):
        if "id" not in want:  # the server sent none: one was made up
            assert call.pop("id").startswith("call_")
    assert got == expected


def warnings(logs: Iterable[Mapping[str, Any]]) -> list[str]:
    return [entry["event"] for entry in logs if entry.get("log_level") == "warning"]


# -- the two paths ----------------------------------------------------------------------------


def pieces(body: bytes) -> Iterator[bytes]:
    for start in range(0, len(body), PIECE):
        yield body[start : start + PIECE]


def read_alone(case: Case) -> tuple[list[StreamEvent], ModelError | None]:
    reader, parser = ChatStreamReader(PROVIDER, think_tags=case.think_tags), SseParser()
    events: list[StreamEvent] = []
    try:
        for piece in pieces(case.body):
            for event in parser.feed(piece):
                events += reader.feed(event.data, event.event)
        for event in parser.close():
            events += reader.feed(event.data, event.event)
        events += reader.end()
    except ModelError as exc:
        return events, exc
    return events, None


async def read_over_http(case: Case) -> tuple[list[StreamEvent], ModelError | None]:
    transport = case.spec.get("transport")
    reply = Reply(str(case.sse), cut=transport == "cut", reset=transport == "reset")
    async with loopback(reply) as server:
        endpoint = Endpoint("corpus", server.base_url, Secret("sk-corpus"), "CORPUS_API_KEY")
        model = OpenAICompatible(
            endpoint, "model", RetryPolicy(max_retries=0), think_tags=case.think_tags
        )
        events: list[StreamEvent] = []
        try:
            async for event in model.stream(REQUEST):
                events.append(event)
        except ModelError as exc:
            return events, exc
        finally:
            await model.aclose()
    return events, None


# -- the suite --------------------------------------------------------------------------------


def test_the_corpus_covers_every_family_and_cites_its_sources() -> None:
    assert {case.sse.parent.name for case in CASES} == FAMILIES
    assert len(CASES) >= 30
    for case in CASES:
        assert case.spec["source"] and case.spec["pins"], case.name
        assert ("error" in case.spec) or ("expect" in case.spec), case.name


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_reader_alone(case: Case) -> None:
    with capture_logs() as logs:
        events, error = read_alone(case)
    check(case, events, error)
    assert warnings(logs) == case.spec.get("expect", {}).get("logs", [])


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_the_provider_over_http(case: Case) -> None:
    with capture_logs() as logs:
        events, error = await read_over_http(case)
    check(case, events, error)
    assert warnings(logs) == case.spec.get("expect", {}).get("logs", [])
    logged = {entry["event"] for entry in logs}
    for name in case.spec.get("provider_logs", []):
        assert name in logged, f"{case.name}: {name} not logged"
