"""DeepSeek's thinking mode with tools, end to end: the real ACP agent in-process, the real
provider, and a fake DeepSeek (``fake_deepseek.py``) that refuses, as DeepSeek does, any request
in which a tool-call turn comes back without its ``reasoning_content``.

Sources: https://api-docs.deepseek.com/guides/thinking_mode ("Tool Calls": the
reasoning_content of turns that called tools "must be fully passed back to the API in all
subsequent requests", else HTTP 400; the OpenAI-format switches ``thinking: {type}`` and
``reasoning_effort``) and https://api-docs.deepseek.com/api/create-chat-completion (the
request body, ``max_tokens``). Model names: https://api-docs.deepseek.com/quick_start/pricing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_agent.content import TextContent
from acp_agent.journal.events import SourceKind, ThoughtPart, ToolCallPart, source
from acp_agent.model.base import (
    AssistantTurn,
    ModelError,
    ModelMessage,
    ModelRequest,
    ToolTurn,
    UserTurn,
)
from acp_agent.model.config import parse_providers
from acp_agent.model.registry import ModelCatalog
from tests.model.fake_deepseek import deepseek_stream, fake_deepseek, lacks_reasoning
from tests.model.harness import in_process_agent

SID = "deepseek-thinking"
KEY = "sk-deepseek-test-77"
MODEL = "deepseek-flash"
PROMPT = "Read a.txt, then b.txt, and say what they hold."


def scripted(tmp_path: Path) -> list[Any]:
    return [
        deepseek_stream(
            tmp_path / "1.sse",
            ["The user wants two files. ", "First a.txt."],
            call=("call_00_a", "read_file", {"path": "a.txt"}),
        ),
        deepseek_stream(
            tmp_path / "2.sse",
            ["a.txt says alpha. ", "Now b.txt."],
            call=("call_00_b", "read_file", {"path": "b.txt"}),
        ),
        deepseek_stream(tmp_path / "3.sse", ["Both read."], text="a: alpha; b: beta."),
    ]


def echoed(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(tool call id, reasoning_content) of each assistant message that made calls."""
    return [
        (m["tool_calls"][0]["id"], m.get("reasoning_content"))
        for m in body["messages"]
        if m["role"] == "assistant" and m.get("tool_calls")
    ]


async def test_a_turn_with_two_tool_steps_sends_each_thought_back(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n", "utf-8")
    (workspace / "b.txt").write_text("beta\n", "utf-8")
    async with fake_deepseek(*scripted(tmp_path)) as server:
        env = {"DEEPSEEK_BASE_URL": server.base_url, "DEEPSEEK_API_KEY": KEY}
        catalog = ModelCatalog(f"deepseek:{MODEL}", {}, env)
        async with in_process_agent(catalog, tmp_path / "state") as agent:
            await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            new = {
                "cwd": str(workspace),
                "mcpServers": [],
                "_meta": {"acp_agent": {"sessionId": SID}},
            }
            assert "result" in await agent.request("session/new", new)
            level = {"sessionId": SID, "configId": "thought_level", "value": "high"}
            assert "result" in await agent.request("session/set_config_option", level)
            prompt = {"sessionId": SID, "prompt": [{"type": "text", "text": PROMPT}]}
            answer = await agent.response(await agent.start("session/prompt", prompt), 20)
        await catalog.aclose()
    assert answer.get("result", {}).get("stopReason") == "end_turn", answer
    assert server.rejected == [], "a request came without reasoning_content"
    first, second, third = (r.json() for r in server.requests)
    assert echoed(first) == []
    assert echoed(second) == [("call_00_a", "The user wants two files. First a.txt.")]
    assert echoed(third) == [
        ("call_00_a", "The user wants two files. First a.txt."),
        ("call_00_b", "a.txt says alpha. Now b.txt."),
    ]
    for body in (first, second, third):
        assert body["model"] == MODEL
        assert body["reasoning_effort"] == "high"  # the session's thinking level
        assert isinstance(body["max_tokens"], int) and body["max_tokens"] > 0
        assert "max_completion_tokens" not in body
        for message in body["messages"]:
            if message["role"] == "assistant" and message.get("tool_calls"):
                assert message["content"] == ""


async def test_the_fake_refuses_like_deepseek_when_the_echo_is_off(tmp_path: Path) -> None:
    """The same history through a provider told not to echo: DeepSeek's 400, said clearly."""
    turn = AssistantTurn(
        [ThoughtPart("First a.txt."), ToolCallPart("call_00_a", "read_file", {"path": "a.txt"})]
    )
    history: list[ModelMessage] = [
        UserTurn([TextContent(text=PROMPT)], source(SourceKind.USER)),
        turn,
        ToolTurn("call_00_a", [TextContent(text="alpha")], is_error=False),
    ]
    request = ModelRequest("s", 1, 2, history, [])
    async with fake_deepseek(*scripted(tmp_path)) as server:
        config = parse_providers("[providers.deepseek]\nreasoning_echo = false\n", Path("c.toml"))
        env = {"DEEPSEEK_BASE_URL": server.base_url, "DEEPSEEK_API_KEY": KEY}
        catalog = ModelCatalog(None, config, env)
        with pytest.raises(ModelError, match=r"reasoning_content. in the thinking mode"):
            [_ async for _ in catalog.provider(f"deepseek:{MODEL}").stream(request)]
        echoing = ModelCatalog(None, {}, env)
        [_ async for _ in echoing.provider(f"deepseek:{MODEL}").stream(request)]
        await catalog.aclose()
        await echoing.aclose()
    assert len(server.rejected) == 1 and lacks_reasoning(server.rejected[0].json())
    assert not lacks_reasoning(server.requests[-1].json())
