"""``run_command {command, cwd?, timeout_ms?}``: run a shell command in the workspace.

Permission first (action ``execute``, see ``permissions.py``). Then, when the client advertised
``terminal``, the command runs in the client's terminal: ``terminal/create`` (``/bin/sh -c``,
with an output byte limit), the terminal is shown in the tool call at once (``terminal``
content, so the user watches it live), ``terminal/wait_for_exit`` under the timeout
(``terminal/kill`` when it passes), ``terminal/output`` for the model, and ``terminal/release`` on
every way out — also when the call is cancelled, which kills the command. The client starts the
command when it creates the terminal, and only the id it answers lets us release it: so a call
cancelled while ``terminal/create`` is pending still waits for that answer (``CLIENT_GRACE_S``
at most) and then releases the terminal. Otherwise it runs locally (``process.py``): its own
process group, the same timeout and output cap, killed on cancel; every root's tree is recorded
in the session's checkpoints before and after it (``ctx.checkpoints``). The working directory must be
inside the session roots. A non-zero exit, a kill or a timeout make the result an error; the
output is in it either way. The result is bounded: the output's last ``OUTPUT_LIMIT`` bytes, the
command echoed up to ``MAX_ECHO_CHARS``. A shell that exited while a detached process (its own
session) still holds the output open is reported by its exit status, with ``DETACHED_NOTE``.
A local command's output reaches the call's card while it runs (``ToolProgress.output``: its
last ``process.LIVE_BYTES``, at most every ``process.LIVE_INTERVAL_S``), each update replacing
the last, the final result replacing them all. With ``background: true`` the command becomes
a task of the session (``task_tools.py``, ``background.py``) once permitted, always run
locally, and the result names its id at once.

Every command runs under the session's sandbox policy (``ctx.sandbox``, ``acp_agent/sandbox/``):
locally as ``bwrap … -- /bin/sh -c COMMAND``, and in a client's terminal with that same argv
(``terminal/create``'s ``command`` is ``bwrap``). A policy other than ``off`` whose sandbox cannot
start refuses the command (a failed result naming the sandbox, why and the fix): it never runs
unsandboxed. The result's first line names the policy it ran under (``sandbox: POLICY``).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import msgspec

from acp_agent.content import TextContent
from acp_agent.errors import PeerError, WireClosed
from acp_agent.logs import get_logger
from acp_agent.permissions.patterns import Target
from acp_agent.permissions.suggest import command_label
from acp_agent.sandbox.guard import Confined, SandboxUnavailable
from acp_agent.tools.args import located, parse, string
from acp_agent.tools.base import (
    Location,
    ToolContext,
    ToolError,
    ToolKind,
    ToolOutput,
    confine,
)
from acp_agent.tools.client import ClientTerminals, ExitStatus, TerminalOutput
from acp_agent.tools.display import TerminalView, shown_as
from acp_agent.tools.guard import authorize, subject
from acp_agent.tools.permissions import Action
from acp_agent.tools.process import SHELL, Finished, Live, run_local
from acp_agent.tools.task_tools import in_background

log = get_logger("acp_agent.tools")

NAME = "run_command"
DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
OUTPUT_LIMIT = 64 << 10
MAX_ECHO_CHARS = 2000
"""The command is echoed in the result up to this many characters (it is in the call anyway)."""
CLIENT_GRACE_S = 5.0
"""How long a cancelled call still waits for the client to answer create or release."""


class RunCommandArgs(msgspec.Struct, frozen=True):
    command: str
    cwd: str | None = None
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    background: bool = False


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
            "background": {
                "type": "boolean",
                "description": "start it as a background task and answer at once with its id "
                "(no timeout; read it with task_output, end it with task_stop; its ending is "
                "reported to you as a message)",
            },
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
        return located(arguments, ctx, "cwd")

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = parse(arguments, RunCommandArgs, NAME)
        if not args.command.strip():
            raise ToolError(f"{NAME}: the command is empty")
        cwd = confine(args.cwd, ctx) if args.cwd is not None else ctx.cwd
        if not cwd.is_dir():
            raise ToolError(f"{NAME}: {cwd} is not a directory")
        asked = subject(ctx, Target.RUN_COMMAND, args.command, cwd)
        await authorize(ctx, Action.EXECUTE, asked, command_label(args.command))
        timeout_s = min(max(args.timeout_ms, 1), MAX_TIMEOUT_MS) / 1000
        confined = await _confined(ctx, cwd)
        if args.background:
            return await in_background(ctx, args.command, cwd, confined)
        if ctx.terminals is not None:
            return await _in_terminal(ctx, ctx.terminals, args.command, confined, cwd, timeout_s)
        return await _locally(ctx, args.command, confined, cwd, timeout_s)


async def _confined(ctx: ToolContext, cwd: Path) -> Confined:
    """The session's sandbox around a command in ``cwd``; a refusal is the call's result."""
    try:
        return await ctx.sandbox.confine(ctx.all_roots(), cwd)
    except SandboxUnavailable as exc:
        log.warning("command_refused_unsandboxed", policy=str(ctx.sandbox.policy), error=str(exc))
        raise ToolError(f"sandbox: {ctx.sandbox.policy}\n{NAME}: {exc}") from exc


async def _locally(
    ctx: ToolContext, command: str, confined: Confined, cwd: Path, timeout_s: float
) -> ToolOutput:
    recorder = ctx.checkpoints
    pending = await recorder.before_all(ctx.all_roots()) if recorder is not None else []
    live = _live(ctx, command)
    try:
        done = await run_local(command, str(cwd), timeout_s, OUTPUT_LIMIT, live, confined)
    except OSError as exc:
        started = confined.prefix[0] if confined.prefix else SHELL
        raise ToolError(f"{confined.note}\n{NAME}: cannot start {started}: {exc}") from exc
    finally:
        if recorder is not None:
            await recorder.after(pending)  # shielded: a cancelled command is recorded too
    text = report(command, done, confined.note)
    return ToolOutput([TextContent(text=text)], is_error=failed(done))


def _live(ctx: ToolContext, command: str) -> Live | None:
    """Where a local command's output goes while it runs: the call's card (``process.py``
    bounds and throttles it), shown like the final result, ``$ COMMAND`` first."""
    progress, call = ctx.progress, ctx.call
    if progress is None or call is None:
        return None

    async def show(tail: str) -> None:
        await progress.output(call.id, f"$ {_echoed(command)}\n{tail.rstrip(chr(10))}")

    return show


async def _in_terminal(
    ctx: ToolContext,
    terminals: ClientTerminals,
    command: str,
    confined: Confined,
    cwd: Path,
    timeout_s: float,
) -> ToolOutput:
    created: list[str] = []  # the terminal from the moment its id arrives: released from then on
    argv = [*confined.prefix, SHELL, "-c", command]
    try:
        terminal_id = await _create(terminals, argv, cwd, created)
        output, status = await _watch(ctx, terminals, terminal_id, timeout_s)
    finally:
        if created:
            await _release(terminals, created[0])
    done = _finished(output, status)
    text = report(command, done, confined.note)
    return ToolOutput([shown_as(text, TerminalView(terminal_id))], failed(done))


async def _create(
    terminals: ClientTerminals, argv: list[str], cwd: Path, created: list[str]
) -> str:
    """``terminal/create``; its id is appended to ``created`` as it arrives, even if the call is
    cancelled meanwhile.

    Once asked, the client runs the command, and the answer to a request abandoned on
    cancellation is dropped by the connection: the terminal would never be released, the command
    never killed. So the request is shielded, with a deadline ``CLIENT_GRACE_S`` after a
    cancellation (``_grace_once_cancelled``); the cancellation then strikes at the next
    checkpoint, and the caller releases what is in ``created``. A failure of the request is
    raised after the watch's task group, which would wrap it in an exception group."""
    shield = anyio.CancelScope(shield=True)
    errors: list[Exception] = []
    async with anyio.create_task_group() as watch:
        watch.start_soon(_grace_once_cancelled, shield)
        with shield:
            try:
                created.append(await _request_terminal(terminals, argv, cwd))
            except Exception as exc:  # raised below, as it is
                errors.append(exc)
        watch.cancel_scope.cancel()
    if errors:
        raise errors[0]
    if shield.cancelled_caught:
        log.warning("terminal_create_abandoned", command=argv[-1], grace_s=CLIENT_GRACE_S)
        await anyio.lowlevel.checkpoint()  # only a cancelled call gets here: this raises
    return created[0]


