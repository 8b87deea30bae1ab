"""Command hooks: run a configured program as a ``prompt_submit`` / ``pre_tool`` / ``post_tool``
hook (docs/contract.md §7; the wire format is in ``protocol.py``).

Theory of operation
-------------------
The hook runs with argv as given (no shell), in the session cwd, with the agent's environment
plus ``ACP_AGENT_SESSION_ID``, as the leader of a *new session and process group*
(``start_new_session=True``). Its stdin gets the JSON object and is closed; stdout and stderr
are pipes we read concurrently with the stdin write (so no pipe can fill up and deadlock us).
The hook's output never reaches the agent's stdout.

Bounds: stdout is capped (``STDOUT_LIMIT``; more is a failure and ends the hook), stderr is
kept up to ``STDERR_LIMIT`` (the rest is read and discarded), and the whole run is capped by
``timeout_ms``.

The process group is killed (SIGKILL) on *every* way out: as soon as the hook itself exits
(whatever it left running in its group must not outlive it — a hook that wants a lasting
background process has to start its own session), on timeout, on a stdout flood and when the
caller is cancelled (a cancelled turn ends its hooks). Then the hook is reaped, shielded from
cancellation. Processes that left the group with their own ``setsid`` are beyond reach. (The
group id is the leader's pid; the kernel does not hand that pid out again while any member of
the group lives, so the kill after reaping the leader cannot hit a stranger's group in practice.)

Exit status 0: stdout is the answer. Exit status 2: block with stderr as the reason. Anything
else — another status, death by a signal, a timeout, a program that cannot be started, an
unreadable answer — is a *hook failure*: ``HookFailure`` with a message saying what went wrong,
which the chain turns into allow-and-log (``fail = "open"``) or a block (``"closed"``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import anyio.abc
import msgspec

from acp_agent.hooks.decisions import PromptAllow, PromptBlock, PromptDecision, ToolAllow, ToolBlock
from acp_agent.hooks.kinds import FailPolicy, HookKind
from acp_agent.hooks.protocol import parse_answer, prompt_input, tool_input
from acp_agent.hooks.waterfall import HookFailure, PromptEvent, ToolDecision, ToolEvent
from acp_agent.journal.events import Source, SourceKind, source
from acp_agent.logs import get_logger

log = get_logger("acp_agent.hooks")

STDOUT_LIMIT = 1 << 20
STDERR_LIMIT = 64 << 10
DEFAULT_TIMEOUT_MS = 5000
BLOCK_EXIT_STATUS = 2
SESSION_ENV = "ACP_AGENT_SESSION_ID"
_STDERR_IN_MESSAGE = 2000


@dataclass(frozen=True)
class CommandHook:
    """One configured hook. ``matcher`` (tool hooks only) must match the whole tool name."""

    kind: HookKind
    command: tuple[str, ...]
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    fail: FailPolicy = FailPolicy.OPEN
    matcher: re.Pattern[str] | None = None

    @property
    def name(self) -> str:
        return shlex.join(self.command)

    def matches(self, tool_name: str) -> bool:
        return self.matcher is None or self.matcher.fullmatch(tool_name) is not None

    def default_source(self, call_id: str | None = None) -> Source:
        """``{"kind": "hook", "hook", "command"}`` (docs/contract.md §7); a tool hook's context is
        ``{"kind": "tool", ..., "callId"}`` (docs/contract.md §2: "returned by a tool hook; carries
        callId"), still naming the hook and its command."""
        fields: dict[str, object] = {"hook": str(self.kind), "command": self.command[0]}
        if call_id is None:
            return source(SourceKind.HOOK, **fields)
        return source(SourceKind.TOOL, **fields, callId=call_id)


class Completed(msgspec.Struct, frozen=True):
    """How a hook process ended: its status, stdout, and the kept part of stderr."""

    status: int
    stdout: bytes
    stderr: str


async def run_prompt_hook(hook: CommandHook, event: PromptEvent) -> PromptDecision:
    done = await run_command(hook, prompt_input(event), event.session_id, event.cwd)
    return _decide(hook, done, hook.default_source())


async def run_tool_hook(hook: CommandHook, event: ToolEvent) -> ToolDecision:
    payload = tool_input(hook.kind, event)
    done = await run_command(hook, payload, event.session_id, event.cwd)
    match _decide(hook, done, hook.default_source(event.call.id)):
        case PromptBlock(reason=reason):
            return ToolBlock(reason)
        case PromptAllow(additional_contexts=contexts):
            return ToolAllow(contexts)


def _decide(hook: CommandHook, done: Completed, default: Source) -> PromptDecision:
    if done.status == 0:
        return parse_answer(hook.kind, done.stdout, default, hook.name)
    if done.status == BLOCK_EXIT_STATUS:
        return PromptBlock(done.stderr or f"blocked by {hook.kind} hook {hook.name!r}")
    if done.status < 0:
        raise HookFailure(f"killed by {_signal_name(-done.status)}{_stderr_note(done.stderr)}")
    raise HookFailure(f"exited with status {done.status}{_stderr_note(done.stderr)}")


async def run_command(hook: CommandHook, payload: bytes, session_id: str, cwd: str) -> Completed:
    """Run the hook process to its end (or kill it); raises ``HookFailure`` on timeout, on a
    stdout flood and when the program cannot be started."""
    env = {**os.environ, SESSION_ENV: session_id}
    try:
        process = await anyio.open_process(
            list(hook.command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise HookFailure(f"cannot start {hook.command[0]!r}: {exc}") from exc
    stdout, stderr = _Capture(STDOUT_LIMIT), _Capture(STDERR_LIMIT)
    try:
        with anyio.move_on_after(hook.timeout_ms / 1000) as deadline:
            await _communicate(process, payload, stdout, stderr)
    finally:
        _kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    if deadline.cancelled_caught:
        raise HookFailure(f"timed out after {hook.timeout_ms} ms{_stderr_note(stderr.text())}")
    if stdout.overflowed:
        raise HookFailure(f"wrote more than {STDOUT_LIMIT} bytes to stdout")
    assert process.returncode is not None
    done = Completed(process.returncode, bytes(stdout.data), stderr.text())
    log.debug(
        "hook_finished", hook=str(hook.kind), name=hook.name, status=done.status, stderr=done.stderr
    )
    return done


async def _communicate(
    process: anyio.abc.Process, payload: bytes, stdout: _Capture, stderr: _Capture
) -> None:
    assert process.stdin and process.stdout and process.stderr

    def kill() -> None:
        _kill_group(process.pid)

    async with anyio.create_task_group() as tg:
        tg.start_soon(_feed, process.stdin, payload)
        tg.start_soon(stdout.drain, process.stdout, kill)
        tg.start_soon(stderr.drain, process.stderr, None)
        await process.wait()
        kill()  # the hook is done; its leftovers still holding a pipe end go with it


async def _feed(stream: anyio.abc.ByteSendStream, payload: bytes) -> None:
    try:
        await stream.send(payload)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # the hook does not read its stdin: its choice
    finally:
        await stream.aclose()


class _Capture:
    """A bounded byte sink. Over ``limit`` it sets ``overflowed`` and either stops reading and
    calls ``on_overflow`` (stdout) or keeps reading and discarding (stderr)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.overflowed = False

    async def drain(
        self, stream: anyio.abc.ByteReceiveStream, on_overflow: Callable[[], None] | None
    ) -> None:
        async for chunk in stream:
            room = self.limit - len(self.data)
            self.data += chunk[:room]
            if len(chunk) > room:
                self.overflowed = True
                if on_overflow is not None:
                    on_overflow()
                    return

    def text(self) -> str:
        body = self.data.decode("utf-8", "replace").strip()
        return f"{body}\n[stderr truncated]" if self.overflowed else body


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, signal.SIGKILL)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _stderr_note(stderr: str) -> str:
    if not stderr:
        return ""
    tail = stderr if len(stderr) <= _STDERR_IN_MESSAGE else "…" + stderr[-_STDERR_IN_MESSAGE:]
    return f": {tail}"
