"""Subagents over the wire (contract §12), with the script model.

The script's lines are consumed in order across the process, so two children running at once
would take each other's lines in any order: the children's lines are alike. Their command waits
until *both* children created a file in a shared directory, which only concurrent children can
do (run one after the other, the first would wait for ever).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.integration.long_work import (
    call,
    initialized,
    journal_check,
    load,
    prompt_and_wait,
    start,
    tool_results,
    updates,
)
from tests.integration.support import (
    check_journal,
    new_session,
    request,
    serve_command,
    write_script,
)
from tests.integration.terminal_peer import TerminalPeer
from tests.support.recording import RawAgent
from tests.support.requests import read_requests
from tests.support.transcript import without_seq

pytestmark = pytest.mark.subprocess

SID = "parent"


def agent_call(call_id: str, description: str, prompt: str, **extra: Any) -> dict[str, Any]:
    return call(call_id, "agent", description=description, prompt=prompt, **extra)


def child_ids(peer: Any, sid: str) -> dict[str, str]:
    """``childSessionId`` of each call, from the first update that carried it."""
    found: dict[str, str] = {}
    for update in updates(peer, sid, "tool_call_update"):
        child = update.get("_meta", {}).get("acp_agent", {}).get("childSessionId")
        if child is not None:
            found.setdefault(update["toolCallId"], child)
    return found


async def test_two_subagents_run_together_ask_through_the_parent_and_are_listed(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    meeting = workspace / "meeting"  # in the workspace: each child's sandbox has its own /tmp
    meeting.mkdir()
    both_here = (
        f"mktemp -p {meeting} >/dev/null; "
        f'while [ "$(ls {meeting} | wc -l)" -lt 2 ]; do sleep 0.02; done; echo met'
    )
    child_step = {"toolCalls": [call("r1", "run_command", command=both_here)]}
    script = write_script(
        tmp_path / "script.jsonl",
        {
            "toolCalls": [
                agent_call("a1", "job A", "meet the other one"),
                agent_call("a2", "job B", "meet the other one"),
            ]
        },
        child_step,
        child_step,
        {"text": "we met"},
        {"text": "we met"},
        {"text": "both subagents are done"},
    )
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        peer = await start(agent, workspace, SID)
        assert await prompt_and_wait(peer, 3, SID, "split the work") == "end_turn"
        await agent.send(request(9, "session/list", {}))
        listed = await peer.until_answered(9, 10)
        await agent.close_stdin()
        await peer.to_the_end(10)

    results = tool_results(peer, SID)
    children = child_ids(peer, SID)
    assert set(children) == {"a1", "a2"} and len(set(children.values())) == 2
    for call_id, description in (("a1", "job A"), ("a2", "job B")):
        child = children[call_id]
        assert (
            results[call_id] == f"completed: subagent {child} (“{description}”) answered:\nwe met"
        )
    asked = [f["params"] for _, f in peer.frames if f.get("method") == "session/request_permission"]
    assert sorted(p["toolCall"]["title"].split(":")[0] for p in asked) == [
        "Subagent “job A”",
        "Subagent “job B”",
    ]
    assert all(p["sessionId"] == SID for p in asked)  # asked in the parent's session
    parents = {
        s["sessionId"]: s.get("_meta", {}).get("acp_agent", {}).get("parentSessionId")
        for s in listed["result"]["sessions"]
    }
    assert parents == {SID: None, **{child: SID for child in children.values()}}
    for child in children.values():
        journal = check_journal(state_dir, child, workspace)
        assert journal.end_reasons() == ["completed"]
        first = journal.of_type("user/message")[0]
        assert first["content"][0]["text"] == "meet the other one"  # no parent history
    parent = check_journal(state_dir, SID, workspace)
    assert [r["callId"] for r in parent.of_type("tool/result")] == ["a1", "a2"]


async def test_cancelling_the_parent_cancels_its_child_and_load_shows_the_child(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [agent_call("a1", "slow job", "think for ever")]},
        {"text": "thinking", "hang": True},
    )
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        peer = await start(agent, workspace, SID)
        await agent.send(request(3, "session/prompt", prompt_params(SID, "go")))
        await peer.until(lambda: "thinking" in card_text(peer, SID), 10, "the child's progress")
        await agent.send(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": SID}}
        )
        assert (await peer.until_answered(3, 10))["result"]["stopReason"] == "cancelled"
        [child] = child_ids(peer, SID).values()
        await agent.send(load(4, child, workspace))
        assert "result" in await peer.until_answered(4, 10)
        await agent.send(request(5, "session/close", {"sessionId": child}))
        await peer.until_answered(5, 10)
        await agent.send(request(6, "session/close", {"sessionId": SID}))
        await peer.until_answered(6, 10)
        before_load = len(peer.frames)
        await agent.send(load(7, SID, workspace))
        await peer.until_answered(7, 10)
        reloaded = [f for _, f in peer.frames[before_load:]]
        await agent.close_stdin()
        await peer.to_the_end(10)
    assert check_journal(state_dir, child, workspace).end_reasons() == ["cancelled"]
    assert check_journal(state_dir, SID, workspace).end_reasons() == ["cancelled"]
    replayed = [
        f["params"]["update"].get("_meta", {}).get("acp_agent", {}).get("childSessionId")
        for f in reloaded
        if f.get("method") == "session/update"
    ]
    assert child in replayed  # the parent's card names its child again on load


async def test_kill_9_during_a_childs_turn_leaves_both_journals_loadable(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [agent_call("a1", "doomed job", "work")]},
        {"toolCalls": [call("r1", "read_file", path="notes.txt")]},
        {"text": "half way", "hang": True},
    )
    (workspace / "notes.txt").write_text("notes\n")
    async with RawAgent(serve_command(script), env=agent_env, expect_exit_code=None) as agent:
        peer = await start(agent, workspace, SID)
        await agent.send(request(3, "session/prompt", prompt_params(SID, "go")))
        await peer.until(lambda: "half way" in card_text(peer, SID), 10, "the child mid-turn")
        [child] = child_ids(peer, SID).values()
        agent.process.send_signal(signal.SIGKILL)
        await agent.wait_exit()
    async with RawAgent(serve_command(script), env=agent_env) as again:
        peer = await initialized(again)
        await again.send(load(2, child, workspace))
        assert "result" in await peer.until_answered(2, 10)
        await again.send(load(3, SID, workspace))
        assert "result" in await peer.until_answered(3, 10)
        await again.close_stdin()
        await peer.to_the_end(10)
    for sid in (child, SID):  # once loaded (the load closes the cut turns): clean
        checked = journal_check(state_dir, sid)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    child_journal = check_journal(state_dir, child, workspace)
    assert child_journal.end_reasons() == ["interrupted"]
    assert [r["callId"] for r in child_journal.of_type("tool/result")] == ["r1"]  # kept
    assert check_journal(state_dir, SID, workspace).end_reasons() == ["interrupted"]


def prompt_params(sid: str, text: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


def card_text(peer: Any, sid: str) -> str:
    texts = []
    for update in updates(peer, sid, "tool_call_update"):
        for item in update.get("content") or []:
            if item.get("type") == "content" and item["content"].get("type") == "text":
                texts.append(item["content"]["text"])
    return "\n".join(texts)


UNSTABLE_SCHEMA = (
    Path(__file__).resolve().parents[2]
    / ".cache/acp-sdk/node_modules/@agentclientprotocol/sdk/schema/v1/schema.unstable.json"
)


async def test_a_client_that_advertises_subagents_gets_a_subagent_update_first(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    if not UNSTABLE_SCHEMA.exists():
        pytest.skip(f"no unstable ACP schema at {UNSTABLE_SCHEMA} (make install)")
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [agent_call("a1", "quick job", "say hi")]},
        {"text": "hi"},
        {"text": "done"},
    )
    caps = {"fs": {"readTextFile": False}, "subagents": {}}
    # validate=False: subagent_update is in the unstable schema only; checked against it below
    async with RawAgent(serve_command(script), env=agent_env, validate=False) as agent:
        peer = TerminalPeer(agent)
        await agent.send(
            request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        )
        await agent.send(new_session(2, workspace, SID))
        await peer.until_answered(2, 10)
        assert await prompt_and_wait(peer, 3, SID, "go") == "end_turn"
        await agent.close_stdin()
        await peer.to_the_end(10)
    [child] = child_ids(peer, SID).values()
    kinds = [
        (
            u["sessionUpdate"],
            u.get("sessionId") or u.get("_meta", {}).get("acp_agent", {}).get("childSessionId"),
        )
        for u in (
            f["params"]["update"] for _, f in peer.frames if f.get("method") == "session/update"
        )
        if u["sessionUpdate"] == "subagent_update"
        or "childSessionId" in u.get("_meta", {}).get("acp_agent", {})
    ]
    assert kinds[0] == ("subagent_update", child) and len(kinds) == 3  # announced, live, result
    announce = next(
        f
        for _, f in peer.frames
        if f.get("params", {}).get("update", {}).get("sessionUpdate") == "subagent_update"
    )
    assert {**announce["params"], "update": without_seq(announce["params"]["update"])} == {
        "sessionId": SID,
        "update": {
            "sessionUpdate": "subagent_update",
            "sessionId": child,
            "title": "quick job",
            "description": "quick job",
        },
    }
    schema = json.loads(UNSTABLE_SCHEMA.read_text())
    notification = {"$ref": "#/$defs/SessionNotification", "$defs": schema["$defs"]}
    jsonschema.validate(announce["params"], notification)


class AlwaysAllow(TerminalPeer):
    """Answers every permission request ``allow_always``."""

    async def _answer(self, frame: dict[str, Any]) -> None:
        if frame.get("method") == "session/request_permission":
            choice = {"outcome": "selected", "optionId": "allow_always"}
            await self.agent.respond(frame["id"], {"outcome": choice})
            return
        await super()._answer(frame)


async def test_a_child_follows_the_parents_remembered_answers(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    echo = call("r1", "run_command", command="echo hello")
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [echo]},
        {"toolCalls": [agent_call("a1", "echo job", "echo hello")]},
        {"toolCalls": [echo]},
        {"text": "echoed"},
        {"text": "done"},
    )
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        peer = AlwaysAllow(agent)
        await agent.send(request(1, "initialize", {"protocolVersion": 1}))
        await agent.send(new_session(2, workspace, SID))
        await peer.until_answered(2, 10)
        assert await prompt_and_wait(peer, 3, SID, "go") == "end_turn"
        await agent.close_stdin()
        await peer.to_the_end(10)
    asked = [f for _, f in peer.frames if f.get("method") == "session/request_permission"]
    assert [f["params"]["toolCall"]["toolCallId"] for f in asked] == ["r1"]  # the parent's only
    [child] = child_ids(peer, SID).values()
    [result] = check_journal(state_dir, child, workspace).of_type("tool/result")
    assert not result["isError"] and "hello" in result["content"][0]["text"]


async def test_a_grandchild_has_no_agent_tool(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    log = tmp_path / "requests.jsonl"
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [agent_call("a1", "child", "delegate")]},
        {"toolCalls": [agent_call("a2", "grandchild", "answer")]},
        {"text": "grandchild answer"},
        {"text": "child answer"},
        {"text": "parent answer"},
    )
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with RawAgent(serve_command(script), env=env) as agent:
        peer = await start(agent, workspace, SID)
        assert await prompt_and_wait(peer, 3, SID, "go") == "end_turn"
        await agent.close_stdin()
        await peer.to_the_end(10)
    has_agent = [("agent" in r["tools"], r["messages"][-1]["role"]) for r in read_requests(log)]
    assert has_agent == [
        (True, "user"),  # the parent
        (True, "user"),  # the child: depth 1
        (False, "user"),  # the grandchild: depth 2, no agent tool
        (True, "tool"),  # the child again, with the grandchild's answer
        (True, "tool"),  # the parent, with the child's
    ]
    result = check_journal(state_dir, SID, workspace).of_type("tool/result")[0]
    assert "child answer" in result["content"][0]["text"]


async def test_closing_the_parent_closes_its_running_child(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [agent_call("a1", "slow job", "think for ever")]},
        {"text": "thinking", "hang": True},
    )
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        peer = await start(agent, workspace, SID)
        await agent.send(request(3, "session/prompt", prompt_params(SID, "go")))
        await peer.until(lambda: "thinking" in card_text(peer, SID), 10, "the child's progress")
        await agent.send(request(4, "session/close", {"sessionId": SID}))
        assert "result" in await peer.until_answered(4, 10)
        assert (await peer.until_answered(3, 10))["result"]["stopReason"] == "cancelled"
        [child] = child_ids(peer, SID).values()
        await agent.close_stdin()
        await peer.to_the_end(10)
    assert check_journal(state_dir, child, workspace).end_reasons() == ["cancelled"]
