"""Background commands over the wire (contract §12), with the script model.

A task's command waits for a file the test creates (``wait_for_file``), so the test decides
whether it ends between turns or during a batch; nothing here waits on a clock. A task's ending
goes through the injection path: between turns it is appended at once (a ``user/message`` with
``source {"kind": "task", "id"}``, announced as a ``user_message_chunk``, no turn, no model
request); during a batch it is staged and lands after the batch's last result.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from tests.integration.long_work import (
    alive,
    bg_call,
    call,
    close,
    initialized,
    load,
    prompt_and_wait,
    start,
    task_chunks,
    task_table,
    tool_results,
    updates,
    wait_for_file,
)
from tests.integration.support import check_journal, serve_command, write_script
from tests.sandbox.support import needs_sandbox, unsandboxed
from tests.support.recording import RawAgent
from tests.support.requests import read_requests
from tests.support.transcript import without_seq

pytestmark = pytest.mark.subprocess

SID = "tasks"
"""The tests but the last run their tasks unsandboxed (``unsandboxed``): they watch a task's
process by its host pid and hand it files under the host's ``/tmp``, which the sandbox's own pid
namespace and private ``/tmp`` hide. The last one checks the sandbox around a task."""


def chunk_text(chunk: dict[str, object]) -> str:
    content = chunk["content"]
    assert isinstance(content, dict)
    return str(content["text"])


async def test_a_task_ending_between_turns_is_appended_announced_and_runs_no_model(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    go = tmp_path / "go"
    command = f"echo starting; {wait_for_file(go)}; echo all done; exit 3"
    log = tmp_path / "requests.jsonl"
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [bg_call("c1", command)]},
        {"text": "started it"},
    )
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with RawAgent(serve_command(script, *unsandboxed(tmp_path)), env=env) as agent:
        peer = await start(agent, workspace, SID)
        assert await prompt_and_wait(peer, 3, SID, "build in the background") == "end_turn"
        result = next(iter(tool_results(peer, SID).values()))
        assert result.startswith("completed: task: t1\n"), result
        assert not task_chunks(peer, SID)  # still running
        go.touch()
        await peer.until(lambda: bool(task_chunks(peer, SID)), 10, "the task's ending")
        assert await prompt_and_wait(peer, 4, SID, "/tasks") == "end_turn"
        assert await prompt_and_wait(peer, 5, SID, "/status") == "end_turn"
        await agent.close_stdin()
        await peer.to_the_end(10)
    answers = {
        u["_meta"]["acp_agent"]["command"]: u["content"]["text"]
        for u in updates(peer, SID, "agent_message_chunk")
        if "command" in u.get("_meta", {}).get("acp_agent", {})
    }
    listed = "- t1: exited 3, "
    assert "Background tasks (0 running):" in answers["tasks"] and listed in answers["tasks"]
    assert re.search(r"ran (under 1 s|\d+ s): \$ " + re.escape(command), answers["tasks"])
    assert listed in answers["status"]
    [chunk] = task_chunks(peer, SID)
    assert without_seq(chunk)["_meta"] == {"acp_agent": {"source": {"kind": "task", "id": "t1"}}}
    text = chunk_text(chunk)
    for part in ("t1", command, "exited 3", "all done", "starting"):
        assert part in text, (part, text)
    assert len(read_requests(log)) == 2  # the ending asked the model nothing
    journal = check_journal(state_dir, SID, workspace)
    assert journal.types()[-2:] == ["turn/end", "user/message"]  # no turn around it
    assert journal.end_reasons() == ["completed"]
    last = journal.of_type("user/message")[-1]
    assert last["source"] == {"kind": "task", "id": "t1"} and last["id"] == chunk["messageId"]
    assert task_table(state_dir, SID)[0]["status"] == "3"


async def test_a_task_ending_during_a_batch_lands_after_the_whole_batch(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    """``task_stop`` returns once the ending is staged, so it surely ends mid-batch; the
    message follows the batch's *last* result, and the next request sees it."""
    (workspace / "notes.txt").write_text("notes\n")
    log = tmp_path / "requests.jsonl"
    script = write_script(
        tmp_path / "script.jsonl",
        {
            "toolCalls": [
                bg_call("c1", "echo going; sleep 60"),
                call("c2", "task_output", task="t1"),
                call("c3", "task_stop", task="t1"),
                call("c4", "read_file", path="notes.txt"),
            ]
        },
        {"text": "it was stopped"},
    )
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with RawAgent(serve_command(script, *unsandboxed(tmp_path)), env=env) as agent:
        peer = await start(agent, workspace, SID)
        assert await prompt_and_wait(peer, 3, SID, "go") == "end_turn"
        results = tool_results(peer, SID)
        await agent.close_stdin()
        await peer.to_the_end(10)
    assert results["c2"].startswith("completed: task: t1 running\n"), results["c2"]
    assert results["c3"] == "completed: task: t1 stopped: exited SIGKILL"
    journal = check_journal(state_dir, SID, workspace)
    order = [
        (e["type"], e["data"].get("callId") or e["data"].get("source", {}).get("kind"))
        for e in journal.events
        if e["type"] in ("tool/result", "user/message", "step/end", "step/start")
    ]
    assert order == [
        ("user/message", "user"),
        ("step/start", None),
        ("tool/result", "c1"),
        ("tool/result", "c2"),
        ("tool/result", "c3"),
        ("tool/result", "c4"),
        ("step/end", None),
        ("user/message", "task"),  # drained after the complete batch, before the next step
        ("step/start", None),
        ("step/end", None),
    ]
    second = read_requests(log)[1]["messages"]
    assert second[-1]["source"] == {"kind": "task", "id": "t1"}
    assert "exited SIGKILL" in second[-1]["content"][0]["text"]
    [chunk] = task_chunks(peer, SID)  # announced once, when it entered the journal
    assert chunk["_meta"]["acp_agent"]["source"]["id"] == "t1"


