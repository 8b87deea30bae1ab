"""reliability.md scenario 8: the client stops reading stdout while a turn streams, then cancels.

``tests/integration/test_process.py::test_a_client_that_pauses_reading_then_cancels`` holds the
plain case (memory bounded, the cancel honoured, every update before ``cancelled``) and checks it
once the client reads again. Here the cancel must be honoured *while the client still is not
reading* (reliability.md: "stdin is read independently so ``session/cancel`` still arrives"):
the turn's ``turn/end {cancelled}`` reaches the journal although nothing can be written to
stdout. And the client does what clients do: before cancelling it sends another request (say
an injection, or any request), whose answer cannot be written either.

Found here: with a request before the cancel, the reader waited for room in the full outgoing
queue to answer it, so it read nothing more and the cancel waited until the client read again
(the ``nothing`` case passed, the others did not). Fixed by commit e3807d4: answers and journal
projections enter the writer's queue without waiting; only streamed deltas wait for room.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.integration.support import (
    cancel,
    check_journal,
    initialize,
    is_turn_update,
    new_session,
    prompt,
    request,
    serve_command,
    session_path,
    write_script,
)
from tests.integration.test_process import PipedAgent, answer, vm_kib
from tests.support.acp_schema import JsonObject

pytestmark = [pytest.mark.subprocess, pytest.mark.reliability]

SID = "stalled"
HONOUR_WITHIN = 5.0  # seconds; the plain case takes well under a tenth of that

BETWEEN: dict[str, JsonObject | None] = {
    "nothing": None,
    "initialize": request(5, "initialize", {"protocolVersion": 1}),
    "inject": request(5, "_acp_agent/inject", {"sessionId": SID, "content": "late context"}),
}


def journal_end_reasons(state_dir: Path) -> list[str]:
    """``turn/end`` reasons of the complete lines the journal holds right now."""
    data = (session_path(state_dir, SID) / "journal.jsonl").read_bytes()
    lines = [json.loads(raw) for raw in data.split(b"\n")[1:-1]]
    return [e["data"]["reason"]["kind"] for e in lines if e["type"] == "turn/end"]


def wait_for_reasons(state_dir: Path, wanted: list[str], within: float) -> float | None:
    """Seconds until the journal's turn ends are ``wanted``; ``None`` if not within ``within``."""
    started = time.monotonic()
    while time.monotonic() - started < within:
        if journal_end_reasons(state_dir) == wanted:
            return time.monotonic() - started
        time.sleep(0.02)
    return None


@pytest.mark.parametrize("between", list(BETWEEN))
def test_a_cancel_is_honoured_while_the_client_is_not_reading(
    between: str, tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    chunks = ["y" * 4096 for _ in range(20_000)]  # ~80 MiB if nothing held the stream back
    script = write_script(tmp_path / "script.jsonl", {"text": "warm"}, {"chunks": chunks})
    with (tmp_path / "stderr.log").open("wb") as stderr:
        agent = PipedAgent(serve_command(script), agent_env, stderr)
    try:
        agent.send(initialize(1), new_session(2, workspace, SID), prompt(3, SID, "warm up"))
        agent.read_until(answer(3))
        baseline = vm_kib(agent.proc.pid, "VmRSS")
        agent.send(prompt(4, SID, "flood"))
        agent.read_until(lambda f: is_turn_update(f, SID))
        time.sleep(1.0)  # the client stops reading: the pipe and the agent's queue fill up
        extra = BETWEEN[between]
        if extra is not None:
            agent.send(extra)
            time.sleep(0.3)
        agent.send(cancel(SID))
        honoured = wait_for_reasons(state_dir, ["completed", "cancelled"], HONOUR_WITHIN)
        paused = vm_kib(agent.proc.pid, "VmRSS")
        final = agent.read_until(answer(4), within=30)  # the client reads again
        if extra is not None and not any(map(answer(5), agent.transcript.agent_frames)):
            agent.read_until(answer(5), within=10)
        agent.stdin.close()
        code = agent.wait(10)
    finally:
        agent.kill()
    print(f"{between} before the cancel: honoured after {honoured} s; RSS {baseline}->{paused} KiB")
    assert honoured is not None, (
        f"with {between!r} sent before it, the cancel was not honoured within {HONOUR_WITHIN}s "
        "while the client was not reading: the turn went on (stdin is not read while a "
        "response waits for room in the outgoing queue)"
    )
    assert final["result"] == {"stopReason": "cancelled"}
    assert code == 0
    frames = agent.transcript.agent_frames
    answered = next(i for i, f in enumerate(frames) if answer(4)(f))
    assert not [f for f in frames[answered + 1 :] if is_turn_update(f, SID)]
    assert paused - baseline < 32 * 1024, f"RSS grew by {(paused - baseline) // 1024} MiB"
    agent.transcript.validate()
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["completed", "cancelled"]
