"""``run_command`` locally: output, exit status, timeout, output cap, a cancelled command's
process group is gone, and a command runs only once ``kill_all`` can see it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from acp_agent.content import TextContent
from acp_agent.tools import process
from acp_agent.tools.base import ToolError, ToolOutput
from acp_agent.tools.run_command import OUTPUT_LIMIT, RunCommand
from tests.integration.support import wait_until
from tests.tools.support import DETACH, context, group_gone, group_members, kill_detached


async def started_group(pgid_file: Path) -> int:
    """The process group id a command wrote to ``pgid_file`` (``echo $$ > pgid``)."""
    await wait_until(lambda: written_line(pgid_file) is not None, "the command to start")
    line = written_line(pgid_file)
    assert line is not None
    return int(line)


def written_line(path: Path) -> str | None:
    text = path.read_text() if path.exists() else ""
    return text if text.endswith("\n") else None


SPAWN_DELAY_S = 0.3


@pytest.fixture
def slow_spawn(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Spawning returns ``SPAWN_DELAY_S`` after the shell exists, as on a loaded machine where
    the event loop gets back late (shielded: it adds no cancellation point). The shells' pids."""
    spawned: list[int] = []
    spawn = process._spawn

    async def slow(command: str, cwd: str, gate: int, *rest: Any) -> anyio.abc.Process:
        child = await spawn(command, cwd, gate, *rest)
        spawned.append(child.pid)
        with anyio.CancelScope(shield=True):
            await anyio.sleep(SPAWN_DELAY_S)
        return child

    monkeypatch.setattr(process, "_spawn", slow)
    return spawned


def text(output: ToolOutput) -> str:
    block = output.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def test_output_and_exit_code(workspace: Path) -> None:
    output = await RunCommand().run({"command": "echo out; echo err >&2"}, context(workspace))
    assert not output.is_error
    assert text(output) == "sandbox: off\n$ echo out; echo err >&2\nout\nerr\n[exit code 0]"


async def test_a_failing_command_is_an_error_result(workspace: Path) -> None:
    output = await RunCommand().run({"command": "exit 3"}, context(workspace))
    assert output.is_error and text(output).endswith("[exit code 3]")


