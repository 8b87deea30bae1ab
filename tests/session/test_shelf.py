"""Sessions on disk (``session/shelf.py``): ``session/delete`` of a session not open here, of one
another process holds, tombstones a crash left; archiving one another process holds; a client
title for a session not open here; and tool names on ``session/load`` replay. The real router
and session layer, in process (``tests/model/harness.py``); every frame is validated against
the official schema (stable; unstable for the unstable methods).

Expectations: ACP schema v1 ``DeleteSessionRequest`` / ``ToolCall.name`` /
``ToolCallUpdate.name``; unstable ``ArchiveSessionRequest`` and ``SetSessionTitleRequest``
(SDK 2.4.0 ``schema/v1/``); docs/contract.md §9.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.model.registry import ModelCatalog
from tests.integration.support import write_script
from tests.model.harness import InProcessAgent, in_process_agent
from tests.support.acp_schema import AcpSchema, schema_path

HOLD_LOCK = """
import sys, time
from pathlib import Path
from acp_agent.journal.lock import SessionLock
lock = SessionLock.acquire(Path(sys.argv[1]), sys.argv[2])
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def unstable_schema() -> AcpSchema:
    return AcpSchema.load(schema_path().with_name("schema.unstable.json"))


async def new_session(agent: InProcessAgent, cwd: Path) -> str:
    await agent.request("initialize", {"protocolVersion": 1})
    new = await agent.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    sid: str = new["result"]["sessionId"]
    return sid


def script_catalog(tmp_path: Path, *lines: dict[str, Any]) -> ModelCatalog:
    return ModelCatalog(f"script:{write_script(tmp_path / 'script.jsonl', *lines)}")


async def test_delete_of_a_session_on_disk_and_of_one_another_process_holds(
    tmp_path: Path, acp_schema: AcpSchema
) -> None:
    state, cwd = tmp_path / "state", tmp_path
    models = script_catalog(tmp_path)
    async with in_process_agent(models, state) as agent:
        held = await new_session(agent, cwd)
        free = await new_session(agent, cwd)
        for sid in (held, free):
            assert "result" in await agent.request("session/close", {"sessionId": sid})
    sessions = state / "sessions"
    (sessions / ".deleted-leftover-1234").mkdir()  # what a crash mid-delete leaves
    (sessions / ".deleted-leftover-1234" / "journal.jsonl").write_text("{}\n")

    argv = [sys.executable, "-c", HOLD_LOCK, str(sessions / held), held]
    async with await anyio.open_process(argv) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        assert (await holder.stdout.receive()).startswith(b"locked")
        async with in_process_agent(models, state) as agent:
            await agent.request("initialize", {"protocolVersion": 1})
            refused = await agent.request("session/delete", {"sessionId": held})
            assert refused["error"]["code"] == -32603
            assert refused["error"]["data"]["reason"] == "journal_locked"
            assert refused["error"]["data"]["holderPid"] == holder.pid
            assert (sessions / held / "journal.jsonl").is_file()  # nothing lost

            deleted = await agent.request("session/delete", {"sessionId": free})
            assert deleted["result"] == {}
            listed = await agent.request("session/list", {})
            assert [s["sessionId"] for s in listed["result"]["sessions"]] == [held]
            bad = await agent.request("session/delete", {"sessionId": "../x"})
            assert bad["error"]["code"] == -32602
            for frame in agent.frames:
                acp_schema.validate_agent_frame(frame)
        await holder.stdin.aclose()
        await holder.wait()
    assert sorted(p.name for p in sessions.iterdir()) == [held]  # the tombstone swept too


async def test_archive_of_a_session_another_process_holds_is_refused(
    tmp_path: Path, unstable_schema: AcpSchema
) -> None:
    state = tmp_path / "state"
    models = script_catalog(tmp_path)
    async with in_process_agent(models, state) as first:
        sid = await new_session(first, tmp_path)
        async with in_process_agent(models, state) as second:
            await second.request("initialize", {"protocolVersion": 1})
            refused = await second.request("session/archive", {"sessionId": sid})
            assert refused["error"]["data"]["reason"] == "journal_locked"
            assert not (state / "sessions" / sid / "archived").exists()
            titled = await second.request(
                "session/set_title", {"sessionId": sid, "title": "from another window"}
            )
            assert titled["result"] == {"title": "from another window"}
            status = await second.request("session/status", {"sessionId": sid})
            assert status["result"] == {"status": "saved"}  # not in *this* agent's memory
            for frame in second.frames:
                unstable_schema.validate_agent_frame(frame)
        status = await first.request("session/status", {"sessionId": sid})
        assert status["result"] == {"status": "open"}
    assert (state / "sessions" / sid / "title").read_text() == "from another window"


async def test_tool_names_on_replay(tmp_path: Path, acp_schema: AcpSchema) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    models = script_catalog(
        tmp_path,
        {"toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"text": "read it"},
    )
    state = tmp_path / "state"
    async with in_process_agent(models, state) as agent:
        sid = await new_session(agent, tmp_path)
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "read"}]}
        assert (await agent.request("session/prompt", prompt))["result"]["stopReason"] == "end_turn"
        live = [u for u in agent.updates(sid) if u["sessionUpdate"].startswith("tool_call")]
        assert "result" in await agent.request("session/close", {"sessionId": sid})
    async with in_process_agent(models, state) as agent:
        await agent.request("initialize", {"protocolVersion": 1})
        load = {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
        assert "result" in await agent.request("session/load", load)
        replayed = [u for u in agent.updates(sid) if u["sessionUpdate"].startswith("tool_call")]
        for frame in agent.frames:
            acp_schema.validate_agent_frame(frame)
    assert [(u["sessionUpdate"], u["name"]) for u in live] == [
        ("tool_call", "read_file"),
        ("tool_call_update", "read_file"),
        ("tool_call_update", "read_file"),
    ]
    assert [(u["sessionUpdate"], u["name"], u.get("status")) for u in replayed] == [
        ("tool_call", "read_file", "pending"),
        ("tool_call_update", "read_file", "completed"),
    ]
