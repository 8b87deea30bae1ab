"""What the agent wrote and what the client sent, and the checks that run over the whole of it."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.support.acp_schema import AcpSchema, FrameValidationError, JsonObject, default_schema


@dataclass
class Transcript:
    """Every line the agent wrote, verbatim, and every message the client sent, decoded."""

    agent_lines: list[bytes] = field(default_factory=list)
    client_messages: list[JsonObject] = field(default_factory=list)
    _partial: bytearray = field(default_factory=bytearray, repr=False)

    @classmethod
    def of_wire(cls, wire: Mapping[str, Any]) -> Transcript:
        """The ``wire`` of a TypeScript client's summary (``tests/clients/ts_support.mjs``):
        ``client``, the messages it sent; ``agent``, the raw lines the agent wrote."""
        transcript = cls()
        for message in wire["client"]:
            transcript.record_client_message(message)
        for line in wire["agent"]:
            transcript.feed_agent_output(line.encode())
        transcript.end_agent_output()
        return transcript

    def feed_agent_output(self, data: bytes) -> list[bytes]:
        """Record a chunk of the agent's stdout; return the lines it completed."""
        self._partial += data
        lines: list[bytes] = []
        while (end := self._partial.find(b"\n")) >= 0:
            lines.append(bytes(self._partial[: end + 1]))
            del self._partial[: end + 1]
        self.agent_lines.extend(lines)
        return lines

    def end_agent_output(self) -> bytes | None:
        """At EOF: record a last line that has no newline (a framing error) and return it."""
        if not self._partial:
            return None
        tail = bytes(self._partial)
        self._partial.clear()
        self.agent_lines.append(tail)
        return tail

    def record_client_message(self, message: Mapping[str, Any]) -> None:
        self.client_messages.append(dict(message))

    @property
    def agent_frames(self) -> list[JsonObject]:
        """The agent's lines decoded; ``FrameValidationError`` if one is not a JSON object."""
        return [decode_agent_line(line) for line in self.agent_lines]

    def session_updates(self, session_id: str | None = None) -> list[JsonObject]:
        """The ``update`` objects of the agent's ``session/update`` notifications, wire shape."""
        return [
            frame["params"]["update"]
            for frame in self.agent_frames
            if frame.get("method") == "session/update"
            and "id" not in frame
            and (session_id is None or frame["params"].get("sessionId") == session_id)
        ]

    def responses(self) -> list[JsonObject]:
        return [frame for frame in self.agent_frames if "method" not in frame]

    def agent_requests(self) -> list[JsonObject]:
        return [frame for frame in self.agent_frames if "method" in frame and "id" in frame]

    def request_methods(self) -> dict[int | str, str]:
        """Id -> method of each request the client sent."""
        return {
            message["id"]: message["method"]
            for message in self.client_messages
            if _is_call_with_id(message)
        }

    def problems(self, schema: AcpSchema | None = None) -> list[str]:
        """Everything wrong with the agent's output; empty when it is all valid."""
        schema = schema or default_schema()
        methods = self.request_methods()
        sent = Counter(m["id"] for m in self.client_messages if _is_call_with_id(m))
        answered: Counter[int | str] = Counter()
        problems: list[str] = []
        for number, line in enumerate(self.agent_lines, start=1):
            prefix = f"agent stdout line {number}"
            if not line.endswith(b"\n"):
                problems.append(f"{prefix}: not terminated by a newline: {clip(line)}")
            try:
                frame = decode_agent_line(line)
            except FrameValidationError as error:
                problems.append(f"{prefix}: {error}")
                continue
            method: str | None = None
            if "method" not in frame and isinstance(frame.get("id"), int | str):
                request_id = frame["id"]
                method = methods.get(request_id)
                answered[request_id] += 1
                if method is None:
                    problems.append(f"{prefix}: response to id {request_id!r}, never requested")
                elif answered[request_id] > sent[request_id]:
                    problems.append(f"{prefix}: second response to id {request_id!r} ({method})")
            if problem := schema.frame_problem(frame, method):
                problems.append(f"{prefix}: {problem}\n    {clip(line)}")
        return problems

    def validate(self, schema: AcpSchema | None = None) -> None:
        """Raise ``FrameValidationError`` listing every problem ``problems`` finds."""
        problems = self.problems(schema)
        if problems:
            shown = "\n".join(f"- {p}" for p in problems[:20])
            more = f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""
            raise FrameValidationError(
                f"{len(problems)} problem(s) in what the agent wrote:\n{shown}{more}"
            )


def decode_agent_line(line: bytes) -> JsonObject:
    try:
        frame = json.loads(line)
    except ValueError:
        raise FrameValidationError(f"agent wrote a line that is not JSON: {clip(line)}") from None
    if not isinstance(frame, dict):
        raise FrameValidationError(f"agent wrote JSON that is not an object: {clip(line)}")
    return frame


def _is_call_with_id(message: Mapping[str, Any]) -> bool:
    return "method" in message and isinstance(message.get("id"), int | str)


def clip(data: bytes | bytearray, limit: int = 300) -> str:
    text = repr(bytes(data[:limit]))
    return text if len(data) <= limit else f"{text}... ({len(data)} bytes)"


def tail(data: bytes | bytearray, limit: int = 2000) -> str:
    text = bytes(data[-limit:]).decode("utf-8", "replace")
    return text if text.strip() else "(empty)"


def without_seq(update: JsonObject) -> JsonObject:
    """``update`` without its ``_meta.acp_agent.seq`` (docs/contract.md §13), and without a
    ``_meta`` left empty by that: for comparing what is sent apart from its position."""
    meta = update.get("_meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("acp_agent"), dict):
        return update
    ours = {k: v for k, v in meta["acp_agent"].items() if k != "seq"}
    rest = {k: v for k, v in meta.items() if k != "acp_agent"}
    if ours:
        rest["acp_agent"] = ours
    trimmed = {k: v for k, v in update.items() if k != "_meta"}
    return {**trimmed, "_meta": rest} if rest else trimmed
