"""``$/cancel_request`` for a ``session/prompt`` ends that prompt only (contract §9, corrected
2026-12-02): a queued prompt is answered ``cancelled`` without running and the other prompts of
the session run as if it had never been queued; the running prompt's turn ends as with
``session/cancel``, and the prompts queued behind it then run.

The first prompt's script line hangs after its first chunk, so it is surely running while the
others queue behind it; the model requests logged (``ACP_AGENT_SCRIPT_REQUESTS``) show which
prompts ran.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.support import (
    check_journal,
    initialize,
    new_session,
    prompt,
    serve_command,
    write_script,
)
from tests.integration.terminal_peer import TerminalPeer
from tests.support.acp_schema import JsonObject
from tests.support.recording import RawAgent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess

SID = "queue"


def cancel_request(request_id: int) -> JsonObject:
    return {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}}


def chunk_seen(peer: TerminalPeer, text: str) -> bool:
    return any(
        f.get("method") == "session/update"
        and f["params"]["update"].get("content", {}).get("text") == text
        for _, f in peer.frames
    )


def prompted_texts(log: Path) -> list[str]:
    """The last user text of every model request: which prompt each request served."""
    texts = []
    for logged in read_requests(log):
        users = [m for m in logged["messages"] if m["role"] == "user"]
        texts.append("".join(b.get("text", "") for b in users[-1]["content"]))
    return texts


async def test_cancel_request_of_a_queued_prompt_then_of_the_running_one(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    log = tmp_path / "requests.jsonl"
    script = write_script(
        tmp_path / "script.jsonl", {"text": "working", "hang": True}, {"text": "third done"}
    )
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with RawAgent(serve_command(script), env=env) as agent:
        peer = TerminalPeer(agent)
        await agent.send(initialize(1))
        await agent.send(new_session(2, workspace, SID))
        await agent.send(prompt(3, SID, "first"))
        await agent.send(prompt(4, SID, "second"))
        await agent.send(prompt(5, SID, "third"))
        await peer.until(lambda: chunk_seen(peer, "working"), 10, "the first turn running")

        await agent.send(cancel_request(4))
        assert (await peer.until_answered(4, 10))["result"]["stopReason"] == "cancelled"
        assert peer.answer_to(3) is None, "the running turn goes on"

        await agent.send(cancel_request(3))
        assert (await peer.until_answered(3, 10))["result"]["stopReason"] == "cancelled"
        assert (await peer.until_answered(5, 10))["result"]["stopReason"] == "end_turn"
        await agent.close_stdin()
        await peer.to_the_end(10)

    assert prompted_texts(log) == ["first", "third"]  # "second" never reached the model
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["cancelled", "completed"]
    prompts = [
        e["content"][0]["text"]
        for e in journal.of_type("user/message")
        if e["source"]["kind"] == "user"
    ]
    assert prompts == ["first", "third"]


async def test_session_cancel_still_cancels_the_queue_too(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "script.jsonl", {"text": "working", "hang": True})
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        peer = TerminalPeer(agent)
        await agent.send(initialize(1))
        await agent.send(new_session(2, workspace, SID))
        await agent.send(prompt(3, SID, "first"))
        await agent.send(prompt(4, SID, "second"))
        await peer.until(lambda: chunk_seen(peer, "working"), 10, "the first turn running")
        await agent.send(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": SID}}
        )
        for request_id in (3, 4):
            answer = await peer.until_answered(request_id, 10)
            assert answer["result"]["stopReason"] == "cancelled"
        await agent.close_stdin()
        await peer.to_the_end(10)
    assert check_journal(state_dir, SID, workspace).end_reasons() == ["cancelled"]
