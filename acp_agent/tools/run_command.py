"""``run_command {command, cwd?, timeout_ms?}``: run a shell command in the workspace.

Permission first (action ``execute``, see ``permissions.py``). Then, when the client advertised
``terminal``, the command runs in the client's terminal: ``terminal/create`` (``/bin/sh -c``,
with an output byte limit), the terminal is shown in the tool call at once (``terminal``
content, so the user watches it live), ``terminal/wait_for_exit`` under the timeout
(``terminal/kill`` when it passes), ``terminal/output`` for the model, and ``terminal/release`` on
every way out — also when the call is cancelled, which kills the command. Otherwise it runs
locally (``process.py``): its own process group, the same timeout and output cap, killed on
cancel. The working directory must be inside the session roots. A non-zero exit, a kill or a
timeout make the result an error; the output is in it either way.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import structlog

from acp_agent.content import TextContent
from acp_agent.errors import PeerError, WireClosed
from acp_agent.tools.args import parse, string
from acp_agent.tools.base import (
    Location,
    ToolContext,
    ToolError,
    ToolKind,
    ToolOutput,
    confine,
    shown,
)
from acp_agent.tools.client import ClientTerminals, ExitStatus, TerminalOutput
from acp_agent.tools.display import TerminalView, shown_as
from acp_agent.tools.guard import authorize, command_key
from acp_agent.tools.permissions import Action
from acp_agent.tools.process import SHELL, Finished, run_local

log = structlog.get_logger("acp_agent.tools")

NAME = "run_command"
DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
OUTPUT_LIMIT = 64 << 10
RELEASE_GRACE_S = 5.0


class RunCommandArgs(msgspec.Struct, frozen=True):
    command: str
    cwd: str | None = None
    timeout_ms: int = DEFAULT_TIMEOUT_MS


class RunCommand:
    name = NAME
    description = (
        "Run a shell command (`/bin/sh -c`) in the session working directory, or in `cwd` inside "
        "the workspace. Returns the combined stdout and stderr (the last "
        f"{OUTPUT_LIMIT // 1024} KiB) and the exit code. No stdin; times out after `timeout_ms` "
        f"(default {DEFAULT_TIMEOUT_MS}, at most {MAX_TIMEOUT_MS})."
    )
    kind = ToolKind.EXECUTE
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "the shell command line"},
            "cwd": {"type": "string", "description": "working directory (default: session cwd)"},
            "timeout_ms": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS},
        },
        "required": ["command"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        command = string(arguments, "command")
        if command is None:
            return "Run command"
        shown = command if len(command) <= 80 else command[:79] + "…"
        return f"Run `{shown}`"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        cwd = string(arguments, "cwd")
        if cwd is None:
            return []
        where = shown(cwd, ctx)
        return [Location(where)] if where else []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = parse(arguments, RunCommandArgs, NAME)
        if not args.command.strip():
            raise ToolError(f"{NAME}: the command is empty")
        cwd = confine(args.cwd, ctx) if args.cwd is not None else ctx.cwd
        if not cwd.is_dir():
            raise ToolError(f"{NAME}: {cwd} is not a directory")
        key, label = command_key(args.command)
        await authorize(ctx, Action.EXECUTE, key, label)
        timeout_s = min(max(args.timeout_ms, 1), MAX_TIMEOUT_MS) / 1000
        if ctx.terminals is not None:
            return await _in_terminal(ctx, ctx.terminals, args.command, cwd, timeout_s)
        return await _locally(args.command, cwd, timeout_s)


async def _locally(command: str, cwd: Path, timeout_s: float) -> ToolOutput:
    try:
        done = await run_local(command, str(cwd), timeout_s, OUTPUT_LIMIT)
    except OSError as exc:
        raise ToolError(f"{NAME}: cannot start {SHELL}: {exc}") from exc
    text = report(command, done)
    return ToolOutput([TextContent(text=text)], is_error=failed(done))


async def _in_terminal(
    ctx: ToolContext, terminals: ClientTerminals, command: str, cwd: Path, timeout_s: float
) -> ToolOutput:
    try:
        terminal_id = await terminals.create(SHELL, ["-c", command], str(cwd), OUTPUT_LIMIT)
    except PeerError as exc:
        raise ToolError(f"{NAME}: the client could not start a terminal: {exc.message}") from exc
    try:
        if ctx.progress is not None and ctx.call is not None:
            await ctx.progress.show(ctx.call.id, [TerminalView(terminal_id)])
        status: ExitStatus | None = None
        with anyio.move_on_after(timeout_s):
            status = await terminals.wait_for_exit(terminal_id)
        if status is None:
            await terminals.kill(terminal_id)
        output = await terminals.output(terminal_id)
    except PeerError as exc:
        raise ToolError(f"{NAME}: the client's terminal failed: {exc.message}") from exc
    finally:
        await _release(terminals, terminal_id)
    done = _finished(output, status)
    return ToolOutput([shown_as(report(command, done), TerminalView(terminal_id))], failed(done))


async def _release(terminals: ClientTerminals, terminal_id: str) -> None:
    """Release (and so kill) the terminal, even when the call is being cancelled."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(RELEASE_GRACE_S):
        try:
            await terminals.release(terminal_id)
        except (PeerError, WireClosed) as exc:
            log.warning("terminal_release_failed", terminal_id=terminal_id, error=str(exc))


def _finished(output: TerminalOutput, status: ExitStatus | None) -> Finished:
    final = status or output.exit_status
    return Finished(
        output.output,
        output.truncated,
        final.exit_code if final and status is not None else None,
        final.signal if final and status is not None else None,
        timed_out=status is None,
    )


def failed(done: Finished) -> bool:
    return done.timed_out or done.exit_code != 0


def report(command: str, done: Finished) -> str:
    """What the model reads: the command, its output, how it ended."""
    parts = [f"$ {command}"]
    if done.truncated:
        parts.append(f"[output truncated: the last {OUTPUT_LIMIT // 1024} KiB follow]")
    if done.output:
        parts.append(done.output.rstrip("\n"))
    if done.timed_out:
        parts.append("[timed out: the command was killed]")
    elif done.signal is not None:
        parts.append(f"[killed by {done.signal}]")
    elif done.exit_code is not None:
        parts.append(f"[exit code {done.exit_code}]")
    else:
        parts.append("[ended without an exit status]")
    return "\n".join(parts)