async def test_tasks_are_killed_on_close_not_on_cancel_and_reported_at_the_next_open(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    pid_file = tmp_path / "pid"
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [bg_call("c1", f"echo $$ > {pid_file}; exec sleep 60")]},
        {"text": "working", "hang": True},
    )
    async with RawAgent(serve_command(script, *unsandboxed(tmp_path)), env=agent_env) as agent:
        peer = await start(agent, workspace, SID)
        await agent.send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": SID, "prompt": [{"type": "text", "text": "go"}]},
            }
        )
        await peer.until(lambda: bool(updates(peer, SID, "agent_message_chunk")), 10, "step 2")
        await agent.send(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": SID}}
        )
        assert (await peer.until_answered(3, 10))["result"]["stopReason"] == "cancelled"
        pid = int(pid_file.read_text())
        assert alive(pid), "session/cancel ends the turn, not its tasks"
        await agent.send(close(4, SID))
        await peer.until_answered(4, 10)
        assert not alive(pid), "closing the session kills its tasks"
        assert task_table(state_dir, SID)[0]["status"] == "closed"
        await agent.send(load(5, SID, workspace))
        await peer.until_answered(5, 10)
        await agent.close_stdin()
        await peer.to_the_end(10)
    [chunk] = task_chunks(peer, SID)  # the load's replay
    assert "killed when its session was closed" in chunk_text(chunk)
    assert check_journal(state_dir, SID, workspace).of_type("user/message")[-1]["source"] == {
        "kind": "task",
        "id": "t1",
    }


