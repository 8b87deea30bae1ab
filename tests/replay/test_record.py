"""The recorder: a provider's stream becomes script lines that replay identically, twice.

``RecordingProvider`` is checked in-process against small providers (what each kind of stream
becomes); ``record`` end to end against ``tests/replay/provider.py``, a provider that is not
the script model, reached through the recorder's ``python:MODULE:FACTORY`` spec.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import msgspec
import pytest

from acp_agent.journal.events import ToolCallPart
from acp_agent.model.base import (
    Capabilities,
    Finish,
    ModelError,
    ModelRequest,
    StopKind,
    StreamEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallReady,
)
from acp_agent.model.script import ScriptLine, ScriptModel
from acp_agent.replay.fixture import MODEL
from acp_agent.replay.record import record, write_inputs
from acp_agent.replay.recording import RecordingProvider, ScriptSink
from acp_agent.replay.runner import replay
from acp_agent.replay.steps import Json

REPO = Path(__file__).resolve().parents[2]
REQUEST = ModelRequest(session_id="s", turn=1, step=1, messages=[], tools=[])


class Streams:
    """Plays canned event lists, one per request; a list ending in an exception raises it."""

    name = "canned"
    capabilities = Capabilities()

    def __init__(self, *streams: list[StreamEvent | Exception]) -> None:
        self.streams = list(streams)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        for item in self.streams.pop(0):
            if isinstance(item, Exception):
                raise item
            yield item
        await anyio.sleep_forever()  # a stream without Finish hangs


async def consume(provider: RecordingProvider) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    try:
        async for event in provider.stream(REQUEST):
            events.append(event)
            if isinstance(event, Finish):
                break
    except ModelError:
        pass
    return events


def recorded(sink: ScriptSink) -> list[Json]:
    lines: list[Json] = json.loads(b"[" + b",".join(sink.path.read_bytes().splitlines()) + b"]")
    return lines


async def test_each_kind_of_stream_becomes_one_script_line(tmp_path: Path) -> None:
    call = ToolCallPart("c1", "read_file", {"path": "a.txt"})
    inner = Streams(
        [ThoughtDelta("think "), TextDelta("a"), ThoughtDelta("more"), TextDelta("b"), Finish()],
        [TextDelta("only"), ToolCallReady(call), Finish(StopKind.MAX_TOKENS)],
        [TextDelta("half"), ModelError("upstream 503")],
        [Finish()],
    )
    sink = ScriptSink(tmp_path / "model.jsonl")
    provider = RecordingProvider(inner, sink)
    passed = [await consume(provider) for _ in range(4)]
    assert passed[0] == [
        ThoughtDelta("think "), TextDelta("a"), ThoughtDelta("more"), TextDelta("b"), Finish()
    ]  # fmt: skip
    assert recorded(sink) == [
        {"chunks": ["a", "b"], "thought": "think more"},
        {
            "text": "only",
            "toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}}],
            "stopReason": "max_tokens",
        },
        {"text": "half", "error": {"message": "upstream 503"}},
        {},
    ]
    for line in sink.path.read_bytes().splitlines():  # every line is a valid script line
        msgspec.json.decode(line, type=ScriptLine)


async def test_a_cancelled_stream_is_recorded_as_a_hang_and_replays_as_one(
    tmp_path: Path,
) -> None:
    sink = ScriptSink(tmp_path / "model.jsonl")
    provider = RecordingProvider(Streams([ThoughtDelta("t"), TextDelta("partial")]), sink)
    seen: list[StreamEvent] = []
    with anyio.move_on_after(0.2):
        async for event in provider.stream(REQUEST):
            seen.append(event)
    assert recorded(sink) == [{"text": "partial", "thought": "t", "hang": True}]
    replayed: list[StreamEvent] = []
    with anyio.move_on_after(0.2):
        async for event in ScriptModel(sink.path).stream(REQUEST):
            replayed.append(event)
    assert replayed == seen == [ThoughtDelta("t"), TextDelta("partial")]


def steps() -> list[Json]:
    def send(frame_id: int | None, method: str, params: Json) -> Json:
        frame = {"jsonrpc": "2.0", "method": method, "params": params}
        return {"send": frame if frame_id is None else {**frame, "id": frame_id}}

    def prompt(frame_id: int, text: str) -> Json:
        return send(frame_id, "session/prompt", {"sessionId": "s", "prompt": [
            {"type": "text", "text": text}]})  # fmt: skip

    init = send(1, "initialize", {"protocolVersion": 1})
    return [
        init,
        send(
            2,
            "session/new",
            {"cwd": "{cwd}", "mcpServers": [], "_meta": {"acp_agent": {"sessionId": "s"}}},
        ),
        {"wait": {"response": 2}},
        prompt(3, "read notes.txt please"),
        {"wait": {"response": 3}},
        prompt(4, "then hang"),
        {
            "wait": {
                "update": {"sessionUpdate": "agent_message_chunk", "content": {"text": "Working"}}
            }
        },
        send(None, "session/cancel", {"sessionId": "s"}),
        {"wait": {"response": 4}},
        {"restart": {}},
        init,
        send(2, "session/load", {"sessionId": "s", "cwd": "{cwd}", "mcpServers": []}),
        {"wait": {"response": 2}},
        prompt(3, "a long one"),
        {"wait": {"response": 3}},
    ]


@pytest.mark.subprocess
async def test_a_fixture_recorded_from_a_provider_stream_replays_identically_twice(
    tmp_path: Path,
) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "notes.txt").write_text("remember the milk\n")
    fixture = tmp_path / "recorded"
    write_inputs(fixture, steps(), files=files)
    recording = await record(
        fixture, "python:tests.replay.provider:make", extra_env={"PYTHONPATH": str(REPO)}
    )
    assert recording.ok, "\n".join(result.report() for result in recording.replays)
    lines = [json.loads(line) for line in (fixture / MODEL).read_bytes().splitlines()]
    assert [sorted(line) for line in lines] == [
        ["chunks", "thought", "toolCalls"],  # the prompt names a file: read it
        ["chunks"],  # the summary of the tool result
        ["hang", "text", "thought"],  # cancelled mid-stream
        ["chunks", "stopReason", "thought"],  # after the restart: max_tokens
    ]
    assert lines[1]["chunks"] == ["I read 1 file(s): ", "remember the milk"]

    first, second = recording.replays
    third = await replay(fixture)
    assert third.ok, third.report()
    assert first.files == second.files == third.files
    # the live run differs only where the script format is coarser: thought deltas are joined
    assert [note.name for note in recording.live_differs] == ["frames.jsonl"]
    changed = [
        line[1:]
        for line in recording.live_differs[0].diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert changed and all('"agent_thought_chunk"' in line for line in changed)


def test_the_recording_server_wraps_a_catalog_or_make_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from acp_agent.replay import record_server

    inner = Streams([Finish()])

    class Catalog:
        def provider(self, spec: str | None) -> Streams:
            return inner

    sink = ScriptSink(tmp_path / "model.jsonl")
    monkeypatch.setattr(record_server, "registry", SimpleNamespace(ModelCatalog=Catalog))
    record_server.install(record_server.Wrapping(sink, None))
    first, second = Catalog().provider("x"), Catalog().provider("y")
    assert isinstance(first, RecordingProvider) and first is second and first.inner is inner

    fake_app = SimpleNamespace(make_model=lambda spec: inner)
    monkeypatch.setattr(record_server, "registry", SimpleNamespace())
    monkeypatch.setattr(record_server, "app", fake_app)
    override = Streams([Finish()])
    record_server.install(record_server.Wrapping(sink, override))
    made = fake_app.make_model("script:x")
    assert isinstance(made, RecordingProvider) and made.inner is override

    monkeypatch.setattr(record_server, "app", SimpleNamespace())
    with pytest.raises(record_server.SeamNotFound):
        record_server.install(record_server.Wrapping(sink, None))
