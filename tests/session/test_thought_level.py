"""The thinking level (docs/contract.md §8): a ``thought_level`` config option of every session on
an OpenAI-compatible model, sent as ``reasoning_effort`` and kept with the session's settings.

The real router and session layer on the in-memory wire, the real OpenAI-compatible provider
against the loopback HTTP server (``tests/model/loopback.py``): the request bodies are what a
server receives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp_agent.model.registry import ModelCatalog
from tests.model.harness import InProcessAgent, in_process_agent
from tests.model.loopback import Reply, loopback


def options_of(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["id"]: o for o in result["configOptions"]}


async def prompt(agent: InProcessAgent, sid: str) -> None:
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
    assert (await agent.request("session/prompt", params))["result"]["stopReason"] == "end_turn"


async def test_the_level_is_offered_sent_and_kept(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with loopback(Reply("text.sse"), Reply("text.sse"), Reply("text.sse")) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        catalog = ModelCatalog("openai:gpt-test", {}, env)
        async with in_process_agent(catalog, state) as agent:
            await agent.request("initialize", {"protocolVersion": 1})
            new = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
            sid = new["result"]["sessionId"]
            level = options_of(new["result"])["thought_level"]
            assert (level["category"], level["currentValue"]) == ("thought_level", "default")
            assert {"low", "high"} <= {o["value"] for o in level["options"]}
            await prompt(agent, sid)  # at the default: no reasoning_effort sent
            chosen = {"sessionId": sid, "configId": "thought_level", "value": "high"}
            answer = await agent.request("session/set_config_option", chosen)
            assert options_of(answer["result"])["thought_level"]["currentValue"] == "high"
            await prompt(agent, sid)
        async with in_process_agent(catalog, state) as agent:
            await agent.request("initialize", {"protocolVersion": 1})
            load = {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
            loaded = await agent.request("session/load", load)
            assert options_of(loaded["result"])["thought_level"]["currentValue"] == "high"
            await prompt(agent, sid)
        bodies = [json.loads(r.body) for r in server.requests]
    assert [body.get("reasoning_effort") for body in bodies] == [None, "high", "high"]


async def test_a_bad_level_is_refused_and_the_script_model_offers_none(tmp_path: Path) -> None:
    async with loopback() as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        async with in_process_agent(ModelCatalog("openai:m", {}, env), tmp_path / "a") as agent:
            await agent.request("initialize", {"protocolVersion": 1})
            new = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
            bad = {"sessionId": new["result"]["sessionId"], "configId": "thought_level"}
            error = await agent.request("session/set_config_option", {**bad, "value": "max"})
            assert (error["error"]["code"], error["error"]["data"]) == (-32602, {"path": "$.value"})
    script = tmp_path / "s.jsonl"
    script.write_text("")
    async with in_process_agent(ModelCatalog(f"script:{script}", env={}), tmp_path / "b") as agent:
        await agent.request("initialize", {"protocolVersion": 1})
        new = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert "thought_level" not in options_of(new["result"])
