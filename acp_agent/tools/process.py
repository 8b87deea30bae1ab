"""Local commands for ``run_command``: a shell in its own process group, bounded and killable.

Theory of operation
-------------------
The command runs as ``/bin/sh -c COMMAND`` in the given directory, as the leader of a *new
session and process group* (``start_new_session=True``), stdin from ``/dev/null``, stdout and
stderr merged into one pipe that we drain while it runs. Only the last ``limit`` bytes are kept
(the end of a build log is where the error is); the result says when bytes were dropped. The
environment is the agent's, minus variables that hold model API keys (``*_API_KEY``), so a
command cannot print them into the journal.

The process group is killed (SIGKILL) on *every* way out: when the shell exits (what it left
running in its group must not outlive the call), on timeout, and when the caller is cancelled
(a cancelled turn ends its commands); the shell is then reaped, shielded from cancellation. While
a command runs its group id is in ``_LIVE``, so ``kill_all`` (the server's last act on a second
signal, when nothing else gets to run) can end every group still running. Processes that start
their own session (``setsid``) leave the group and are beyond reach.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass

import anyio
import anyio.abc
import structlog

log = structlog.get_logger("acp_agent.tools")

SHELL = "/bin/sh"
_LIVE: set[int] = set()


@dataclass(frozen=True)
class Finished:
    output: str
    truncated: bool
    exit_code: int | None
    """``None`` when killed by a signal (``signal`` says which) or timed out."""
    signal: str | None
    timed_out: bool


async def run_local(command: str, cwd: str, timeout_s: float, limit: int) -> Finished:
    """Run ``command`` to its end or its timeout. Raises ``OSError`` if the shell cannot start."""
    process = await anyio.open_process(
        [SHELL, "-c", command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=_environment(),
        start_new_session=True,
    )
    _LIVE.add(process.pid)
    tail = _Tail(limit)
    try:
        with anyio.move_on_after(timeout_s) as deadline:
            await _drain(process, tail)
    finally:
        kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            await process.aclose()
        _LIVE.discard(process.pid)
    code = process.returncode
    timed_out = deadline.cancelled_caught
    died = code is not None and code < 0
    return Finished(
        tail.text(),
        tail.dropped > 0,
        None if timed_out or died or code is None else code,
        _signal_name(-code) if died and code is not None and not timed_out else None,
        timed_out,
    )


async def _drain(process: anyio.abc.Process, tail: _Tail) -> None:
    assert process.stdout is not None
    async with anyio.create_task_group() as tg:
        tg.start_soon(tail.read, process.stdout)
        await process.wait()
        kill_group(process.pid)  # leftovers holding the pipe open go with the shell


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, signal.SIGKILL)


def kill_all() -> None:
    """Kill every command group still running (no reaping: the process is about to exit)."""
    for pgid in list(_LIVE):
        log.warning("command_killed_at_exit", pgid=pgid)
        kill_group(pgid)
    _LIVE.clear()


def live_groups() -> frozenset[int]:
    return frozenset(_LIVE)


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.upper().endswith("_API_KEY")}


class _Tail:
    """Keeps the last ``limit`` bytes of a stream."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    async def read(self, stream: anyio.abc.ByteReceiveStream) -> None:
        async for chunk in stream:
            self.data += chunk
            excess = len(self.data) - self.limit
            if excess > 0:
                del self.data[:excess]
                self.dropped += excess

    def text(self) -> str:
        data = bytes(self.data)
        if self.dropped:  # do not start in the middle of a UTF-8 sequence
            while data and data[0] & 0xC0 == 0x80:
                data = data[1:]
        return data.decode("utf-8", "replace")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
