"""The provider conformance suite: every ``ModelProvider`` behaves the same on the wire.

Each scenario is written once: what the model is asked to do (a script line per request for
the script model, a recorded HTTP response per request for the OpenAI-compatible provider,
served byte for byte by a real HTTP server on 127.0.0.1), and what must follow — the ACP
``session/update``s of the turn, the prompt's answer, the journal, and what the model saw in
each request. Both implementations run through the real ACP server (in-process, journal on
disk) and must produce exactly that. Streamed chunks are compared merged (the recordings split
text where a real stream would; the script model splits where its line says).

Scenarios: text, reasoning, parallel tool calls, usage, a 429 then success, a mid-stream
disconnect, and a slow stream cancelled by ``session/cancel``.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.model.registry import ModelCatalog
from acp_agent.model.window import DEFAULT_CONTEXT_WINDOW
from tests.integration.support import check_journal, read_jsonl
from tests.model.harness import Frame, InProcessAgent, in_process_agent
from tests.model.loopback import LoopbackServer, Received, Reply, loopback, rate_limited
from tests.support.acp_schema import AcpSchema

SID = "conformance"
KEY = "test-key-5f0c2d9e8b7a"
MODEL = "gpt-test"
TIMES = "\N{MULTIPLICATION SIGN}"  # two UTF-8 bytes: the recordings' streams cut through them
SIX_BY_SEVEN = f"6{TIMES}7"

Row = tuple[Any, ...]


class Containing(str):
    """Equal to any string that contains it (tool results quote file bodies their own way)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and str(self) in other

    __hash__ = str.__hash__


@dataclass(frozen=True)
class Scenario:
    name: str
    script: list[dict[str, Any]]
    replies: list[Reply]
    updates: list[Row]
    answer: str
    journal: list[Row]
    seen: list[list[Row]]
    prompt: str = "Say hello"
    context: str | None = None
    files: dict[str, str] = field(default_factory=dict)
    cancel: bool = False


def turn(*middle: Row, end: str = "completed", prompt: str = "Say hello") -> list[Row]:
    return [
        ("turn/start",),
        ("user/message", "user", prompt),
        *middle,
        ("turn/end", end),
    ]


def step(n: int, *events: Row) -> list[Row]:
    return [("step/start", n), *events, ("step/end", n)]


HELLO_TURN = turn(*step(1, ("assistant/message", (("text", "Hello, world!"),))))

