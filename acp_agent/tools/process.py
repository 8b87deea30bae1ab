"""Local commands for ``run_command``: a shell in its own process group, bounded and killable.

Theory of operation
-------------------
The command runs as ``/bin/sh -c COMMAND`` in the given directory, as the leader of a *new
session and process group* (``start_new_session=True``), stdin from ``/dev/null``, stdout and
stderr merged into one pipe that we drain while it runs. Only the last ``limit`` bytes are kept
(the end of a build log is where the error is); the result says when bytes were dropped. The
environment is the agent's, less every credential it holds (``sandbox/credentials.py``), so a
command cannot print them into the journal. Given a ``Confined`` (``sandbox/guard.py``), the
gated shell runs inside the sandbox: its argv is ``bwrap … -- SHELL -c …``, ``bwrap`` is the
group leader, and killing the group kills bwrap, which takes everything inside with it
(``--die-with-parent``, its own pid namespace) — detached processes included.

The process group is killed (SIGKILL) on *every* way out: when the shell exits (what it left
running in its group must not outlive the call), on timeout, and when the caller is cancelled
(a cancelled turn ends its commands); the shell is then reaped, shielded from cancellation. While
a command runs its group id is in ``_LIVE``, so ``kill_all`` (the server's last act on a second
signal, when nothing else gets to run) can end every group still running. Processes that start
their own session (``setsid``) leave the group and are beyond reach.

*The shell's exit status is the truth, not the pipe.* Once the shell has exited and its group is
killed, the pipe ends as soon as the killed processes are gone — unless a process that left the
group (``setsid``, a daemon) still holds it open, maybe for ever. So the reader gets
``DETACHED_GRACE_S`` after the shell's exit to see end of file; then it is abandoned, and the
result is the shell's status with ``detached`` set (the report says output was held open and
what came after the exit is not shown). A timeout counts only while the shell is running: a
deadline that strikes during the grace is not a kill, since none happened.

The shell is *gated* (``_GATED``, ``_Gate``): spawning returns only some event-loop turns after
the child exists (asyncio connects the pipes first), and a command running in that window would
be in no one's hands — not in ``_LIVE`` (``kill_all`` misses it), not yet inside the ``try`` whose
``finally`` kills the group (a cancellation there kills the shell alone, and its background
children live on). So the shell first waits for one line on a gate pipe, which is written only
once its group is in ``_LIVE`` and the kill-on-every-way-out ``try`` is entered. Invariant: *a
command has run only if its group is in ``_LIVE`` or has been killed*. A shell whose gate closes
unopened (spawning failed or was cancelled, or this process died) exits having run nothing.

*Live output.* Given a ``live`` callback, the output's tail (the last ``LIVE_BYTES``, from a line
start) is handed to it while the command runs: as soon as the first bytes arrive, then at most
every ``LIVE_INTERVAL_S`` while more arrive, from a task of its own (a slow callback — a client
not reading — delays only the next update, never the draining). It ends with the drain: nothing
is handed over after ``run_local`` returns, so the caller's final result comes after every live
update.

All of it runs on the event loop's thread (``kill_all`` too: the signal watcher is a task), so
``_LIVE`` needs no lock; what matters is which steps have an ``await`` between them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable
from types import TracebackType

import anyio
import anyio.abc
import msgspec

from acp_agent.logs import get_logger
from acp_agent.sandbox.credentials import scrubbed
from acp_agent.sandbox.guard import Confined

log = get_logger("acp_agent.tools")

SHELL = "/bin/sh"
GATE_CLOSED_STATUS = 125
"""The shell's exit status when its gate closed unopened (the command did not run)."""
_GATED = f'read -r go || exit {GATE_CLOSED_STATUS}; exec "$0" -c "$1" </dev/null'
"""Run as ``sh -c _GATED SHELL COMMAND`` with the gate as stdin: wait for the gate's line, then
*become* ``SHELL -c COMMAND`` (``exec``: the same process, so the same pid, ``$$`` and group)
with stdin from ``/dev/null``. End of file instead of a line: exit, running nothing."""
_LIVE: set[int] = set()
DETACHED_GRACE_S = 0.3
"""How long after the shell's exit the output pipe may take to end (see the docstring)."""
LIVE_INTERVAL_S = 0.25
"""Live output updates are at least this far apart."""
LIVE_BYTES = 8 << 10
"""A live update shows at most this much of the output's end."""
Live = Callable[[str], Awaitable[None]]


