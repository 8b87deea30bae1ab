"""The Python API: sessions with turns, injection and a durable journal — no ACP needed.

    async with Agent.open(state_dir, model) as agent:
        session = await agent.new_session(cwd="/work/project")
        await session.inject("The user prefers tabs.", source("plugin", name="prefs"))
        pending = await session.send("Reformat main.py")
        outcome = await pending.outcome()        # Finished(stop=end_turn) | Refused | Failed
        health = await session.when_idle()       # quiescent: no turn, no unfinished flush

``session.compact(instructions)`` (or sending ``/compact``) summarizes older history; with
``context_window=`` set to the model's window, sessions also compact on their own before a turn
when the history nears it (``acp_agent/turn/compaction.py``). ``compact_session`` does the
same to a closed session on disk, with no server.

A ``Session`` here is the very one the ACP server drives (``acp_agent/session/service.py``): its
``mode`` and ``model`` are set and persisted the same way (``set_mode``, ``set_model``), and
``Agent.open_session`` restores them exactly as ``session/load`` does. Pass a ``ModelCatalog``
instead of one provider to offer the same model choices as a server. Refusals are the plain
exceptions of ``acp_agent/session/errors.py`` (``UnknownSession``, ``SessionUnavailable`` …).

Tools: sessions get ``read_file`` unless ``tools=`` says otherwise (``acp_agent.tools.registry
.coding_tools()`` is the server's set; ``coding_tools(web_fetch=WebFetchSettings(allow_private=
True))`` is the config file's ``[web_fetch]`` table, ``acp_agent/tools/web_settings.py``). Writes and commands are decided by each session's
``Permissions`` (``permissions=``; by default mode ``ask`` with nobody to ask, so they are refused).
Permission rules: ``[permissions]``-style rules are given per session through ``permissions=``
(``Permissions(rules=RuleBook(config_rules, state_dir).for_session(cwd))``); by default each
session sees the project rules saved under ``state_dir``; ``/permissions [remove N]`` works as
over ACP (``Session.rules`` holds them).
Commands (``run_command``) run in the OS sandbox (``acp_agent/sandbox/``): ``sandbox=`` a
``Sandbox`` (its ``configured`` policy, what it hides, which credentials it drops); by default
``Sandbox(state_dir)``, the server's default policy with the state directory hidden.
``session.inject_workspace_instructions()`` injects ``AGENTS.md`` and friends as ``plugin`` context,
as the server does for every new session.

Traces: with ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``) set and the ``otel``
extra installed, ``Agent.open`` exports the server's very spans (docs/contract.md §14), flushed
when it ends.

``inject()`` is the only way to add supplementary model context; ``send()`` and ``steer()``
carry only the direct prompt. With no turn open, ``inject()`` appends one source-tagged
``user/message`` at once and starts a flush (it returns before the flush completes); during a
turn it stages the context in the outbox for the next safe step boundary. ``when_idle()`` and
``dispose()`` wait for every unfinished flush.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from acp_agent import telemetry
from acp_agent.hooks.bridge import HookSet, SessionToolHooks
from acp_agent.journal.events import SessionHeader, Source, SourceKind, source
from acp_agent.journal.files import FileFactory
from acp_agent.journal.writer import JournalHealth
from acp_agent.model.base import ModelProvider
from acp_agent.model.registry import ModelCatalog
from acp_agent.model.script import ScriptModel
from acp_agent.model.window import DEFAULT_CONTEXT_WINDOW
from acp_agent.permissions.book import RuleBook
from acp_agent.sandbox.guard import Sandbox, SessionSandbox
from acp_agent.session.crossref import snapshot
from acp_agent.session.errors import (
    BadSessionId,
    ForkRefused,
    ModelKeyMissing,
    SessionError,
    SessionIdInUse,
    SessionUnavailable,
    UnknownModel,
    UnknownSession,
)
from acp_agent.session.service import (
    Content,
    Injected,
    PendingPrompt,
    Session as _Session,
    Sessions,
)
from acp_agent.session.system_prompt import PromptConfig, PromptMode, SessionPrompt
from acp_agent.session.wiring import Models, NullObserver, OneModel, Wiring
from acp_agent.tools.base import Tool, ToolContext
from acp_agent.tools.permissions import Mode, Permissions
from acp_agent.tools.read_file import ReadFile
from acp_agent.turn.admission import AdditionalContext, Admission, AllowAll
from acp_agent.turn.ports import SessionObserver
from acp_agent.turn.toolrun import ToolHooks, ToolRunner
from acp_agent.turn.vocabulary import Failed, Finished, Outcome, Placement, Refused, StopReason

__all__ = [
    "AdditionalContext",
    "Agent",
    "BadSessionId",
    "Content",
    "Failed",
    "Finished",
    "ForkRefused",
    "Injected",
    "JournalHealth",
    "Mode",
    "ModelCatalog",
    "ModelKeyMissing",
    "ModelProvider",
    "Outcome",
    "PendingPrompt",
    "Placement",
    "PromptConfig",
    "PromptMode",
    "Refused",
    "ScriptModel",
    "Session",
    "SessionError",
    "SessionIdInUse",
    "SessionPrompt",
    "SessionUnavailable",
    "Source",
    "SourceKind",
    "StopReason",
    "UnknownModel",
    "UnknownSession",
    "compact_session",
    "reference_session",
    "source",
]

ToolsFactory = Callable[[SessionHeader], Sequence[Tool]]
Session = _Session[SessionObserver]
"""A session driven from Python (``acp_agent/session/service.py``)."""


class Agent:
    """Sessions of one state directory, driven from Python; see the module docstring."""

    def __init__(self, sessions: Sessions[SessionObserver]) -> None:
        self._sessions = sessions

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        state_dir: Path,
        model: ModelProvider | ModelCatalog,
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
        system_prompt: PromptConfig | None = None,
        sandbox: Sandbox | None = None,
    ) -> AsyncIterator[Agent]:
        models: Models = model if isinstance(model, ModelCatalog) else OneModel(model)
        commands = sandbox or Sandbox(state_dir)

        def runner(header: SessionHeader) -> ToolRunner:
            allowed = permissions(header) if permissions else default_permissions(header)
            confined = SessionSandbox(commands)
            context = ToolContext(
                header.id, Path(header.cwd), permissions=allowed, sandbox=confined
            )
            chosen = tools(header) if tools else [ReadFile()]
            hooked = SessionToolHooks(hooks) if hooks else None
            return ToolRunner(chosen, context, tool_hooks or hooked)

        def default_permissions(header: SessionHeader) -> Permissions:
            rules = RuleBook(state_dir=state_dir).for_session(header.cwd)
            return Permissions(session_id=header.id, rules=rules)

        def admit(header: SessionHeader) -> Admission:
            return admission or (hooks.admission_for(header.cwd) if hooks else AllowAll())

        def observe(header: SessionHeader, _tools: ToolRunner) -> SessionObserver:
            return observer(header) if observer else NullObserver()

        telemetry.configure()  # traces, if the ``OTEL_*`` variables ask (the server's own)
        instructions = system_prompt or PromptConfig()
        wiring = Wiring(models, runner, admit, observe, context_window, max_steps, instructions)
        try:
            async with anyio.create_task_group() as tg:
                sessions = Sessions(state_dir, tg, wiring, file_factory)
                try:
                    yield cls(sessions)
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        await sessions.cancel_all()  # do not wait on turns nobody will finish
                        await sessions.close_all()
                    raise
                else:
                    await sessions.close_all()
                finally:
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            raise _alone(group) from None
        finally:
            if telemetry.enabled():  # the sessions' spans exported when the agent closes
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(telemetry.flush)

    async def new_session(
        self,
        cwd: str | Path,
        session_id: str | None = None,
        *,
        additional_directories: Sequence[str | Path] = (),
    ) -> Session:
        """``additional_directories``: more roots the session's file tools may use."""
        session = await self._sessions.create(str(cwd), session_id)
        session.set_roots([Path(d) for d in additional_directories])
        return session

    async def open_session(self, session_id: str) -> Session:
        """An existing session: the live one, or the one on disk with its saved mode and model
        (exactly as ``session/load`` opens it)."""
        return await self._sessions.open(session_id)

    async def fork_session(
        self, parent_id: str, cwd: str | Path, *, at_seq: int | None = None
    ) -> Session:
        """A new session from ``parent_id``'s history up to a stable boundary (default: the
        last one), as ``session/fork`` makes it."""
        return await self._sessions.fork(parent_id, str(cwd), at_seq=at_seq)

    async def dispose(self) -> None:
        await self._sessions.close_all()


def _alone(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """What the caller's block raised, as it raised it: the task group that runs the sessions
    wraps it in a group of one (a group of several is a real group, and stays one)."""
    return group.exceptions[0] if len(group.exceptions) == 1 else group


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


async def compact_session(
    state_dir: Path,
    session_id: str,
    model: ModelProvider,
    *,
    instructions: str = "",
    context_window: int = DEFAULT_CONTEXT_WINDOW,
) -> Outcome:
    """Compact a session on disk as ``/compact`` would, with no server; return the outcome.

    Opens the session like ``session/load`` (taking its lock: raises ``SessionUnavailable``
    while a server holds it, ``ResourceNotFound`` when there is no such session), runs one
    manual compaction, and closes it durably. ``Finished(end_turn)`` also when there was
    nothing to compact; ``Failed`` when the model failed (nothing is appended then).
    """
    async with Agent.open(state_dir, model, context_window=context_window) as agent:
        session = await agent.open_session(session_id)
        outcome = await (await session.compact(instructions)).outcome()
        await session.dispose()
    return outcome