async def test_runs_in_the_cwd_or_a_directory_inside_the_roots(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    ctx = context(workspace)
    assert f"\n{workspace}\n" in text(await RunCommand().run({"command": "pwd"}, ctx))
    sub = text(await RunCommand().run({"command": "pwd", "cwd": "sub"}, ctx))
    assert f"\n{workspace / 'sub'}\n" in sub
    with pytest.raises(ToolError, match="outside the session roots"):
        await RunCommand().run({"command": "pwd", "cwd": ".."}, ctx)


async def test_api_keys_do_not_reach_commands(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    output = text(await RunCommand().run({"command": "env"}, context(workspace)))
    assert "sk-secret" not in output


async def test_a_timeout_kills_the_command(workspace: Path) -> None:
    args = {"command": "echo started; sleep 30", "timeout_ms": 200}
    output = await RunCommand().run(args, context(workspace))
    assert output.is_error
    assert (
        text(output)
        == "sandbox: off\n$ echo started; sleep 30\nstarted\n[timed out: the command was killed]"
    )
    assert process.live_groups() == frozenset()


async def test_output_keeps_the_last_bytes(workspace: Path) -> None:
    command = f"head -c {OUTPUT_LIMIT * 2} /dev/zero | tr '\\0' a; echo; echo THE END"
    body = text(await RunCommand().run({"command": command}, context(workspace)))
    assert "[output truncated: the last 64 KiB follow]" in body
    assert body.endswith("THE END\n[exit code 0]")
    assert len(body) < OUTPUT_LIMIT + 200


async def test_background_leftovers_die_with_the_shell(workspace: Path) -> None:
    command = "sleep 30 & echo $$ > pgid; echo done"
    output = await RunCommand().run({"command": command}, context(workspace))
    assert text(output).endswith("done\n[exit code 0]")
    assert await group_gone(int((workspace / "pgid").read_text()))


async def test_a_cancelled_command_leaves_no_process_in_its_group(workspace: Path) -> None:
    # the sleeps are forked before the pgid file is written: seeing it means they are in the group
    args: dict[str, object] = {"command": "sleep 30 & sleep 30 & echo $$ > pgid; wait"}
    async with anyio.create_task_group() as tg:
        tg.start_soon(RunCommand().run, args, context(workspace))
        pgid = await started_group(workspace / "pgid")
        assert len(group_members(pgid)) >= 3, "the shell and its sleeps are running"
        tg.cancel_scope.cancel()
    assert await group_gone(pgid)
    assert process.live_groups() == frozenset()


async def test_kill_all_ends_every_running_command(workspace: Path) -> None:
    args: dict[str, object] = {"command": "echo $$ > pgid; sleep 30"}
    async with anyio.create_task_group() as tg:
        tg.start_soon(RunCommand().run, args, context(workspace))
        pgid = await started_group(workspace / "pgid")
        assert pgid in process.live_groups(), "a command that has run is registered"
        process.kill_all()
        assert await group_gone(pgid)


async def test_a_command_runs_only_once_kill_all_can_see_it(
    workspace: Path, slow_spawn: list[int]
) -> None:
    """However late spawning returns, the command's first act implies its group is registered
    (it used to run at once, so ``kill_all`` in that window missed it)."""
    args: dict[str, object] = {"command": "echo $$ > pgid; sleep 30"}
    async with anyio.create_task_group() as tg:
        tg.start_soon(RunCommand().run, args, context(workspace))
        pgid = await started_group(workspace / "pgid")
        assert [pgid] == slow_spawn, "the command is the spawned shell, its group its own"
        assert pgid in process.live_groups(), "the command ran before its group was registered"
        process.kill_all()
        assert await group_gone(pgid)
    assert process.live_groups() == frozenset()


async def test_a_shell_whose_gate_closes_unopened_runs_nothing(workspace: Path) -> None:
    """Why a shell spawned but not yet registered is safe: it is at its gate, and if that closes
    unopened (spawning was cancelled, the server died) it exits without running the command."""
    with process._Gate() as gate:
        shell = await process._spawn("touch ran", str(workspace), gate.reader)
    async with shell:
        assert await shell.wait() == process.GATE_CLOSED_STATUS
    assert not (workspace / "ran").exists()


async def test_the_command_reads_dev_null_not_the_gate(workspace: Path) -> None:
    args: dict[str, object] = {"command": "cat; echo end", "timeout_ms": 10_000}
    output = await RunCommand().run(args, context(workspace))
    assert text(output) == "sandbox: off\n$ cat; echo end\nend\n[exit code 0]"


DETACHED_NOTE = (
    "[a process the command started is still running detached and holding its output open; "
    "output after the shell exited is not shown]"
)


async def test_a_detached_process_holding_the_output_does_not_make_a_timeout(
    workspace: Path,
) -> None:
    """The shell exits 0 at once, but a child in its own session (``setsid``) keeps the output
    pipe open for 30 s: the exit status is the truth, not the pipe (this used to wait for the
    timeout and report "[timed out: the command was killed]")."""
    command = f"{DETACH}; echo started"
    try:
        output = await RunCommand().run(
            {"command": command, "timeout_ms": 10_000}, context(workspace)
        )
    finally:
        kill_detached(workspace / "detached.pid")
    assert not output.is_error
    assert text(output) == f"sandbox: off\n$ {command}\nstarted\n{DETACHED_NOTE}\n[exit code 0]"
    assert process.live_groups() == frozenset()


async def test_a_detached_process_does_not_hide_a_failing_exit_status(workspace: Path) -> None:
    command = f"{DETACH}; exit 3"
    try:
        output = await RunCommand().run(
            {"command": command, "timeout_ms": 10_000}, context(workspace)
        )
    finally:
        kill_detached(workspace / "detached.pid")
    assert output.is_error
    assert text(output) == f"sandbox: off\n$ {command}\n{DETACHED_NOTE}\n[exit code 3]"
