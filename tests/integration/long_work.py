"""Shared pieces of the long-running-work wire tests (contract §12): background tasks and
subagents driven by the script model over raw pipes (``TerminalPeer`` answers permissions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration.support import initialize, new_session, prompt, request
from tests.integration.terminal_peer import TerminalPeer
from tests.support.acp_schema import JsonObject
from tests.support.recording import RawAgent


def bg_call(call_id: str, command: str) -> JsonObject:
    arguments = {"command": command, "background": True}
    return {"id": call_id, "name": "run_command", "arguments": arguments}


def call(call_id: str, name: str, **arguments: Any) -> JsonObject:
    return {"id": call_id, "name": name, "arguments": arguments}


def wait_for_file(path: Path) -> str:
    """A shell loop that waits (polling) until ``path`` exists: the test says when a task ends."""
    return f"while [ ! -e {path} ]; do sleep 0.02; done"


async def initialized(agent: RawAgent) -> TerminalPeer:
    peer = TerminalPeer(agent)
    await agent.send(initialize(1))
    await peer.until_answered(1, 10)
    return peer


async def start(agent: RawAgent, workspace: Path, sid: str) -> TerminalPeer:
    peer = await initialized(agent)
    await agent.send(new_session(2, workspace, sid))
    await peer.until_answered(2, 10)
    return peer


async def prompt_and_wait(peer: TerminalPeer, request_id: int, sid: str, text: str) -> str:
    await peer.agent.send(prompt(request_id, sid, text))
    answer = await peer.until_answered(request_id, 20)
    assert "result" in answer, answer
    return str(answer["result"]["stopReason"])


def updates(peer: TerminalPeer, sid: str, kind: str) -> list[JsonObject]:
    return [
        f["params"]["update"]
        for _, f in peer.frames
        if f.get("method") == "session/update"
        and f["params"]["sessionId"] == sid
        and f["params"]["update"]["sessionUpdate"] == kind
    ]


def task_chunks(peer: TerminalPeer, sid: str) -> list[JsonObject]:
    return [
        u
        for u in updates(peer, sid, "user_message_chunk")
        if u.get("_meta", {}).get("acp_agent", {}).get("source", {}).get("kind") == "task"
    ]


def tool_results(peer: TerminalPeer, sid: str) -> dict[str, str]:
    """Each completed or failed call's final text, by call id."""
    found: dict[str, str] = {}
    for update in updates(peer, sid, "tool_call_update"):
        if update.get("status") in ("completed", "failed"):
            texts = [
                c["content"]["text"]
                for c in update.get("content") or []
                if c.get("type") == "content" and c["content"].get("type") == "text"
            ]
            found[update["toolCallId"]] = f"{update['status']}: " + "\n".join(texts)
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return False


def task_table(state_dir: Path, sid: str) -> list[JsonObject]:
    path = state_dir / "sessions" / sid / "tasks.json"
    loaded: list[JsonObject] = json.loads(path.read_text())
    return loaded


def close(request_id: int, sid: str) -> JsonObject:
    return request(request_id, "session/close", {"sessionId": sid})


def load(request_id: int, sid: str, cwd: Path) -> JsonObject:
    return request(
        request_id, "session/load", {"sessionId": sid, "cwd": str(cwd), "mcpServers": []}
    )


def journal_check(state_dir: Path, sid: str) -> subprocess.CompletedProcess[str]:
    """``acp-agent journal check SID`` (read-only: it takes no lock, repairs nothing)."""
    command = [sys.executable, "-m", "acp_agent", "journal", "check", sid]
    return subprocess.run(
        [*command, "--state-dir", str(state_dir)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
