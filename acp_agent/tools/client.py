"""The client-side services a tool may use, each present only when the client advertised it.

- ``ClientWriter``: ``fs/write_text_file`` (capability ``fs.writeTextFile``); the editor writes the
  file and updates its open buffers.
- ``ClientTerminals``: ``terminal/*`` (capability ``terminal``); the command runs in the editor's
  terminal, which the user sees live.
- ``ClientElicitation``: ``elicitation/create`` in form mode (capability ``elicitation.form``);
  the ``ask_user`` tool asks the user through it.
- ``ToolProgress``: shows views of a running call (a terminal must be shown before it is
  released), or its output so far (a local command's tail, ``run_command``), each replacing
  what the call's card showed. Always present in a server; ``None`` in bare tool tests.

The ACP implementations live in ``acp/toolclient.py``; tests pass in-memory twins.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from acp_agent.tools.display import View


class ClientWriter(Protocol):
    async def write_text_file(self, path: str, content: str) -> None: ...


class ExitStatus(msgspec.Struct, frozen=True):
    exit_code: int | None = None
    signal: str | None = None


class TerminalOutput(msgspec.Struct, frozen=True):
    output: str
    truncated: bool = False
    exit_status: ExitStatus | None = None


class ClientTerminals(Protocol):
    async def create(
        self, command: str, args: list[str], cwd: str, output_byte_limit: int
    ) -> str: ...

    async def output(self, terminal_id: str) -> TerminalOutput: ...

    async def wait_for_exit(self, terminal_id: str) -> ExitStatus: ...

    async def kill(self, terminal_id: str) -> None: ...

    async def release(self, terminal_id: str) -> None: ...


class Elicited(msgspec.Struct, frozen=True):
    """The client's answer to an elicitation: ``accept`` (with ``content``), ``decline``,
    ``cancel``, or an action this agent does not know."""

    action: str
    content: dict[str, object] | None = None


class ClientElicitation(Protocol):
    async def ask(
        self, call_id: str | None, message: str, requested_schema: dict[str, object]
    ) -> Elicited: ...


class ToolProgress(Protocol):
    async def show(self, call_id: str, views: list[View]) -> None: ...

    async def output(self, call_id: str, text: str) -> None:
        """The running call's output so far (bounded by the tool), as its card's content."""
        ...