class Finished(msgspec.Struct, frozen=True):
    output: str
    truncated: bool
    exit_code: int | None
    """``None`` when killed by a signal (``signal`` says which) or timed out."""
    signal: str | None
    timed_out: bool
    detached: bool = False
    """The shell exited but a process outside its group held the output open (not waited for)."""


class _Watch(msgspec.Struct):
    """What ``_drain`` saw, kept when a deadline interrupts it: whether the shell had exited."""

    exited: bool = False


async def run_local(
    command: str,
    cwd: str,
    timeout_s: float,
    limit: int,
    live: Live | None = None,
    confined: Confined | None = None,
) -> Finished:
    """Run ``command`` to its end or its timeout, handing its output's tail to ``live`` while it
    runs (see the docstring). Raises ``OSError`` if the shell cannot start.

    The group enters ``_LIVE`` before the gate opens (no ``await`` between spawning and
    registering, none between registering and the ``try``) and leaves it when it is killed."""
    tail, watch = _Tail(limit), _Watch()
    with _Gate() as gate:
        process = await _spawn(command, cwd, gate.reader, confined)
        _LIVE.add(process.pid)
        deadline = anyio.move_on_after(timeout_s)
        try:
            gate.open()
            with deadline:
                await _drain(process, tail, watch, live)
        finally:
            await _end(process)
    timed_out = deadline.cancelled_caught and not watch.exited
    return _finished(process.returncode, tail, timed_out, watch.exited and not tail.ended)


async def start_group(
    command: str, cwd: str, confined: Confined | None = None
) -> anyio.abc.Process:
    """Start ``command`` the way ``run_local`` does (the same gated spawn, inside ``confined``'s
    sandbox, so whatever wraps one wraps both) but hand its process to the caller, which must
    end it with ``end_group``: a background task (``background.py``). Its group is in ``_LIVE``
    before the gate opens, so ``kill_all`` ends it with the process; no ``await`` between the
    spawn and the return."""
    with _Gate() as gate:
        process = await _spawn(command, cwd, gate.reader, confined)
        _LIVE.add(process.pid)
        gate.open()
    return process


async def end_group(process: anyio.abc.Process) -> None:
    """Kill the group of a process ``start_group`` started, deregister it and reap it."""
    await _end(process)


async def _spawn(
    command: str, cwd: str, gate: int, confined: Confined | None = None
) -> anyio.abc.Process:
    """Start the gated shell (``_GATED``) reading ``gate``, inside ``confined``'s sandbox if
    given. However long this takes to return (tests stretch it), the command does not run
    before the gate opens."""
    prefix = confined.prefix if confined is not None else []
    return await anyio.open_process(
        [*prefix, SHELL, "-c", _GATED, SHELL, command],
        stdin=gate,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=confined.env if confined is not None else _environment(),
        start_new_session=True,
    )


async def _drain(
    process: anyio.abc.Process, tail: _Tail, watch: _Watch, live: Live | None = None
) -> None:
    """Read the output until the shell has exited and the pipe has ended, or until
    ``DETACHED_GRACE_S`` after the exit if something outside the group holds the pipe open;
    meanwhile hand its tail to ``live``."""
    assert process.stdout is not None
    async with anyio.create_task_group() as tg:
        tg.start_soon(tail.read, process.stdout)
        if live is not None:
            tg.start_soon(_stream, tail, live)
        await process.wait()
        watch.exited = True
        _kill_live(process.pid)  # leftovers holding the pipe open go with the shell
        with anyio.move_on_after(DETACHED_GRACE_S):
            await tail.eof.wait()
        tg.cancel_scope.cancel()  # a detached holder of the pipe is not waited for