SCENARIOS = [
    Scenario(
        "text",
        script=[{"chunks": ["Hello", ", world!"]}],
        replies=[Reply("text.sse")],
        context="Prefer short answers.",
        updates=[("user", "Prefer short answers.", "client"), ("text", "Hello, world!")],
        answer="end_turn",
        journal=[("user/message", "client", "Prefer short answers."), *HELLO_TURN],
        seen=[[("user", "Prefer short answers."), ("user", "Say hello")]],
    ),
    Scenario(
        "reasoning",
        script=[
            {
                "thought": f"The user asks for {SIX_BY_SEVEN}.",
                "chunks": ["6", f"{TIMES}7 = 42."],
                "usage": {"inputTokens": 12, "outputTokens": 30, "reasoningTokens": 22},
            }
        ],
        replies=[Reply("reasoning.sse")],
        prompt=f"What is {SIX_BY_SEVEN}?",
        updates=[
            ("thought", f"The user asks for {SIX_BY_SEVEN}."),
            ("text", f"{SIX_BY_SEVEN} = 42."),
            ("usage", 20, DEFAULT_CONTEXT_WINDOW),  # 12 in + 30 out - 22 of reasoning
        ],
        answer="end_turn",
        journal=turn(
            *step(
                1,
                (
                    "assistant/message",
                    (
                        ("thought", f"The user asks for {SIX_BY_SEVEN}."),
                        ("text", f"{SIX_BY_SEVEN} = 42."),
                    ),
                ),
            ),
            prompt=f"What is {SIX_BY_SEVEN}?",
        ),
        seen=[[("user", f"What is {SIX_BY_SEVEN}?")]],
    ),
    Scenario(
        "parallel-tool-calls",
        script=[
            {
                "toolCalls": [
                    {"id": "call_a", "name": "read_file", "arguments": {"path": "a.txt"}},
                    {"id": "call_b", "name": "read_file", "arguments": {"path": "b.txt"}},
                ]
            },
            {"chunks": ["a.txt says alpha;", " b.txt says beta."]},
        ],
        replies=[Reply("tools-1.sse"), Reply("tools-2.sse")],
        prompt="Read a.txt and b.txt",
        files={"a.txt": "alpha\n", "b.txt": "beta\n"},
        updates=[
            ("tool_call", "call_a"),
            ("tool_call", "call_b"),
            ("tool_call_update", "call_a", "in_progress"),
            ("tool_call_update", "call_a", "completed"),
            ("tool_call_update", "call_b", "in_progress"),
            ("tool_call_update", "call_b", "completed"),
            ("text", "a.txt says alpha; b.txt says beta."),
        ],
        answer="end_turn",
        journal=turn(
            *step(
                1,
                (
                    "assistant/message",
                    (("tool-call", "call_a", "read_file"), ("tool-call", "call_b", "read_file")),
                ),
                ("tool/call", "call_a", "read_file", {"path": "a.txt"}),
                ("tool/call", "call_b", "read_file", {"path": "b.txt"}),
                ("tool/result", "call_a", False),
                ("tool/result", "call_b", False),
            ),
            *step(2, ("assistant/message", (("text", "a.txt says alpha; b.txt says beta."),))),
            prompt="Read a.txt and b.txt",
        ),
        seen=[
            [("user", "Read a.txt and b.txt")],
            [
                ("user", "Read a.txt and b.txt"),
                ("assistant", "", ("call_a", "call_b")),
                ("tool", "call_a", Containing("alpha")),
                ("tool", "call_b", Containing("beta")),
            ],
        ],
    ),
    Scenario(
        "usage",
        script=[{"text": "Short answer.", "usage": {"inputTokens": 1234, "outputTokens": 56}}],
        replies=[Reply("usage.sse")],
        updates=[("text", "Short answer."), ("usage", 1290, DEFAULT_CONTEXT_WINDOW)],
        answer="end_turn",
        journal=turn(*step(1, ("assistant/message", (("text", "Short answer."),)))),
        seen=[[("user", "Say hello")]],
    ),
    Scenario(
        "rate-limited-then-success",
        script=[{"chunks": ["Hello", ", world!"]}],
        replies=[rate_limited(retry_after_ms=20), Reply("text.sse")],
        updates=[("text", "Hello, world!")],
        answer="end_turn",
        journal=HELLO_TURN,
        seen=[[("user", "Say hello")]],
    ),
    Scenario(
        "mid-stream-disconnect",
        script=[{"chunks": ["Partial ans"], "error": {"message": "connection lost"}}],
        replies=[Reply("disconnect.sse", cut=True)],
        updates=[("text", "Partial ans")],
        answer="error -32603",
        journal=turn(
            ("step/start", 1),
            ("assistant/message", (("text", "Partial ans"),)),
            ("agent/error",),
            ("step/end", 1),
            end="error",
        ),
        seen=[[("user", "Say hello")]],
    ),
    Scenario(
        "slow-stream-cancelled",
        script=[{"chunks": ["Thinking slowly"], "hang": True}],
        replies=[Reply("slow.sse", hang=True)],
        cancel=True,
        updates=[("text", "Thinking slowly")],
        answer="cancelled",
        journal=turn(
            *step(1, ("assistant/message", (("text", "Thinking slowly"),))), end="cancelled"
        ),
        seen=[[("user", "Say hello")]],
    ),
]


# -- the two implementations ------------------------------------------------------------------


