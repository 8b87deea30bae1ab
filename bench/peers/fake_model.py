"""A fake OpenAI-compatible model on 127.0.0.1 that answers at once, in both wire formats.

Each agent gets its own path prefix (``/<agent>/v1``), so one server tells the agents apart and
keeps every request body per agent (``requests[agent]``). It answers:

- ``POST .../chat/completions``: a Chat Completions answer, streamed as ``chat.completion.chunk``
  events (``data: {...}`` lines, then ``data: [DONE]``) when ``stream`` is true, else one
  ``chat.completion`` object (https://platform.openai.com/docs/api-reference/chat-streaming).
- ``POST .../responses``: a Responses API answer, streamed as typed events (``event: <type>`` and
  ``data: {...}``: ``response.created``, ``response.output_item.added``,
  ``response.output_text.delta``, ``response.function_call_arguments.delta``,
  ``response.output_item.done``, ``response.completed``) when ``stream`` is true, else one
  ``response`` object (https://platform.openai.com/docs/api-reference/responses-streaming).
- ``GET .../models``: an empty model list; anything else: 404.

What the answer says depends only on the request (``decide``): after a tool result, a short
text; for a last user message containing ``stream N``, N text deltas (``stream_parts``); for one
containing ``READ_MARKER``, one call of the agent's file-reading (or else shell) tool, chosen from
the tools the request offers, with arguments built from that tool's schema; else ``Hello!``.
Every body is sent in one write; connections are kept alive. The server runs on the benchmark's
own event loop, so it costs every agent the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from bench.loopback import parse_head

Json = Any
TEXT = "Hello!"
DONE_TEXT = "Done."
READ_MARKER = "Read the file"
STREAM_RE = re.compile(r"\bstream (\d+)\b")
MODEL = "gpt-test"
CREATED = 1767225600

READ_TOOLS = ("read_file", "readfile", "read_text_file", "read", "view")
SHELL_TOOLS = ("shell", "exec_command", "shell_command", "execute", "bash", "run_command")


@dataclass(frozen=True)
class Text:
    parts: tuple[str, ...]


@dataclass(frozen=True)
class Call:
    name: str
    arguments: str
    call_id: str = "call_bench_1"


Answer = Text | Call


@dataclass
class Request:
    agent: str
    method: str
    path: str
    body: bytes
    received: float
    """``perf_counter()`` when the body's last byte was read."""

    def json(self) -> Json:
        return json.loads(self.body) if self.body else None


# -- what to answer --------------------------------------------------------------------------


def decide(request: Json, wire: str, read_path: str) -> Answer:
    """The answer to a Chat Completions (``wire="chat"``) or Responses (``"responses"``) body."""
    items = request.get("messages" if wire == "chat" else "input") or []
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if items and _is_tool_result(items[-1]):
        return Text((DONE_TEXT,))
    text = _last_user_text(items)
    if (match := STREAM_RE.search(text)) is not None:
        return Text(stream_parts(int(match.group(1))))
    if READ_MARKER in text:
        call = tool_call(_tools(request, wire), read_path)
        if call is not None:
            return call
    return Text((TEXT,))


def stream_parts(count: int) -> tuple[str, ...]:
    """``count`` deltas, each different: fast-agent's generic provider takes a delta that starts
    with the whole text so far for a cumulative one (``_extract_incremental_delta`` in
    ``fast_agent/llm/provider/openai/llm_openai.py``), so repeating one delta would lose text."""
    return tuple(f"w{n} " for n in range(count))


def _is_tool_result(item: Json) -> bool:
    if not isinstance(item, dict):
        return False
    return item.get("role") == "tool" or str(item.get("type", "")).endswith("call_output")


def _last_user_text(items: list[Json]) -> str:
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role") == "user":
            return _text_of(item.get("content"))
    return ""


def _text_of(content: Json) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _tools(request: Json, wire: str) -> list[tuple[str, Json]]:
    """``(name, parameters schema)`` of each function tool offered, in either wire shape."""
    found = []
    for tool in request.get("tools") or []:
        spec = tool.get("function", tool) if wire == "chat" else tool
        if isinstance(spec, dict) and "name" in spec:
            found.append((str(spec["name"]), spec.get("parameters") or {}))
    return found