async def _request_terminal(terminals: ClientTerminals, argv: list[str], cwd: Path) -> str:
    """``terminal/create`` for ``argv``: ``/bin/sh -c COMMAND``, or the sandbox's ``bwrap``
    running it."""
    try:
        return await terminals.create(argv[0], argv[1:], str(cwd), OUTPUT_LIMIT)
    except PeerError as exc:
        raise ToolError(f"{NAME}: the client could not start a terminal: {exc.message}") from exc


async def _grace_once_cancelled(shield: anyio.CancelScope) -> None:
    """Give ``shield`` a deadline ``CLIENT_GRACE_S`` from when this task is cancelled (the call
    was cancelled, or the shielded request is done and ``_create`` ends the watch)."""
    try:
        await anyio.sleep_forever()
    finally:
        shield.deadline = min(shield.deadline, anyio.current_time() + CLIENT_GRACE_S)


async def _watch(
    ctx: ToolContext, terminals: ClientTerminals, terminal_id: str, timeout_s: float
) -> tuple[TerminalOutput, ExitStatus | None]:
    """Show the terminal, wait for its exit under the timeout (killing it when that passes) and
    read its output; the status is ``None`` when it timed out."""
    try:
        if ctx.progress is not None and ctx.call is not None:
            await ctx.progress.show(ctx.call.id, [TerminalView(terminal_id)])
        status: ExitStatus | None = None
        with anyio.move_on_after(timeout_s):
            status = await terminals.wait_for_exit(terminal_id)
        if status is None:
            await terminals.kill(terminal_id)
        return await terminals.output(terminal_id), status
    except PeerError as exc:
        raise ToolError(f"{NAME}: the client's terminal failed: {exc.message}") from exc


