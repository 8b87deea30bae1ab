"""Usage on the wire: ``usage_update`` with the session model's window and the cost so far, and
the unstable ``PromptResponse.usage`` (docs/contract.md §8; SDK 2.4.0 ``Usage``, ``Cost``).

Script lines carry the counts a provider would report (``usage``, with OpenRouter's ``cost``).
Frames are checked against the ACP schema by the harness's client elsewhere; here the values.
"""

from __future__ import annotations

import json
from pathlib import Path

from acp_agent.model.registry import ModelCatalog
from tests.model.harness import in_process_agent


async def test_a_turns_usage_is_answered_and_the_cost_adds_up(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    lines = [
        {"toolCalls": [{"id": "c1", "name": "list_dir", "arguments": {}}],
         "usage": {"inputTokens": 100, "outputTokens": 10, "cost": 0.25}},
        {"text": "done", "usage": {"inputTokens": 150, "outputTokens": 20, "reasoningTokens": 5,
                                   "cost": 0.5}},
    ]  # fmt: skip
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    async with in_process_agent(ModelCatalog(f"script:{script}", env={}), tmp_path / "s") as agent:
        await agent.request("initialize", {"protocolVersion": 1})
        new = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = new["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "look"}]}
        answer = (await agent.request("session/prompt", prompt))["result"]
        updates = [u for u in agent.updates(sid) if u["sessionUpdate"] == "usage_update"]
    assert answer["usage"] == {
        "totalTokens": 280,
        "inputTokens": 250,
        "outputTokens": 30,
        "thoughtTokens": 5,
    }
    assert [(u["used"], u["size"], u["cost"]) for u in updates] == [
        (110, 200_000, {"amount": 0.25, "currency": "USD"}),
        (165, 200_000, {"amount": 0.75, "currency": "USD"}),
    ]