def tool_call(tools: list[tuple[str, Json]], path: str) -> Call | None:
    """A call that reads ``path``: the first reading tool offered, else the first shell tool."""
    by_name = {name.lower(): (name, schema) for name, schema in tools}
    for wanted, build in ((READ_TOOLS, _read_args), (SHELL_TOOLS, _shell_args)):
        for candidate in wanted:
            if candidate in by_name:
                name, schema = by_name[candidate]
                args = build(schema, path)
                if args is not None:
                    return Call(name, json.dumps(args))
    return None


def _properties(schema: Json) -> dict[str, Json]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def _read_args(schema: Json, path: str) -> dict[str, Json] | None:
    for key in _properties(schema):
        if "path" in key.lower() or key.lower() in ("file", "filename"):
            return {key: path}
    return None


def _shell_args(schema: Json, path: str) -> dict[str, Json] | None:
    props = _properties(schema)
    for key in ("command", "cmd", "script"):
        if key in props:
            kind = props[key].get("type") if isinstance(props[key], dict) else None
            return {key: ["cat", path] if kind == "array" else f"cat {path}"}
    return None


# -- Chat Completions ------------------------------------------------------------------------


def _chat_chunk(delta: Json, finish: str | None) -> Json:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


USAGE_CHAT = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


def chat_events(answer: Answer, usage: bool) -> list[Json]:
    """The ``chat.completion.chunk`` objects of one streamed answer (without ``[DONE]``)."""
    events: list[Json] = []
    if isinstance(answer, Text):
        for index, part in enumerate(answer.parts):
            delta = {"role": "assistant", "content": part} if index == 0 else {"content": part}
            events.append(_chat_chunk(delta, None))
        events.append(_chat_chunk({}, "stop"))
    else:
        function = {"name": answer.name, "arguments": answer.arguments}
        call = {"index": 0, "id": answer.call_id, "type": "function", "function": function}
        events.append(_chat_chunk({"role": "assistant", "tool_calls": [call]}, None))
        events.append(_chat_chunk({}, "tool_calls"))
    if usage:
        events.append({**_chat_chunk({}, None), "choices": [], "usage": USAGE_CHAT})
    return events


def chat_stream(answer: Answer, usage: bool) -> bytes:
    lines = [b"data: " + _dump(event) + b"\n\n" for event in chat_events(answer, usage)]
    return b"".join(lines) + b"data: [DONE]\n\n"


def chat_object(answer: Answer) -> Json:
    if isinstance(answer, Text):
        message: Json = {"role": "assistant", "content": "".join(answer.parts)}
        finish = "stop"
    else:
        function = {"name": answer.name, "arguments": answer.arguments}
        call = {"id": answer.call_id, "type": "function", "function": function}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": CREATED,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE_CHAT,
    }


# -- Responses API ---------------------------------------------------------------------------

USAGE_RESPONSES = {
    "input_tokens": 1,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 1,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 2,
}


def _response(status: str, output: list[Json]) -> Json:
    return {
        "id": "resp_bench",
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "model": MODEL,
        "output": output,
        "usage": USAGE_RESPONSES if status == "completed" else None,
    }


def _output_item(answer: Answer, done: bool) -> Json:
    status = "completed" if done else "in_progress"
    if isinstance(answer, Call):
        return {
            "type": "function_call",
            "id": "fc_bench",
            "call_id": answer.call_id,
            "name": answer.name,
            "arguments": answer.arguments if done else "",
            "status": status,
        }
    content = [{"type": "output_text", "text": "".join(answer.parts), "annotations": []}]
    return {
        "type": "message",
        "id": "msg_bench",
        "role": "assistant",
        "status": status,
        "content": content if done else [],
    }


