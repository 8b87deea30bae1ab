"""The tool seam: what a tool declares to the model and to the client, and how it runs.

A tool gets its decoded arguments and a ``ToolContext`` (session roots, the client's file
system when the client advertised one). It answers with content blocks and an error flag; a
tool *failure* is a result with ``is_error=True`` that the model sees, not an exception.
Raising ``ToolError`` is the short way to produce such a result.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Protocol, runtime_checkable

import msgspec

from acp_agent.checkpoints.recorder import Recorder
from acp_agent.content import ContentBlock, TextContent
from acp_agent.sandbox.guard import SessionSandbox
from acp_agent.tools.background import TaskTable
from acp_agent.tools.client import ClientElicitation, ClientTerminals, ClientWriter, ToolProgress
from acp_agent.tools.permissions import CallInfo, Permissions


class ToolKind(StrEnum):
    """ACP ``ToolKind``."""

    READ = "read"
    EDIT = "edit"
    DELETE = "delete"
    MOVE = "move"
    SEARCH = "search"
    EXECUTE = "execute"
    THINK = "think"
    FETCH = "fetch"
    SWITCH_MODE = "switch_mode"
    OTHER = "other"


class Location(msgspec.Struct, frozen=True, omit_defaults=True):
    path: str
    line: int | None = None


class ClientFs(Protocol):
    """The client's file system (``fs/*``), present only when the client advertised it."""

    async def read_text_file(
        self, path: str, line: int | None = None, limit: int | None = None
    ) -> str: ...


class AgentArgs(msgspec.Struct, frozen=True):
    """An ``agent`` call's arguments (``subagent.py``)."""

    description: str
    prompt: str
    tools: list[str] | None = None


class Subagents(Protocol):
    """Runs ``agent`` calls: the session layer's (``session/subagents.py``)."""

    async def run(self, call: CallInfo, args: AgentArgs, ctx: ToolContext) -> ToolOutput:
        """Run the child to its end (cancelled with the call); its result as the tool's."""
        ...


@dataclass(frozen=True)
class ToolContext:
    """What a tool may use. ``roots`` are the extra session roots (``additionalDirectories``);
    ``call`` is set by the runner for each call; the client services are ``None`` unless the
    client advertised them; ``permissions`` decides writes and commands (``permissions.py``);
    ``checkpoints`` records what the tools change (``None``: nothing is recorded);
    ``tasks`` holds the session's background commands; ``sandbox`` confines the commands (``acp_agent/sandbox/``). Its default, ``off``, is for a
    context built by hand (the tools' unit tests); every door passes the session's own."""

    session_id: str
    cwd: Path
    fs: ClientFs | None = None
    roots: tuple[Path, ...] = field(default=())
    writer: ClientWriter | None = None
    terminals: ClientTerminals | None = None
    progress: ToolProgress | None = None
    permissions: Permissions = field(default_factory=Permissions)
    call: CallInfo | None = None
    elicitation: ClientElicitation | None = None
    checkpoints: Recorder | None = None
    """Records the files the edit tools and local commands change (``checkpoints/``)."""
    tasks: TaskTable | None = None
    """The session's background tasks (``background.py``); set by the session layer."""
    subagents: Subagents | None = None
    """Runs ``agent`` calls (``subagent.py``); set by the session layer, ``None`` at the
    deepest level."""
    sandbox: SessionSandbox = field(default_factory=SessionSandbox.off)

    def all_roots(self) -> tuple[Path, ...]:
        return (self.cwd, *self.roots)

    @functools.cached_property
    def shown_roots(self) -> ShownRoots:
        """The roots as ``shown`` compares them. Cached on the context, which is frozen: a
        context with other roots or another cwd is another object (``dataclasses.replace``)."""
        return ShownRoots.of(self.cwd, self.all_roots())


class ToolOutput(msgspec.Struct, frozen=True):
    content: list[ContentBlock]
    is_error: bool = False


class ToolError(Exception):
    """A failure the model should see as an error result."""

    def output(self) -> ToolOutput:
        return ToolOutput([TextContent(text=str(self))], is_error=True)


class Tool(Protocol):
    name: str
    description: str
    kind: ToolKind
    parameters: dict[str, object]

    def title(self, arguments: dict[str, object]) -> str: ...

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]: ...

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput: ...


@runtime_checkable
class Conditional(Protocol):
    """A tool offered to the model only while ``offered`` says so (``exit_plan_mode``: in plan
    mode); asked before every model request. A call made anyway still runs, and the tool
    refuses it itself if it must."""

    def offered(self, ctx: ToolContext) -> bool: ...


def confine(path_text: str, ctx: ToolContext) -> Path:
    """Resolve a tool path against the session cwd and refuse anything outside the roots."""
    candidate = Path(path_text)
    resolved = (
        (ctx.cwd / candidate).resolve() if not candidate.is_absolute() else candidate.resolve()
    )
    for root in ctx.all_roots():
        if resolved == root.resolve() or resolved.is_relative_to(root.resolve()):
            return resolved
    raise ToolError(f"path {path_text!r} is outside the session roots")


def shown(path_text: str, ctx: ToolContext) -> str | None:
    """Where a tool path points, for the client's UI (tool call locations, permission requests):
    joined to the cwd and normalized lexically; ``None`` outside the roots.

    It never touches the file system: replaying a long session shows thousands of calls, and
    resolving each path cost three ``resolve()`` walks of ``lstat`` calls (most of a replay's
    time). So a symlink is shown as the model named it; ``confine``, which every tool calls
    before touching anything, is the check that counts.
    """
    view = ctx.shown_roots
    joined = os.path.normpath(view.join(path_text))
    for top, prefix in view.tops:
        if joined == top or joined.startswith(prefix):
            return joined
    return None


@dataclass(frozen=True, slots=True)
class ShownRoots:
    """A context's roots as ``shown`` compares them, as strings: derived once per context (a
    replay shows thousands of calls; per call, ``os.path.join`` and hashing the roots' ``Path``s
    for a cache cost more than the rest of ``shown``)."""

    cwd_prefix: str
    """The cwd as ``os.path.join(cwd, name)`` puts it before a relative ``name``."""
    tops: tuple[tuple[str, str], ...]
    """Each root normalized, and the prefix of the paths below it."""

    @classmethod
    def of(cls, cwd: Path, roots: tuple[Path, ...]) -> ShownRoots:
        text = os.fspath(cwd)
        prefix = text if not text or text.endswith(os.sep) else text + os.sep
        tops = (os.path.normpath(root) for root in roots)
        return cls(prefix, tuple((top, top.rstrip(os.sep) + os.sep) for top in tops))

    def join(self, path_text: str) -> str:
        """``os.path.join(cwd, path_text)`` (POSIX: an absolute path replaces the cwd)."""
        return path_text if path_text.startswith(os.sep) else self.cwd_prefix + path_text