async def _stream(tail: _Tail, live: Live) -> None:
    """Hand the tail to ``live`` each time it grew, at most every ``LIVE_INTERVAL_S``; until
    cancelled (the drain ended)."""
    while True:
        await tail.grew.wait()
        tail.grew = anyio.Event()
        try:
            await live(tail.text(LIVE_BYTES))
        except Exception as exc:  # showing the output must never fail the command
            log.warning("live_output_failed", error=str(exc))
            return
        await anyio.sleep(LIVE_INTERVAL_S)


async def _end(process: anyio.abc.Process) -> None:
    """Kill and deregister the group, then reap the shell (shielded: a cancelled call reaps too)."""
    _kill_live(process.pid)
    with anyio.CancelScope(shield=True):
        await process.aclose()


def _kill_live(pgid: int) -> None:
    """Kill a registered group and deregister it in the same step: a SIGKILLed group has nothing
    left to kill, and a group id kept past it is one ``kill_all`` would signal (and log as killed
    at exit) although its group is gone and the id may be free."""
    kill_group(pgid)
    _LIVE.discard(pgid)


def _finished(code: int | None, tail: _Tail, timed_out: bool, detached: bool) -> Finished:
    died = code is not None and code < 0
    return Finished(
        tail.text(),
        tail.dropped > 0,
        None if timed_out or died or code is None else code,
        _signal_name(-code) if died and code is not None and not timed_out else None,
        timed_out,
        detached,
    )


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, signal.SIGKILL)


def kill_all() -> None:
    """Kill every command group still running (no reaping: the process is about to exit).

    A shell spawned but not yet registered is still at its gate, which closes with this process:
    it exits without running its command."""
    for pgid in list(_LIVE):
        log.warning("command_killed_at_exit", pgid=pgid)
        kill_group(pgid)
    _LIVE.clear()


def live_groups() -> frozenset[int]:
    return frozenset(_LIVE)


def _environment() -> dict[str, str]:
    return scrubbed(os.environ, frozenset())


class _Gate:
    """The pipe a gated shell (``_GATED``) reads its go-ahead line from, as its stdin.

    Both ends are close-on-exec (``os.pipe``); the shell gets only the read end, as fd 0, and
    replaces it with ``/dev/null`` when it goes ahead. ``open`` writes the line; leaving the
    ``with`` block closes both ends, so a shell still waiting then reads end of file and exits
    ``GATE_CLOSED_STATUS``. The read end stays open here until then, so ``open`` cannot meet a
    broken pipe even if the shell was killed from outside."""

    def __init__(self) -> None:
        self.reader, self._writer = os.pipe()

    def open(self) -> None:
        os.write(self._writer, b"\n")

    def __enter__(self) -> _Gate:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        os.close(self._writer)
        os.close(self.reader)


class _Tail:
    """Keeps the last ``limit`` bytes of a stream; ``ended`` (and ``eof``) once it ended."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0
        self.ended = False
        self.eof = anyio.Event()
        self.grew = anyio.Event()
        """Set when bytes arrived; the live stream replaces it with a fresh one as it reads."""

    async def read(self, stream: anyio.abc.ByteReceiveStream) -> None:
        async for chunk in stream:
            self.data += chunk
            excess = len(self.data) - self.limit
            if excess > 0:
                del self.data[:excess]
                self.dropped += excess
            self.grew.set()
        self.ended = True
        self.eof.set()

    def text(self, last: int | None = None) -> str:
        """What was kept, or its ``last`` bytes from the first line start in them."""
        data = bytes(self.data)
        if last is not None and len(data) > last:
            cut_mid_line = data[-last - 1] != ord("\n")
            data = data[-last:]
            newline = data.find(b"\n") if cut_mid_line else -1
            data = data[newline + 1 :] if 0 <= newline < len(data) - 1 else data
        elif not self.dropped:
            return data.decode("utf-8", "replace")
        while data and data[0] & 0xC0 == 0x80:  # do not start in a UTF-8 sequence
            data = data[1:]
        return data.decode("utf-8", "replace")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