@dataclass
class Run:
    catalog: ModelCatalog
    seen: Callable[[], list[list[Row]]]
    server: LoopbackServer | None = None


Backend = Callable[[Scenario, Path, pytest.MonkeyPatch], Any]


@asynccontextmanager
async def script_backend(
    scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Run]:
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in scenario.script), "utf-8")
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("ACP_AGENT_SCRIPT_REQUESTS", str(log))

    def seen() -> list[list[Row]]:
        return [[script_message(m) for m in r["messages"]] for r in read_jsonl(log)]

    yield Run(ModelCatalog(f"script:{script}"), seen)


@asynccontextmanager
async def http_backend(
    scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Run]:
    async with loopback(*scenario.replies) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}

        def seen() -> list[list[Row]]:
            answered = [
                r
                for r, reply in zip(server.requests, server.served, strict=False)
                if reply.status == 200
            ]
            return [[http_message(m) for m in r.json()["messages"]] for r in answered]

        yield Run(ModelCatalog(f"openai:{MODEL}", {}, env), seen, server)


BACKENDS = {"script": script_backend, "openai-compatible": http_backend}


def script_message(message: dict[str, Any]) -> Row:
    def text(blocks: list[dict[str, Any]]) -> str:
        return "".join(b.get("text", "") for b in blocks)

    match message["role"]:
        case "system":
            return system_row(message["content"])
        case "user":
            return ("user", text(message["content"]))
        case "assistant":
            parts = message["content"]
            calls = tuple(p["id"] for p in parts if p["type"] == "tool-call")
            return ("assistant", text([p for p in parts if p["type"] == "text"]), calls)
        case _:
            return ("tool", message["callId"], text(message["content"]))


def system_row(content: str) -> Row:
    """The system message: one string, naming the session's working directory (§8)."""
    assert isinstance(content, str) and re.search(
        r"^Working directory: /\S+/workspace$", content, re.M
    )
    return ("system",)


def http_message(message: dict[str, Any]) -> Row:
    match message["role"]:
        case "system":
            return system_row(message["content"])
        case "user":
            return ("user", message["content"])
        case "assistant":
            calls = tuple(call["id"] for call in message.get("tool_calls", []))
            return ("assistant", message["content"] or "", calls)
        case _:
            return ("tool", message["tool_call_id"], message["content"])


# -- driving a scenario -------------------------------------------------------------------------


@dataclass
class Outcome:
    updates: list[Frame]
    answer: Frame
    frames: list[Frame]


async def play(scenario: Scenario, run: Run, tmp_path: Path) -> Outcome:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    for name, body in scenario.files.items():
        (workspace / name).write_text(body, "utf-8")
    async with in_process_agent(run.catalog, tmp_path / "state") as agent:
        await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = {"cwd": str(workspace), "mcpServers": [], "_meta": {"acp_agent": {"sessionId": SID}}}
        assert "result" in await agent.request("session/new", new)
        if scenario.context is not None:
            inject = {"sessionId": SID, "content": scenario.context}
            assert "result" in await agent.request("_acp_agent/inject", inject)
        prompt = {"sessionId": SID, "prompt": [{"type": "text", "text": scenario.prompt}]}
        prompt_id = await agent.start("session/prompt", prompt)
        if scenario.cancel:
            await cancel_after_first_delta(agent, run)
        answer = await agent.response(prompt_id)
        updates = agent.updates(SID)
    return Outcome(updates, answer, agent.frames)


async def cancel_after_first_delta(agent: InProcessAgent, run: Run) -> None:
    await agent.wait_for(
        lambda: any(u["sessionUpdate"] == "agent_message_chunk" for u in agent.updates(SID)),
        "the first delta",
    )
    await agent.notify("session/cancel", {"sessionId": SID})
    if run.server is not None:  # the HTTP stream is closed at once, not at shutdown
        with anyio.fail_after(5):
            await run.server.disconnected.wait()


