"""The Python API: sessions with turns, injection and a durable journal — no ACP needed.

    async with Agent.open(state_dir, model) as agent:
        session = await agent.new_session(cwd="/work/project")
        await session.inject("The user prefers tabs.", source("plugin", name="prefs"))
        pending = await session.send("Reformat main.py")
        outcome = await pending.outcome()        # Finished(stop=end_turn) | Refused | Failed
        health = await session.when_idle()       # quiescent: no turn, no unfinished flush

``session.compact(instructions)`` (or sending ``/compact``) summarizes older history; with
``context_window=`` set to the model's window, sessions also compact on their own before a turn
when the history nears it (``acp_agent/session/compaction.py``).

Tools: sessions get ``read_file`` unless ``tools=`` says otherwise (``acp_agent.tools.registry
.coding_tools()`` is the server's set). Writes and commands are decided by each session's
``Permissions`` (``permissions=``; by default mode ``ask`` with nobody to ask, so they are refused).
``session.inject_workspace_instructions()`` injects ``AGENTS.md`` and friends as ``plugin`` context,
as the server does for every new session.

``inject()`` is the only way to add supplementary model context; ``send()`` and ``steer()``
carry only the direct prompt. With no turn open, ``inject()`` appends one source-tagged
``user/message`` at once and starts a flush (it returns before the flush completes); during a
turn it stages the context in the outbox for the next safe step boundary. ``when_idle()`` and
``dispose()`` wait for every unfinished flush.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from acp_agent.content import ContentBlock, TextContent
from acp_agent.hooks.bridge import HookSet, SessionToolHooks
from acp_agent.journal.events import Entry, SessionHeader, Source, SourceKind, ToolCallPart, source
from acp_agent.journal.files import FileFactory
from acp_agent.journal.writer import JournalHealth
from acp_agent.model.base import ModelProvider, Usage
from acp_agent.session.actor import SessionActor
from acp_agent.session.admission import AdditionalContext, Admission, AllowAll
from acp_agent.session.compaction import DEFAULT_CONTEXT_WINDOW, CompactionProgress
from acp_agent.session.crossref import snapshot
from acp_agent.session.manager import SessionManager
from acp_agent.session.ports import Reply, SessionDeps, SessionObserver
from acp_agent.session.signals import Outcome, Placement
from acp_agent.session.toolrun import ToolHooks, ToolRunner
from acp_agent.session.workspace import find_instructions
from acp_agent.tools.base import Tool, ToolContext
from acp_agent.tools.permissions import Permissions
from acp_agent.tools.read_file import ReadFile

__all__ = [
    "AdditionalContext",
    "Agent",
    "Injected",
    "PendingPrompt",
    "Session",
    "reference_session",
    "source",
]

Content = str | Sequence[ContentBlock]


def as_blocks(content: Content) -> list[ContentBlock]:
    return [TextContent(text=content)] if isinstance(content, str) else list(content)


class NullObserver:
    """Observes nothing; the journal (``Session.entries``) is the record."""

    async def appended(self, entry: Entry) -> None:
        pass

    async def text_delta(self, message_id: str, text: str) -> None:
        pass

    async def thought_delta(self, message_id: str, text: str) -> None:
        pass

    async def tool_started(self, call: ToolCallPart) -> None:
        pass

    async def journal_error(self, error: str, unflushed: int) -> None:
        pass

    async def titled(self, title: str) -> None:
        pass

    async def compaction_progress(
        self, compaction_id: str, progress: CompactionProgress, error: str | None
    ) -> None:
        pass

    async def usage(self, usage: Usage, context_window: int) -> None:
        pass


@dataclass(frozen=True)
class Injected:
    message_id: str
    placement: Placement


class PendingPrompt:
    """A prompt accepted into the session's FIFO; its outcome arrives when its turn ends."""

    def __init__(self, reply: Reply[Outcome]) -> None:
        self._reply = reply

    async def outcome(self) -> Outcome:
        return await self._reply.wait()