async def test_a_ninth_running_task_is_refused(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    calls = [bg_call(f"c{n}", "sleep 60") for n in range(1, 10)]
    script = write_script(tmp_path / "s.jsonl", {"toolCalls": calls}, {"text": "nine"})
    async with RawAgent(serve_command(script, *unsandboxed(tmp_path)), env=agent_env) as agent:
        peer = await start(agent, workspace, SID)
        assert await prompt_and_wait(peer, 3, SID, "go") == "end_turn"
        results = tool_results(peer, SID)
        await agent.close_stdin()
        await peer.to_the_end(10)
    assert all(results[f"c{n}"].startswith(f"completed: task: t{n}\n") for n in range(1, 9))
    assert results["c9"].startswith("failed: run_command: refused: 8 background tasks"), results
    assert [t["status"] for t in task_table(state_dir, SID)] == ["closed"] * 8  # stdin EOF


async def test_a_task_left_running_by_a_crash_is_reported_ended_by_the_restart(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    pid_file = tmp_path / "pid"
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [bg_call("c1", f"echo $$ > {pid_file}; exec sleep 60")]},
        {"text": "started"},
    )
    async with RawAgent(
        serve_command(script, *unsandboxed(tmp_path)), env=agent_env, expect_exit_code=None
    ) as agent:
        peer = await start(agent, workspace, SID)
        assert await prompt_and_wait(peer, 3, SID, "go") == "end_turn"
        agent.process.send_signal(signal.SIGKILL)
        await agent.wait_exit()
    pid = int(pid_file.read_text())
    assert alive(pid), "a kill -9 leaves the task's process behind"
    async with RawAgent(serve_command(script, *unsandboxed(tmp_path)), env=agent_env) as again:
        peer = await initialized(again)
        await again.send(load(3, SID, workspace))
        await peer.until_answered(3, 10)
        await again.close_stdin()
        await peer.to_the_end(10)
    [chunk] = task_chunks(peer, SID)
    assert "restart" in chunk_text(chunk) and "t1" in chunk_text(chunk)
    assert not alive(pid), "the next open kills what the dead process left running"
    assert task_table(state_dir, SID)[0]["status"] == "restart"
    assert task_table(state_dir, SID)[0]["reported"] is True
    check_journal(state_dir, SID, workspace)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_tasks_are_killed_when_the_process_is_signalled(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str], signum: int
) -> None:
    pid_file = tmp_path / "pid"
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [bg_call("c1", f"echo $$ > {pid_file}; exec sleep 60")]},
        {"text": "started"},
    )
    async with RawAgent(
        serve_command(script, *unsandboxed(tmp_path)), env=agent_env, expect_exit_code=None
    ) as agent:
        peer = await start(agent, workspace, SID)
        assert await prompt_and_wait(peer, 3, SID, "go") == "end_turn"
        pid = int(pid_file.read_text())
        assert alive(pid)
        agent.process.send_signal(signum)
        await agent.wait_exit()
    assert not alive(pid), "the end of the process kills its sessions' tasks"
    assert task_table(state_dir, SID)[0]["status"] == "closed"


@needs_sandbox
async def test_a_background_task_runs_in_the_sessions_sandbox(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    outside = tmp_path / "outside.txt"  # under /tmp: the sandbox's own /tmp takes it
    elsewhere = Path("/var/tmp") / f"acp-agent-test-{tmp_path.name}"  # read-only inside
    command = (
        f"echo inside > inside.txt; echo escaped > {outside}; "
        f"echo escaped > {elsewhere} || echo refused"
    )
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [bg_call("c1", command)]},
        {"text": "started it"},
    )
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        peer = await start(agent, workspace, SID)
        assert await prompt_and_wait(peer, 3, SID, "write both") == "end_turn"
        result = next(iter(tool_results(peer, SID).values()))
        assert result.startswith("completed: task: t1\nsandbox: workspace-write\n"), result
        await peer.until(lambda: bool(task_chunks(peer, SID)), 10, "the task's ending")
        [chunk] = task_chunks(peer, SID)
    assert "refused" in chunk_text(chunk), chunk_text(chunk)  # the write outside was refused
    assert (workspace / "inside.txt").read_text() == "inside\n"
    assert not outside.exists() and not elsewhere.exists()