async def _release(terminals: ClientTerminals, terminal_id: str) -> None:
    """Release (and so kill) the terminal, even when the call is being cancelled."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CLIENT_GRACE_S):
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


DETACHED_NOTE = (
    "[a process the command started is still running detached and holding its output open; "
    "output after the shell exited is not shown]"
)


def _echoed(command: str) -> str:
    if len(command) <= MAX_ECHO_CHARS:
        return command
    return f"{command[:MAX_ECHO_CHARS]}… [{len(command) - MAX_ECHO_CHARS:,} more characters]"


def report(command: str, done: Finished, sandbox_note: str | None = None) -> str:
    """What the model reads: the policy it ran under, the command, its output, how it ended."""
    parts = [sandbox_note] if sandbox_note else []
    parts.append(f"$ {_echoed(command)}")
    if done.truncated:
        parts.append(f"[output truncated: the last {OUTPUT_LIMIT // 1024} KiB follow]")
    if done.output:
        parts.append(done.output.rstrip("\n"))
    if done.detached:
        parts.append(DETACHED_NOTE)
    if done.timed_out:
        parts.append("[timed out: the command was killed]")
    elif done.signal is not None:
        parts.append(f"[killed by {done.signal}]")
    elif done.exit_code is not None:
        parts.append(f"[exit code {done.exit_code}]")
    else:
        parts.append("[ended without an exit status]")
    return "\n".join(parts)