class Session:
    def __init__(self, actor: SessionActor, manager: SessionManager) -> None:
        self._actor = actor
        self._manager = manager

    @property
    def id(self) -> str:
        return self._actor.id

    @property
    def entries(self) -> list[Entry]:
        """Every event admitted so far, in journal order (durable or not yet flushed)."""
        return list(self._actor.entries)

    async def inject(self, content: Content, src: Source | None = None) -> Injected:
        message_id, placement = await self._actor.inject(
            as_blocks(content), src or source(SourceKind.PLUGIN)
        )
        return Injected(message_id, placement)

    async def inject_workspace_instructions(self) -> list[Injected]:
        """Inject each workspace instruction file of the session cwd (``AGENTS.md``, ...) as one
        ``plugin``-sourced message (``acp_agent/session/workspace.py``)."""
        found = await anyio.to_thread.run_sync(find_instructions, self._actor.header.cwd)
        return [await self.inject(f.content, f.source) for f in found]

    async def send(self, prompt: Content) -> PendingPrompt:
        return PendingPrompt(await self._actor.submit(as_blocks(prompt)))

    async def steer(self, prompt: Content) -> Placement:
        return await self._actor.steer(as_blocks(prompt))

    async def compact(self, instructions: str = "") -> PendingPrompt:
        """Queue a compaction like the prompt ``/compact instructions``; FIFO with prompts."""
        return PendingPrompt(await self._actor.compact(instructions))

    async def cancel(self) -> None:
        await self._actor.cancel()

    async def when_idle(self) -> JournalHealth:
        return await self._actor.when_idle()

    async def dispose(self) -> None:
        await self._manager.close(self._actor)


ToolsFactory = Callable[[SessionHeader], Sequence[Tool]]


class Agent:
    def __init__(self, manager: SessionManager) -> None:
        self._manager = manager

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        state_dir: Path,
        model: ModelProvider,
        *,
        hooks: HookSet | None = None,
        admission: Admission | None = None,
        tool_hooks: ToolHooks | None = None,
        tools: ToolsFactory | None = None,
        permissions: Callable[[SessionHeader], Permissions] | None = None,
        observer: Callable[[SessionHeader], SessionObserver] | None = None,
        max_steps: int = 64,
        file_factory: FileFactory | None = None,
        context_window: int = DEFAULT_CONTEXT_WINDOW,
    ) -> AsyncIterator[Agent]:
        def deps(header: SessionHeader) -> SessionDeps:
            allowed = permissions(header) if permissions else Permissions(session_id=header.id)
            context = ToolContext(header.id, Path(header.cwd), permissions=allowed)
            chosen = tools(header) if tools else [ReadFile()]
            hooked = SessionToolHooks(hooks) if hooks else None
            runner = ToolRunner(chosen, context, tool_hooks or hooked)
            admit = admission or (hooks.admission_for(header.cwd) if hooks else AllowAll())
            return SessionDeps(
                model, runner, admit, max_steps=max_steps, context_window=context_window
            )

        def observe(header: SessionHeader, _deps: SessionDeps) -> SessionObserver:
            return observer(header) if observer else NullObserver()

        async with anyio.create_task_group() as tg:
            manager = SessionManager(state_dir, tg, deps, observe, file_factory)
            try:
                yield cls(manager)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await manager.cancel_all()  # do not wait on turns nobody will finish
                    await manager.close_all()
                raise
            else:
                await manager.close_all()
            finally:
                tg.cancel_scope.cancel()

    async def new_session(
        self,
        cwd: str | Path,
        session_id: str | None = None,
        *,
        additional_directories: Sequence[str | Path] = (),
    ) -> Session:
        """``additional_directories``: more roots the session's file tools may use."""
        actor = await self._manager.create(str(cwd), session_id)
        actor.deps.tools.set_roots([Path(d) for d in additional_directories])
        return Session(actor, self._manager)

    async def open_session(self, session_id: str) -> Session:
        """An existing session: the live one, or the one on disk (as ``session/load`` opens it)."""
        actor = await self._manager.open(session_id)
        return Session(actor, self._manager)

    async def dispose(self) -> None:
        await self._manager.close_all()


async def reference_session(
    target: Session, state_dir: Path, referenced_id: str, prompt: Content
) -> tuple[Injected, PendingPrompt]:
    """Inject a snapshot of another session, then send a readable direct prompt.

    Two plain messages land in ``target``'s journal: a ``user/message`` with source
    ``{"kind": "session-ref", "sessionId", "seq"}`` and the prompt itself.
    """
    snap = snapshot(state_dir, referenced_id)
    injected = await target.inject(snap.content, snap.source)
    return injected, await target.send(prompt)
