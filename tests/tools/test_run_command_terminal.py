"""``run_command`` in a client terminal, against an in-memory ``ClientTerminals`` twin: a call
cancelled while ``terminal/create`` is pending still releases the terminal the client made."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from acp_agent.errors import PeerError
from acp_agent.tools import run_command
from acp_agent.tools.base import ToolError
from acp_agent.tools.client import ExitStatus, TerminalOutput
from acp_agent.tools.run_command import RunCommand
from tests.tools.support import context

ARGS: dict[str, object] = {"command": "sleep 30"}


class SlowTerminals:
    """A client that starts the command as soon as it is asked (``asked``) but answers
    ``terminal/create`` only once ``answer`` is set; its commands run until released."""

    def __init__(self, error: PeerError | None = None) -> None:
        self.asked = anyio.Event()
        self.answer = anyio.Event()
        self.error = error
        self.released: list[str] = []

    async def create(self, command: str, args: list[str], cwd: str, output_byte_limit: int) -> str:
        self.asked.set()
        await self.answer.wait()
        if self.error is not None:
            raise self.error
        return "term-1"

    async def output(self, terminal_id: str) -> TerminalOutput:
        return TerminalOutput("")

    async def wait_for_exit(self, terminal_id: str) -> ExitStatus:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def kill(self, terminal_id: str) -> None:
        pass

    async def release(self, terminal_id: str) -> None:
        self.released.append(terminal_id)


async def cancel_while_creating(terminals: SlowTerminals, workspace: Path) -> bool:
    """Run the call, cancel it while ``terminal/create`` is pending, then let the client
    answer; whether the call ended cancelled. A ``ToolError`` it raised is raised here."""
    ctx = replace(context(workspace), terminals=terminals)
    call = anyio.CancelScope()
    errors: list[ToolError] = []

    async def run() -> None:
        with call:
            try:
                await RunCommand().run(ARGS, ctx)
            except ToolError as exc:
                errors.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await terminals.asked.wait()
        call.cancel()
        await anyio.wait_all_tasks_blocked()  # the cancellation has reached the pending create
        terminals.answer.set()
    if errors:
        raise errors[0]
    return call.cancelled_caught


async def test_a_call_cancelled_while_the_terminal_is_created_releases_it(
    workspace: Path,
) -> None:
    terminals = SlowTerminals()
    assert await cancel_while_creating(terminals, workspace)
    assert terminals.released == ["term-1"], "the client's command would run on"


async def test_a_client_that_never_answers_does_not_hold_up_the_cancel(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_command, "CLIENT_GRACE_S", 0.1)
    terminals = SlowTerminals()
    ctx = replace(context(workspace), terminals=terminals)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(RunCommand().run, ARGS, ctx)
            await terminals.asked.wait()
            tg.cancel_scope.cancel()
    assert terminals.released == [], "no id, nothing to release"


async def test_a_failed_create_is_an_error_result_also_when_cancelled(workspace: Path) -> None:
    terminals = SlowTerminals(PeerError(-32603, "no pty"))
    terminals.answer.set()
    ctx = replace(context(workspace), terminals=terminals)
    with pytest.raises(ToolError, match="the client could not start a terminal: no pty"):
        await RunCommand().run(ARGS, ctx)
    cancelled = SlowTerminals(PeerError(-32603, "no pty"))
    with pytest.raises(ToolError, match="could not start a terminal"):
        await cancel_while_creating(cancelled, workspace)
    assert cancelled.released == []