def normalized_updates(updates: list[Frame]) -> list[Row]:
    rows: list[Row] = []
    for update in updates:
        kind = update["sessionUpdate"]
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            label = "text" if kind == "agent_message_chunk" else "thought"
            if rows and rows[-1][0] == label:
                rows[-1] = (label, rows[-1][1] + update["content"]["text"])
            else:
                rows.append((label, update["content"]["text"]))
        elif kind == "user_message_chunk":
            source = update["_meta"]["acp_agent"]["source"]["kind"]
            rows.append(("user", update["content"]["text"], source))
        elif kind == "tool_call":
            rows.append(("tool_call", update["toolCallId"]))
        elif kind == "tool_call_update" and "status" in update:
            rows.append(("tool_call_update", update["toolCallId"], update["status"]))
        elif kind == "usage_update":
            rows.append(("usage", update["used"], update["size"]))
    return rows


def normalized_answer(answer: Frame) -> str:
    if "error" in answer:
        return f"error {answer['error']['code']}"
    return str(answer["result"]["stopReason"])


def normalized_event(event: Frame) -> Row:
    kind, data = event["type"], event["data"]
    match kind:
        case "user/message":
            text = "".join(b.get("text", "") for b in data["content"])
            return (kind, data["source"]["kind"], text)
        case "turn/end":
            return (kind, data["reason"]["kind"])
        case "step/start" | "step/end":
            return (kind, data["step"])
        case "assistant/message":
            return (kind, tuple(part_row(p) for p in data["content"]))
        case "tool/call":
            return (kind, data["callId"], data["name"], data["arguments"])
        case "tool/result":
            return (kind, data["callId"], data["isError"])
        case _:
            return (kind,)


def part_row(part: Frame) -> Row:
    if part["type"] == "tool-call":
        return ("tool-call", part["id"], part["name"])
    return (part["type"], part["text"])


# -- the suite ----------------------------------------------------------------------------------


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_provider_conformance(
    scenario: Scenario,
    backend: Backend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    acp_schema: AcpSchema,
) -> None:
    async with backend(scenario, tmp_path, monkeypatch) as run:
        outcome = await play(scenario, run, tmp_path)
        seen = run.seen()
        server = run.server
    assert normalized_updates(outcome.updates) == scenario.updates
    assert normalized_answer(outcome.answer) == scenario.answer
    journal = check_journal(tmp_path / "state", SID, tmp_path / "workspace")
    assert [normalized_event(e) for e in journal.events] == scenario.journal
    assert seen == [[("system",), *request] for request in scenario.seen]
    check_frames(outcome.frames, acp_schema)
    if server is not None:
        check_http(server, scenario, tmp_path)


def check_frames(frames: list[Frame], schema: AcpSchema) -> None:
    methods = {1: "initialize", 2: "session/new"}
    for frame in frames:
        method = methods.get(frame.get("id", 0)) if "method" not in frame else None
        schema.validate_agent_frame(frame, method)


def check_http(server: LoopbackServer, scenario: Scenario, tmp_path: Path) -> None:
    """Every request streams, names the model and the tools, and carries the key only in
    its ``Authorization`` header; the key is nowhere in the journal."""
    assert len(server.requests) == len(scenario.replies)
    for received in server.requests:
        check_request(received)
    journal = (tmp_path / "state" / "sessions" / SID / "journal.jsonl").read_bytes()
    assert KEY.encode() not in journal


def check_request(received: Received) -> None:
    assert (received.method, received.path) == ("POST", "/v1/chat/completions")
    assert received.headers["authorization"] == f"Bearer {KEY}"
    assert received.raw.count(KEY.encode()) == 1
    body = received.json()
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    names = [tool["function"]["name"] for tool in body["tools"]]
    assert "read_file" in names
    for tool in body["tools"]:
        assert tool["type"] == "function"
        assert tool["function"]["parameters"]["type"] == "object"