def responses_events(answer: Answer) -> list[Json]:
    """The typed events of one streamed Responses answer, ``sequence_number`` in order."""
    item_id = "fc_bench" if isinstance(answer, Call) else "msg_bench"
    where = {"item_id": item_id, "output_index": 0}
    events: list[Json] = [
        {"type": "response.created", "response": _response("in_progress", [])},
        {"type": "response.in_progress", "response": _response("in_progress", [])},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": _output_item(answer, False),
        },
    ]
    if isinstance(answer, Text):
        part = {"type": "output_text", "text": "", "annotations": []}
        text = "".join(answer.parts)
        events.append(
            {"type": "response.content_part.added", **where, "content_index": 0, "part": part}
        )
        events += [
            {"type": "response.output_text.delta", **where, "content_index": 0, "delta": delta}
            for delta in answer.parts
        ]
        events.append(
            {"type": "response.output_text.done", **where, "content_index": 0, "text": text}
        )
        done_part = {**part, "text": text}
        events.append(
            {"type": "response.content_part.done", **where, "content_index": 0, "part": done_part}
        )
    else:
        events.append(
            {"type": "response.function_call_arguments.delta", **where, "delta": answer.arguments}
        )
        events.append(
            {
                "type": "response.function_call_arguments.done",
                **where,
                "arguments": answer.arguments,
            }
        )
    final = _output_item(answer, True)
    events.append({"type": "response.output_item.done", "output_index": 0, "item": final})
    events.append({"type": "response.completed", "response": _response("completed", [final])})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def responses_stream(answer: Answer) -> bytes:
    return b"".join(
        b"event: " + event["type"].encode() + b"\ndata: " + _dump(event) + b"\n\n"
        for event in responses_events(answer)
    )


def responses_object(answer: Answer) -> Json:
    return _response("completed", [_output_item(answer, True)])


# -- HTTP ------------------------------------------------------------------------------------


def _dump(value: Json) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _chunked(content_type: bytes, body: bytes) -> bytes:
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: " + content_type + b"\r\n"
        b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    return head + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"


def _plain(status: bytes, body: bytes) -> bytes:
    head = b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n"
    return head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


SSE = b"text/event-stream; charset=utf-8"
MODEL_PATHS = ("/chat/completions", "/responses")


def reply(path: str, method: str, body: Json, read_path: str) -> bytes:
    """The whole HTTP response to one request."""
    if method == "GET" and path.endswith("/models"):
        return _plain(b"200 OK", _dump({"object": "list", "data": []}))
    if method != "POST" or not isinstance(body, dict):
        return _plain(b"404 Not Found", b"{}")
    stream = bool(body.get("stream"))
    if path.endswith("/chat/completions"):
        answer = decide(body, "chat", read_path)
        if not stream:
            return _plain(b"200 OK", _dump(chat_object(answer)))
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return _chunked(SSE, chat_stream(answer, usage))
    if path.endswith("/responses"):
        answer = decide(body, "responses", read_path)
        if not stream:
            return _plain(b"200 OK", _dump(responses_object(answer)))
        return _chunked(SSE, responses_stream(answer))
    return _plain(b"404 Not Found", b"{}")


@dataclass
class FakeModel:
    read_path: str
    """The file a tool call reads (an absolute path)."""
    port: int = 0
    requests: dict[str, list[Request]] = field(default_factory=dict)

    def base_url(self, agent: str) -> str:
        return f"http://127.0.0.1:{self.port}/{agent}/v1"

    def take(self, agent: str) -> list[Request]:
        """The requests ``agent`` sent so far; forgets them."""
        return self.requests.pop(agent, [])

    def model_requests(self, agent: str) -> list[Request]:
        """The model calls among ``take(agent)`` (Chat Completions or Responses)."""
        return [r for r in self.take(agent) if r.path.endswith(MODEL_PATHS)]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, path, headers = parse_head(head)
                body = await _read_body(reader, headers)
                agent = path.lstrip("/").split("/", 1)[0]
                self.requests.setdefault(agent, []).append(
                    Request(agent, method, path, body, time.perf_counter())
                )
                try:
                    decoded = json.loads(body) if body else None
                except ValueError:
                    decoded = None
                writer.write(reply(path.split("?", 1)[0], method, decoded, self.read_path))
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            return
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        await reader.readuntil(b"\r\n")
        return b"".join(parts)
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    if headers.get("content-encoding", "").lower() == "zstd":
        raise ConnectionError("zstd request bodies are not supported")
    return body


@contextlib.asynccontextmanager
async def fake_model(read_path: str) -> AsyncIterator[FakeModel]:
    server = FakeModel(read_path)
    listener = await asyncio.start_server(server._handle, "127.0.0.1", 0, limit=1 << 24)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listener.close()
        await listener.wait_closed()


def sse_data(body: bytes) -> Iterable[Json]:
    """The JSON payloads of an SSE body's ``data:`` lines (``[DONE]`` left out); for tests."""
    for line in body.decode().split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            yield json.loads(line[len("data: ") :])
