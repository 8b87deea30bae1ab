"""The script model: a deterministic provider for tests, demos and scripts.

The format is docs/contract.md §5.

``PATH`` is a JSONL file; each line answers one model request (one step), consumed in order
across the whole process, whatever the session. The file is read once, at the first request,
and every line is validated then, so a typo fails with its line number instead of half-way
through a session. When the lines run out, the request fails with a clear ``ModelError``.
Beyond docs/contract.md §5, a line may carry ``"usage": {"inputTokens", "outputTokens",
"reasoningTokens"?, "cost"?}``: reported
(``usage_update``) after the tool calls, as a provider reports its usage.

If ``ACP_AGENT_SCRIPT_REQUESTS`` names a file, every request is appended to it as one JSON
line before it is answered (written with ``O_APPEND`` so concurrent sessions never interleave
within a line).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import ClassVar, Literal

import anyio
import msgspec

from acp_agent.journal.events import ToolCallPart
from acp_agent.model.base import (
    Capabilities,
    Finish,
    ModelError,
    ModelMessage,
    ModelRequest,
    StopKind,
    StreamEvent,
    SystemTurn,
    TextDelta,
    ThoughtDelta,
    ToolCallReady,
    Usage,
)


class ScriptToolCall(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: str
    name: str
    arguments: dict[str, object] = msgspec.field(default_factory=dict)


class ScriptError(msgspec.Struct, frozen=True):
    message: str


class ScriptUsage(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", omit_defaults=True
):
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int | None = None
    cost: float | None = None
    """Dollars, as a provider that reports cost (OpenRouter's ``usage.cost``) would."""


class ScriptLine(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel", omit_defaults=True
):
    text: str | None = None
    chunks: list[str] | None = None
    thought: str | None = None
    tool_calls: list[ScriptToolCall] | None = None
    stop_reason: Literal["end_turn", "max_tokens"] = "end_turn"
    delay_ms: int | None = None
    hang: bool = False
    error: ScriptError | None = None
    usage: ScriptUsage | None = None


class LoggedRequest(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    session_id: str
    turn: int
    step: int
    messages: list[SystemTurn | ModelMessage]
    """``messages[0]`` is the system message when the request has one."""
    tools: list[str]
    reasoning_effort: str | None = None


_LINE = msgspec.json.Decoder(ScriptLine)
_ENCODER = msgspec.json.Encoder()


def load_script(path: Path) -> list[ScriptLine]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"script model: cannot read {path}: {exc.strerror}") from exc
    lines: list[ScriptLine] = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            lines.append(_LINE.decode(line))
        except msgspec.DecodeError as exc:  # ValidationError included
            raise ModelError(f"script model: {path}:{number}: {exc}") from exc
    return lines


class ScriptModel:
    """One instance per process: the line cursor is shared by every session."""

    name = "script"
    capabilities: ClassVar[Capabilities] = Capabilities(writes_titles=False, selectable=False)

    def __init__(self, path: Path, request_log: Path | None = None) -> None:
        self.path = path
        self.request_log = request_log
        self._lines: list[ScriptLine] | None = None
        self._next = 0

    @classmethod
    def from_lines(cls, lines: list[ScriptLine], request_log: Path | None = None) -> ScriptModel:
        """An in-memory script (tests and embedders); same semantics as the file."""
        model = cls(Path("<memory>"), request_log)
        model._lines = list(lines)
        return model

    def _take(self) -> ScriptLine:
        if self._lines is None:
            self._lines = load_script(self.path)
        if self._next >= len(self._lines):
            raise ModelError(
                f"script model exhausted: {self.path} has {len(self._lines)} answers "
                f"and request {self._next + 1} found none"
            )
        line = self._lines[self._next]
        self._next += 1
        return line

    def _log(self, request: ModelRequest) -> None:
        if self.request_log is None:
            return
        messages: list[SystemTurn | ModelMessage] = [SystemTurn(request.system)]
        messages = [*messages, *request.messages] if request.system else [*request.messages]
        tools = [tool.name for tool in request.tools]
        logged = LoggedRequest(
            request.session_id,
            request.turn,
            request.step,
            messages,
            tools,
            request.reasoning_effort,
        )
        fd = os.open(self.request_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, _ENCODER.encode(logged) + b"\n")
        finally:
            os.close(fd)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self._log(request)
        line = self._take()
        delay = (line.delay_ms or 0) / 1000
        if line.thought is not None:
            yield ThoughtDelta(line.thought)
        for chunk in _text_chunks(line):
            if delay:
                await anyio.sleep(delay)
            yield TextDelta(chunk)
        if line.hang:
            await anyio.sleep_forever()
        if line.error is not None:
            raise ModelError(line.error.message)
        for call in line.tool_calls or ():
            yield ToolCallReady(ToolCallPart(call.id, call.name, call.arguments))
        if line.usage is not None:
            usage = line.usage
            yield Usage(
                usage.input_tokens, usage.output_tokens, usage.reasoning_tokens, cost=usage.cost
            )
        yield Finish(StopKind(line.stop_reason))


def _text_chunks(line: ScriptLine) -> list[str]:
    chunks = list(line.chunks or ())
    if line.text is not None:
        chunks.insert(0, line.text)
    return chunks
