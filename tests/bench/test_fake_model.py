"""The fake model of ``make bench-peers`` (``bench/peers/fake_model.py``) speaks both OpenAI wires.

The shapes checked here are those of OpenAI's API reference:
- Chat Completions streaming (https://platform.openai.com/docs/api-reference/chat-streaming):
  ``data: {chat.completion.chunk}`` events, text in ``choices[0].delta.content``, tool calls in
  ``choices[0].delta.tool_calls`` (``index``, ``id``, ``type: function``, ``function.name`` and
  ``.arguments``), the last chunk with a ``finish_reason`` (``stop`` / ``tool_calls``), an
  optional usage chunk with empty ``choices`` when ``stream_options.include_usage``, then
  ``data: [DONE]``.
- Responses streaming (https://platform.openai.com/docs/api-reference/responses-streaming):
  ``event: <type>`` + ``data: {"type": <type>, "sequence_number": n, ...}``, starting with
  ``response.created``, text as ``response.output_text.delta`` (``item_id``, ``output_index``,
  ``content_index``, ``delta``), a function call as an ``output_item`` of type
  ``function_call`` (``call_id``, ``name``, ``arguments``) with
  ``response.function_call_arguments.delta``/``.done``, ending with ``response.completed``
  whose ``response`` has ``status: completed`` and ``usage``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx

from bench.peers import agents, fake_model
from bench.peers.fake_model import Call, Text, decide, fake_model as serve
from bench.peers.request import analyze

READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}
SHELL_TOOL = {
    "type": "function",
    "name": "exec_command",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
}


def chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


def sse_events(body: bytes) -> list[tuple[str | None, str]]:
    """``(event name or None, data)`` per SSE event (blank-line separated)."""
    events = []
    for block in body.decode().split("\n\n"):
        if not block:
            continue
        name = None
        data = []
        for line in block.split("\n"):
            field, _, value = line.partition(": ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        events.append((name, "\n".join(data)))
    return events


def test_the_answer_follows_the_request() -> None:
    assert decide(chat("hi"), "chat", "/w/n.txt") == Text(("Hello!",))
    streamed = decide(chat("please stream 4"), "chat", "/w/n.txt")
    assert isinstance(streamed, Text)
    assert len(streamed.parts) == 4
    # No delta starts with the text before it (fast-agent would drop it as cumulative).
    assert len(set(streamed.parts)) == 4
    call = decide(chat("Read the file /w/n.txt", tools=[READ_TOOL]), "chat", "/w/n.txt")
    assert call == Call("read_file", json.dumps({"path": "/w/n.txt"}))
    after = chat("Read the file /w/n.txt")
    after["messages"].append({"role": "tool", "tool_call_id": "c", "content": "42"})
    assert decide(after, "chat", "/w/n.txt") == Text(("Done.",))


def test_a_shell_tool_is_used_when_no_reading_tool_is_offered() -> None:
    items: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "input_text", "text": "Read the file"}]}
    ]
    request = {"input": items, "tools": [SHELL_TOOL]}
    assert decide(request, "responses", "/w/n.txt") == Call(
        "exec_command", json.dumps({"cmd": "cat /w/n.txt"})
    )
    items.append({"type": "function_call_output", "call_id": "c", "output": "42"})
    assert decide(request, "responses", "/w/n.txt") == Text(("Done.",))


def test_chat_stream_of_text_and_of_a_tool_call() -> None:
    events = sse_events(fake_model.chat_stream(Text(("a", "b")), usage=True))
    assert events[-1] == (None, "[DONE]")
    chunks = [json.loads(data) for _, data in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    with_choices = [c for c in chunks if c["choices"]]
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in with_choices) == "ab"
    assert with_choices[0]["choices"][0]["delta"]["role"] == "assistant"
    assert with_choices[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 2

    events = sse_events(fake_model.chat_stream(Call("read_file", '{"path":"x"}'), usage=False))
    chunks = [json.loads(data) for _, data in events[:-1]]
    (call,) = chunks[0]["choices"][0]["delta"]["tool_calls"]
    assert call["index"] == 0 and call["type"] == "function" and call["id"]
    assert call["function"] == {"name": "read_file", "arguments": '{"path":"x"}'}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_responses_stream_of_text() -> None:
    events = sse_events(fake_model.responses_stream(Text(("Hel", "lo"))))
    datas = [json.loads(data) for _, data in events]
    assert [name for name, _ in events] == [d["type"] for d in datas]
    assert [d["sequence_number"] for d in datas] == list(range(len(datas)))
    assert datas[0]["type"] == "response.created"
    assert datas[-1]["type"] == "response.completed"
    deltas = [d for d in datas if d["type"] == "response.output_text.delta"]
    assert "".join(d["delta"] for d in deltas) == "Hello"
    assert all({"item_id", "output_index", "content_index"} <= d.keys() for d in deltas)
    done = next(d for d in datas if d["type"] == "response.output_text.done")
    assert done["text"] == "Hello"
    completed = datas[-1]["response"]
    assert completed["status"] == "completed" and completed["usage"]["total_tokens"] == 2
    (message,) = completed["output"]
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["content"][0] == {"type": "output_text", "text": "Hello", "annotations": []}


def test_responses_stream_of_a_function_call() -> None:
    datas = [json.loads(d) for _, d in sse_events(fake_model.responses_stream(Call("shell", "{}")))]
    added = next(d for d in datas if d["type"] == "response.output_item.added")
    assert added["item"]["type"] == "function_call" and added["item"]["arguments"] == ""
    args = next(d for d in datas if d["type"] == "response.function_call_arguments.done")
    assert args["arguments"] == "{}"
    item = next(d for d in datas if d["type"] == "response.output_item.done")["item"]
    assert item["type"] == "function_call" and item["name"] == "shell" and item["call_id"]
    assert item["arguments"] == "{}" and item["status"] == "completed"
    assert datas[-1]["response"]["output"] == [item]


async def test_the_server_answers_each_wire_and_keeps_each_agents_requests(tmp_path: Path) -> None:
    async with serve(str(tmp_path / "note.txt")) as server, httpx.AsyncClient() as http:
        got = await http.post(
            server.base_url("a") + "/chat/completions", json=chat("hi", stream=True)
        )
        assert got.status_code == 200
        assert got.headers["content-type"].startswith("text/event-stream")
        assert "Hello!" in got.text and got.text.endswith("data: [DONE]\n\n")
        body = {"model": "m", "input": "stream 2", "stream": True}
        got = await http.post(server.base_url("b") + "/responses", json=body)
        assert re.findall(r"^event: (\S+)", got.text, re.M)[-1] == "response.completed"
        plain = await http.post(server.base_url("a") + "/chat/completions", json=chat("hi"))
        assert plain.json()["choices"][0]["message"]["content"] == "Hello!"
        assert (await http.get(server.base_url("a") + "/models")).json()["data"] == []
        assert (await http.post(server.base_url("a") + "/nothing", json={})).status_code == 404
        kept = server.model_requests("a")
        assert [r.path for r in kept] == ["/a/v1/chat/completions"] * 2
        assert json.loads(kept[0].body)["messages"][0]["content"] == "hi"
        assert [r.path for r in server.take("b")] == ["/b/v1/responses"]


def test_the_hi_request_is_taken_apart_in_either_wire() -> None:
    tools = [READ_TOOL]
    body = {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]}
    got = analyze(["/a/v1/chat/completions"], [json.dumps({**body, "tools": tools}).encode()])
    assert (got.wire, got.system_bytes, got.tool_count, got.items) == ("chat", 3, 1, 2)
    assert got.tools_bytes == len(json.dumps(tools, separators=(",", ":")))
    second = {"instructions": "ab", "input": [{"role": "developer", "content": "cd"}]}
    got = analyze(["/c/v1/responses"] * 2, [json.dumps(second).encode(), b"{}"])
    assert (got.wire, got.system_bytes, got.requests, got.tool_count) == ("responses", 4, 2, 0)


def test_the_makefile_pins_the_versions_the_harness_reports() -> None:
    # bench/peers/agents.py names the pins in its labels; the Makefile installs them.
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    pins = dict(re.findall(r"^(\w+_VERSION) := (\S+)$", makefile, re.M))
    assert pins["FAST_AGENT_VERSION"] == agents.FAST_AGENT_VERSION
    assert pins["KIMI_CLI_VERSION"] == agents.KIMI_CLI_VERSION
    assert pins["CODEX_ACP_VERSION"] == agents.CODEX_ACP_VERSION
