"""The session layer's façade: one way to create, open, drive and close sessions, for every door.

``Sessions`` is the registry of the sessions open in this process (one record each, removed when
the session closes) and their lifecycle: ``create``, ``open`` (the live session, or the one on
disk), ``fork``, ``get``, ``close``. It builds each session's ``SessionDeps`` from the front door's
``Wiring`` (``wiring.py``) and starts its actor in the task group it was given.

``Session`` is one open session: what a caller may do with it (``send``, ``inject``, ``steer``,
``compact``, ``cancel``, ``when_idle``, ``dispose``), what it is set up with (workspace
instructions, extra roots, MCP servers) and its settings (mode, model and the client's system
prompt), which are set *and* persisted here (``settings.py``). Its system message is rendered
here for every request (``system_prompt.py``). A session opened from disk — ``session/load``, ``resume``,
``fork``, ``Agent.open_session`` alike — gets its saved settings back in ``Session.restore`` (``Sessions._open_from_disk``);
a model no longer on offer (or whose key is missing) is logged ``session_model_unavailable`` and
the session stays on the default.

Refusals are ``errors.py``'s plain exceptions; the ACP router maps them to wire errors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import replace
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, Generic

import anyio
import msgspec
from anyio.abc import TaskGroup

from acp_agent.checkpoints.recorder import Recorder
from acp_agent.checkpoints.shadow import ShadowError, forget_everywhere
from acp_agent.commands import dispatch
from acp_agent.commands.skills import Skill, find_skills, skill_dirs, skills_prompt
from acp_agent.commands.status import SessionStatus
from acp_agent.commands.words import RESERVED, Command
from acp_agent.content import ContentBlock, ImageContent, JsonObject, TextContent
from acp_agent.journal.errors import JournalError, JournalFlushError
from acp_agent.journal.events import Entry, SessionHeader, Source, SourceKind, source
from acp_agent.journal.files import FileFactory
from acp_agent.journal.paths import journal_path, session_dir
from acp_agent.journal.store import journal_store
from acp_agent.journal.writer import JournalHealth, JournalWriter
from acp_agent.logs import get_logger
from acp_agent.mcp.config import McpServerConfig
from acp_agent.model.base import Capabilities, ModelProvider, context_window_of
from acp_agent.permissions.book import SessionRules
from acp_agent.sandbox.guard import SessionSandbox
from acp_agent.sandbox.policy import SandboxPolicy, parse_policy
from acp_agent.session import shelf
from acp_agent.session.catalog import set_client_title, write_title
from acp_agent.session.errors import (
    ModelKeyMissing,
    SessionBusy,
    SessionIdInUse,
    SessionUnavailable,
    UnknownModel,
    UnknownSession,
)
from acp_agent.session.opening import Opened, create_journal, fork_journal, open_journal
from acp_agent.session.resources import with_linked_files
from acp_agent.session.settings import SessionSettings, load_settings, save_settings
from acp_agent.session.shelf import delete_session, existing_dir, refuse_if_held
from acp_agent.session.subagents import SessionSubagents, read_link
from acp_agent.session.system_prompt import SessionPrompt, render
from acp_agent.session.wiring import Obs, Wiring
from acp_agent.session.workspace import find_instructions
from acp_agent.tools.background import TaskTable
from acp_agent.tools.permissions import Mode, Permissions, parse_mode
from acp_agent.tools.subagent import MAX_DEPTH
from acp_agent.tools.task_record import TaskRecord
from acp_agent.turn.actor import SessionActor
from acp_agent.turn.gauge import Learned
from acp_agent.turn.ports import Reply, SessionDeps, SessionObserver, new_id, now_ms
from acp_agent.turn.vocabulary import Finished, Outcome, Placement, StopReason, TurnUsage

log = get_logger("acp_agent.sessions")

Content = str | Sequence[ContentBlock]
IMAGES_NOT_SEEN = (
    "This session's model does not take images: it was told an image was attached, "
    "not shown it. Switch to a model that takes images to have it look."
)


def as_blocks(content: Content) -> list[ContentBlock]:
    return [TextContent(text=content)] if isinstance(content, str) else list(content)


class Injected(msgspec.Struct, frozen=True):
    message_id: str
    placement: Placement


class PendingPrompt:
    """A prompt accepted into the session's FIFO; its outcome arrives when its turn ends.

    A slash command the agent answered itself (``/status`` …) is one too, ended already:
    ``answer`` holds what it said, and its outcome is ``end_turn``."""

    def __init__(
        self,
        reply: Reply[Outcome],
        answer: dispatch.Answer | None = None,
        actor: SessionActor | None = None,
    ) -> None:
        self._reply = reply
        self.answer = answer
        self._actor = actor

    @classmethod
    def answered(cls, answer: dispatch.Answer) -> PendingPrompt:
        reply: Reply[Outcome] = Reply()
        reply.set(Finished(StopReason.END_TURN))
        return cls(reply, answer)

    async def outcome(self) -> Outcome:
        return await self._reply.wait()

    async def cancel(self) -> None:
        """End this prompt only (``$/cancel_request``): queued, it never runs; running, its
        turn ends cancelled; the session's other prompts run as if it had not been sent."""
        if self._actor is not None:
            await self._actor.cancel_prompt(self._reply)


class Setting(StrEnum):
    """A setting a session changed without its client asking (a command, a tool)."""

    MODE = "mode"
    MODEL = "model"


class Session(Generic[Obs]):
    def __init__(self, actor: SessionActor, sessions: Sessions[Obs], observer: Obs) -> None:
        self.actor = actor
        self.observer = observer
        self._sessions = sessions
        self._chosen_model: str | None = None
        self._prompt: SessionPrompt | None = None
        self.skills: list[Skill] = []
        """What ``find_skills`` found last."""
        self._skills_found = False
        self.unavailable_model: str | None = None
        """The saved model ``restore`` could not use (the session fell back to the default)."""
        actor.deps.system_prompt = self.system_prompt
        actor.deps.compact_for = self.compact_for
        actor.deps.tools.permissions.on_switch = self._switched_inside
        actor.deps.remember_learned = self._remember_learned

    @property
    def id(self) -> str:
        return self.actor.id

    @property
    def header(self) -> SessionHeader:
        return self.actor.header

    @property
    def entries(self) -> list[Entry]:
        """Every event admitted so far, in journal order (durable or not yet flushed)."""
        return list(self.actor.entries)

    @property
    def cwd(self) -> str:
        return self.actor.header.cwd

    def status(self) -> SessionStatus:
        """The session as it stands, from live state only (``/status``)."""
        level = (self.thought_level or "default") if self.thinks else None
        return SessionStatus(
            self.id,
            self.journal_location,
            self.cwd,
            self.model,
            str(self.mode),
            level,
            self.context_window,
            self.context_used,
            self.usage_total,
            self.actor.cost_total,
            self.turns,
            tuple(s.name for s in self.skills),
            tuple(self.tasks),
            now_ms(),
        )

    @property
    def writer(self) -> JournalWriter:
        return self.actor.writer

    @property
    def tool_names(self) -> list[str]:
        """The session's built-in tools (its MCP servers' are not counted)."""
        return list(self.actor.deps.tools.tools)

    def equip_as_subagent(
        self,
        allowed: set[str],
        permissions: Permissions,
        subagents: SessionSubagents | None,
        observer: SessionObserver,
    ) -> None:
        """Make this new session a subagent's (``subagents.py``): only ``allowed`` tools, the
        parent-derived ``permissions``, local files and processes, ``observer`` for its events."""
        runner = self.actor.deps.tools
        runner.tools = {name: tool for name, tool in runner.tools.items() if name in allowed}
        runner.mcp = None
        permissions.on_switch = self._switched_inside
        runner.context = replace(
            runner.context,
            permissions=permissions,
            subagents=subagents,
            fs=None,
            writer=None,
            terminals=None,
            progress=None,
            elicitation=None,
        )
        self.actor.observer = observer

    @property
    def tasks(self) -> list[TaskRecord]:
        """The session's background tasks, oldest first (``tools/background.py``)."""
        table = self.actor.deps.tools.context.tasks
        return list(table.records.values()) if table is not None else []

    @property
    def turns(self) -> int:
        """The number of the last turn opened (0 before the first)."""
        return self.actor.state.turn

    @property
    def context_window(self) -> int:
        """The model's window as the session knows it: learned from the server, else
        configured (``turn/gauge.py``)."""
        return self.actor.window()

    @property
    def context_used(self) -> int | None:
        """Tokens of context the last model request reported using, if any did."""
        return self.actor.context_used

    @property
    def usage_total(self) -> TurnUsage | None:
        """Tokens reported since this process opened the session."""
        return self.actor.usage_total

    # -- driving it ------------------------------------------------------------------------

    async def ensure_owned(self) -> None:
        """``SessionUnavailable`` when the session's journal is no longer this process's (a
        shared store: taken over by another process) or its store cannot say (unreachable).
        Free for a file journal; see ``journal/postgres/lease.py``."""
        try:
            await self.actor.writer.ensure_owned()
        except (JournalError, OSError) as exc:
            raise SessionUnavailable(self.id, exc) from exc

    async def inject(self, content: Content, src: Source | None = None) -> Injected:
        await self.ensure_owned()
        blocks, tag = as_blocks(content), src or source(SourceKind.PLUGIN)
        message_id, placement = await self.actor.inject(blocks, tag)
        await self._tell_of_unseen_images(blocks)
        return Injected(message_id, placement)

    async def send(self, prompt: Content) -> PendingPrompt:
        """What the user typed: a slash command does what it says (``commands/dispatch.py``;
        ``CommandRefused``), anything else is queued as the prompt (``submit``)."""
        await self.ensure_owned()
        blocks = as_blocks(prompt)
        await self._skills_read()
        ran = await dispatch.run(self, blocks)
        if ran is None:
            return await self.submit(blocks)
        if isinstance(ran, dispatch.Answer):
            await self.observer.command_answer(ran.text, ran.command)
            return PendingPrompt.answered(ran)
        return ran

    async def submit(self, prompt: Content, *, read_only: bool = False) -> PendingPrompt:
        """Queue ``prompt`` as it is; the text of files it links to (``resources.py``) joins it
        first. ``read_only``: its turn's tools are decided as in read-only mode whatever the
        session's mode (``/review``); the mode itself does not change."""
        await self.ensure_owned()
        blocks = await with_linked_files(as_blocks(prompt), self.actor.deps.tools.context)
        pending = PendingPrompt(
            await self.actor.submit(blocks, read_only=read_only), actor=self.actor
        )
        await self._tell_of_unseen_images(blocks)
        return pending

    async def steer(self, prompt: Content) -> Placement:
        """Into the running turn at its next step; with no turn running, as a new prompt."""
        await self.ensure_owned()
        blocks = as_blocks(prompt)
        placement = await self.actor.steer(blocks)
        await self._tell_of_unseen_images(blocks)
        return placement

    async def steer_running(self, prompt: Content) -> Placement:
        """Into the running turn; with none, nothing happens (``Placement.PROMPT_REQUIRED``)."""
        blocks = as_blocks(prompt)
        placement = await self.actor.steer(blocks, start_turn=False)
        if placement is not Placement.PROMPT_REQUIRED:
            await self._tell_of_unseen_images(blocks)
        return placement

    async def _tell_of_unseen_images(self, blocks: Sequence[ContentBlock]) -> None:
        """The model of a session that takes no images gets a note in their place (the
        provider's doing); the user is told here, once per message that had any."""
        if not self.takes_images and any(isinstance(b, ImageContent) for b in blocks):
            await self.observer.note(IMAGES_NOT_SEEN)

    async def compact(self, instructions: str = "") -> PendingPrompt:
        """Queue a compaction like the prompt ``/compact instructions``; FIFO with prompts."""
        return PendingPrompt(await self.actor.compact(instructions), actor=self.actor)

    async def undo(self) -> PendingPrompt:
        """``/undo`` (``commands/undo.py``) in a task of its own: once the session is idle, the
        question to the client, the restore; its answer is a command answer, then ``end_turn``."""
        from acp_agent.commands.undo import undo_last_turn  # only an /undo needs it

        reply: Reply[Outcome] = Reply()

        async def run() -> None:
            try:
                await self.when_idle()
                asker = self.actor.deps.tools.permissions.asker
                cwd, entries = Path(self.header.cwd), list(self.entries)
                text = await undo_last_turn(
                    self.state_dir, self.id, entries, cwd, asker, self.inject
                )
            except (OSError, ShadowError) as exc:
                log.warning("undo_failed", session_id=self.id, error=str(exc))
                text = f"Undo failed: {exc}"
            await self.observer.command_answer(text, Command.UNDO)
            reply.set(Finished(StopReason.END_TURN))

        self._sessions.start_soon(run)
        return PendingPrompt(reply)

    async def cancel(self) -> None:
        await self.actor.cancel()

    async def when_idle(self) -> JournalHealth:
        return await self.actor.when_idle()

    async def dispose(self) -> None:
        await self._sessions.close(self)

    # -- what it works with -------------------------------------------------------------------

    async def inject_workspace_instructions(self) -> list[Injected]:
        """Inject each workspace instruction file of the session cwd (``AGENTS.md``, ...) as one
        ``plugin``-sourced message (``workspace.py``)."""
        found = await anyio.to_thread.run_sync(find_instructions, self.header.cwd)
        return [await self.inject(f.content, f.source) for f in found]

    async def _skills_read(self) -> None:
        """The skills, read once before the first prompt if nothing read them yet: its system
        prompt lists them, whichever door opened the session."""
        if not self._skills_found:
            await self.find_skills()

    async def find_skills(self) -> list[Skill]:
        """Read the session's skills again (``skills.py``): its slash commands from now on,
        listed to the model from its next request."""
        dirs = skill_dirs(self.header.cwd, self._sessions.wiring.prompt.skills_dir)
        self.skills = await anyio.to_thread.run_sync(find_skills, dirs, RESERVED)
        self._skills_found = True
        return self.skills

    def skill(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    @property
    def journal_path(self) -> Path:
        return journal_path(session_dir(self._sessions.state_dir, self.id))

    @property
    def journal_location(self) -> str:
        """Where the journal is, for people: its file, or the shared store that holds it."""
        store = journal_store(self._sessions.state_dir)
        return f"{store.label} (session {self.id})" if store.shared else str(self.journal_path)

    @property
    def state_dir(self) -> Path:
        return self._sessions.state_dir

    @property
    def title(self) -> str | None:
        """The session's title as it stands (the client's, the model's or the first prompt's)."""
        return self.actor.title

    def set_roots(self, roots: Sequence[Path]) -> None:
        """The extra roots the session's file tools may use, besides its cwd."""
        self.actor.deps.tools.set_roots(roots)

    async def use_mcp_servers(self, servers: tuple[McpServerConfig, ...]) -> None:
        """The session's MCP servers from now on (connected at its next model request)."""
        hub = self.actor.deps.tools.mcp
        if hub is not None:
            await hub.use(servers)
        elif servers:
            log.warning("mcp_servers_ignored", session_id=self.id, reason="no MCP support wired")

    # -- settings: set here, persisted here --------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self.actor.deps.tools.permissions.mode

    @property
    def rules(self) -> SessionRules:
        """The permission rules in force for the session's tools (``/permissions``)."""
        return self.actor.deps.tools.permissions.rules

    async def set_mode(self, mode: Mode) -> None:
        """Takes effect at the next tool call."""
        self.actor.deps.tools.permissions.mode = mode
        log.info("session_mode_set", session_id=self.id, mode=str(mode))
        await self._save_settings()

    async def switch_mode(self, mode: Mode) -> None:
        """The mode changed without the client asking (``/mode``, ``exit_plan_mode``): kept
        like ``set_mode``, then announced through the door's ``Sessions.on_settings_changed``."""
        await self.set_mode(mode)
        await self._sessions.settings_changed(self, Setting.MODE)

    async def _switched_inside(self, mode: Mode) -> None:
        """A tool switched the mode with the user's approval (``exit_plan_mode``)."""
        await self.switch_mode(mode)

    @property
    def model(self) -> str | None:
        """The spec of the model answering the session's next request (``None``: no choice)."""
        return self._chosen_model or self._sessions.wiring.models.default

    async def set_model(self, spec: object) -> None:
        """Switch models from the next request; ``UnknownModel`` / ``ModelKeyMissing``."""
        models = self._sessions.wiring.models
        if not isinstance(spec, str) or spec not in models.choices():
            raise UnknownModel(spec, models.choices())
        self._sessions.require_key(spec)
        self._use_model(spec)
        log.info("session_model_set", session_id=self.id, model=spec)
        await self._save_settings()

    async def switch_model(self, spec: str) -> None:
        """``set_model`` without the client asking (``/model``), announced as ``switch_mode``."""
        await self.set_model(spec)
        await self._sessions.settings_changed(self, Setting.MODEL)

    def model_choices(self) -> list[str]:
        """The models a user may switch this session to (none: nothing to choose)."""
        models = self._sessions.wiring.models
        return models.choices() if models.offers_selector() else []

    def _use_model(self, spec: str) -> None:
        provider = self._sessions.wiring.models.provider(spec)
        self.actor.deps.model = provider
        self.actor.deps.context_window = self._sessions.window_of(provider)
        self.actor.deps.model_titles = self._sessions.titles_for(spec, provider)
        self._chosen_model = spec

    @property
    def sandbox(self) -> SandboxPolicy:
        """The policy the session's commands run under (chosen, configured or the default)."""
        return self._commands.policy

    async def set_sandbox(self, policy: SandboxPolicy) -> None:
        """Run the session's commands under ``policy`` from the next one on; kept like the
        mode (a session loaded, resumed or forked later has it too)."""
        self._commands.chosen = policy
        log.info("session_sandbox_set", session_id=self.id, policy=str(policy))
        await self._save_settings()

    @property
    def _commands(self) -> SessionSandbox:
        return self.actor.deps.tools.context.sandbox

    def restore(self, settings: SessionSettings) -> None:
        self._prompt = settings.system_prompt
        if settings.learned is not None:
            self.actor.learned = settings.learned  # for its model only (``Learned.of``)
        self.actor.deps.reasoning_effort = settings.thought_level
        mode = parse_mode(settings.mode) if settings.mode is not None else None
        if mode is not None:
            self.actor.deps.tools.permissions.mode = mode
        sandbox = parse_policy(settings.sandbox)
        if sandbox is not None:
            self._commands.chosen = sandbox
        if settings.model is None:
            return
        models = self._sessions.wiring.models
        if settings.model in models.choices() and models.key_needed(settings.model) is None:
            self._use_model(settings.model)
        else:
            log.warning("session_model_unavailable", session_id=self.id, model=settings.model)
            self.unavailable_model = settings.model

    @property
    def capabilities(self) -> Capabilities:
        """What the session's model can do, as its provider declares it."""
        return self.actor.deps.model.capabilities

    @property
    def takes_images(self) -> bool:
        """Whether the session's model sees images (a provider's ``images`` setting)."""
        return self.capabilities.images

    @property
    def thinks(self) -> bool:
        """Whether the session's model takes a thinking level (an OpenAI-compatible one)."""
        return self.capabilities.thinking_levels

    @property
    def thought_level(self) -> str | None:
        return self.actor.deps.reasoning_effort

    async def set_thought_level(self, level: str | None) -> None:
        """``reasoning_effort`` of every request from the next one on (``None``: none sent)."""
        self.actor.deps.reasoning_effort = level
        log.info("session_thought_level_set", session_id=self.id, level=level)
        await self._save_settings()

    @property
    def prompt(self) -> SessionPrompt | None:
        """The client's own instructions for the session, if it gave any."""
        return self._prompt

    async def set_prompt(self, prompt: SessionPrompt) -> None:
        """From the next request on; kept with the settings, so a later load keeps it."""
        self._prompt = prompt
        await self._save_settings()

    def system_prompt(self, turn_started_ms: int, compact: bool = False) -> str:
        """The system message of a request whose turn started then (``system_prompt.py``);
        ``compact``: the short built-in text, for a small window."""
        roots = self.actor.deps.tools.context.all_roots()
        wiring, skills = self._sessions.wiring.prompt, self.skills
        return render(wiring, self._prompt, roots, turn_started_ms, skills_prompt(skills), compact)

    def compact_for(self, window: int) -> bool:
        return self._sessions.wiring.prompt.compact_for(window)

    async def _save_settings(self) -> None:
        level, prompt = self.thought_level, self._prompt
        chosen = self._commands.chosen
        sandbox = str(chosen) if chosen is not None else None
        learned = self.actor.learned if self.actor.learned.model else None
        settings = SessionSettings(
            str(self.mode), self._chosen_model, level, prompt, sandbox, learned
        )
        await save_settings(self._sessions.state_dir, self.id, settings)

    async def _remember_learned(self, _learned: Learned) -> None:
        await self._save_settings()


class Sessions(Generic[Obs]):
    def __init__(
        self,
        state_dir: Path,
        tg: TaskGroup,
        wiring: Wiring[Obs],
        file_factory: FileFactory | None = None,
    ) -> None:
        self.state_dir = state_dir
        self.wiring = wiring
        self._tg = tg
        self._file_factory = file_factory
        self._open: dict[str, Session[Obs]] = {}
        self._closing: dict[str, _Closing[Obs]] = {}
        """Sessions ``close`` took out of ``_open`` whose close has not ended yet."""
        self.on_settings_changed: Callable[[Session[Obs], Setting], Awaitable[None]] | None = None
        """How the front door tells its client of a setting it did not change itself (ACP:
        the server's ``config_option_update``)."""

    async def settings_changed(self, session: Session[Obs], setting: Setting) -> None:
        if self.on_settings_changed is not None:
            await self.on_settings_changed(session, setting)

    def start_soon(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``work`` in the sessions' task group (a command that waits for the client)."""
        self._tg.start_soon(work)

    def get(self, session_id: str) -> Session[Obs]:
        session = self._open.get(session_id)
        if session is None:
            raise UnknownSession(session_id)
        return session

    def find(self, session_id: str) -> Session[Obs] | None:
        return self._open.get(session_id)

    @property
    def all(self) -> list[Session[Obs]]:
        return list(self._open.values())

    def require_key(self, spec: str | None) -> None:
        """``ModelKeyMissing`` when ``spec``'s provider needs a key that is not set."""
        needed = self.wiring.models.key_needed(spec)
        if needed is not None and spec is not None:
            raise ModelKeyMissing(spec, needed)

    async def create(
        self, cwd: str, session_id: str | None = None, mcp_servers: list[JsonObject] | None = None
    ) -> Session[Obs]:
        """A new session on the default model, in the default mode."""
        self.require_key(self.wiring.models.default)
        sid = session_id if session_id is not None else new_id()
        if sid in self._open:
            raise SessionIdInUse(sid)
        header = SessionHeader(id=sid, created_at=now_ms(), cwd=cwd, mcp_servers=mcp_servers)
        writer = await create_journal(self.state_dir, header, self._file_factory)
        return await self._start(header, writer)

    async def open(self, session_id: str) -> Session[Obs]:
        """The live session, or the one on disk with its settings back (``opening.py``)."""
        self.require_key(self.wiring.models.default)
        live = self._open.get(session_id)
        if live is not None:
            await live.ensure_owned()  # a shared store's session may have been taken over
            return live
        return await self._open_from_disk(session_id)

    async def fork(
        self,
        parent_id: str,
        cwd: str | None,
        *,
        at_seq: int | None = None,
        session_id: str | None = None,
        mcp_servers: list[JsonObject] | None = None,
        at_turn: int | None = None,
    ) -> Session[Obs]:
        """Fork ``parent_id`` at a stable boundary and open the child, with the parent's
        settings; ``at_turn``: just before that turn (a rewind); ``cwd`` None: the parent's.
        A parent open here is flushed first (best effort), so the fork sees what it admitted."""
        live = self._open.get(parent_id)
        if live is not None:
            await _flush_admitted(live.actor)
        header = await fork_journal(
            self.state_dir,
            parent_id,
            cwd,
            at_seq=at_seq,
            session_id=session_id,
            mcp_servers=mcp_servers,
            file_factory=self._file_factory,
            at_turn=at_turn,
        )
        return await self._open_from_disk(header.id)

    async def rewind(
        self, parent_id: str, to_turn: int, *, restore_files: bool = False, force: bool = False
    ) -> Session[Obs]:
        """A fork of ``parent_id`` just before turn ``to_turn``; ``restore_files``: the files the
        turns from ``to_turn`` on changed are put back as they were before it, once the fork is
        made (``FilesChanged``, before anything is created, for files changed since the agent
        wrote them, unless ``force``)."""
        if not restore_files:
            return await self.fork(parent_id, None, at_turn=to_turn)
        from acp_agent.session.fork import files_to_restore  # as opening.py: only a fork needs it

        live = self._open.get(parent_id)
        if live is not None:
            await _flush_admitted(live.actor)
        restore = await files_to_restore(self.state_dir, parent_id, to_turn, force)
        child = await self.fork(parent_id, None, at_turn=to_turn)
        restored = await anyio.to_thread.run_sync(restore.apply)
        log.info("session_files_restored", session_id=parent_id, turn=to_turn, files=len(restored))
        return child

    async def _open_from_disk(self, session_id: str) -> Session[Obs]:
        opened = await open_journal(self.state_dir, session_id, self._file_factory)
        session = await self._start(opened.header, opened.writer, opened)
        await session.actor.commit_repair()  # a failure is reported like any flush failure
        if opened.reported:  # the task endings the open appended (``opening.py``)
            await anyio.to_thread.run_sync(opened.tasks.mark_reported, opened.reported)
        session.restore(await load_settings(self.state_dir, session_id))
        return session

    def titles_for(self, spec: str | None, provider: ModelProvider) -> bool:
        """Model-written titles for a session on ``spec``: when its provider writes them
        (``Capabilities.writes_titles``) and the config allows them; never without a model
        choice (the Python API's one provider)."""
        writes = provider.capabilities.writes_titles
        return self.wiring.prompt.model_titles and spec is not None and writes

    def window_of(self, provider: ModelProvider) -> int:
        """The provider's own window for its model, else the process-wide one."""
        return context_window_of(provider) or self.wiring.context_window

    def _deps(self, header: SessionHeader) -> SessionDeps:
        wiring = self.wiring
        provider = wiring.models.provider(wiring.models.default)
        tools = wiring.tools(header)
        tools.record_checkpoints(Recorder(self.state_dir, header.id))
        return SessionDeps(
            provider,
            tools,
            wiring.admission(header),
            max_steps=wiring.max_steps,
            remember_title=partial(write_title, self.state_dir, header.id),
            context_window=self.window_of(provider),
            model_titles=self.titles_for(wiring.models.default, provider),
        )

    async def _start(
        self, header: SessionHeader, writer: JournalWriter, opened: Opened | None = None
    ) -> Session[Obs]:
        deps = self._deps(header)
        directory = session_dir(self.state_dir, header.id)
        tasks = opened.tasks if opened else TaskTable(directory, now_ms)
        deps.tools.context = replace(deps.tools.context, tasks=tasks)
        observer = self.wiring.observer(header, deps.tools)
        entries, title = (opened.entries, opened.title) if opened else ([], None)
        actor = SessionActor(header, writer, entries, deps, observer, title)
        await self._tg.start(tasks.run)
        await self._tg.start(actor.run)
        session = self._open[header.id] = Session(actor, self, observer)
        tasks.on_end = session.inject  # a task's ending: the injection path (contract §12)
        link = read_link(directory)
        depth = link.depth if link is not None else 0
        if depth < MAX_DEPTH:
            subagents = SessionSubagents(self, session, depth)
            deps.tools.context = replace(deps.tools.context, subagents=subagents)
        log.info("session_started", session_id=header.id, cwd=header.cwd)
        return session

    # -- on disk: delete, archive, title, status (``shelf.py``, ``catalog.py``) ----------------

    def in_memory(self, session_id: str) -> bool:
        """Open here, or being closed (unstable ``session/status``'s ``open``)."""
        return session_id in self._open or session_id in self._closing

    async def delete(self, session_id: str) -> None:
        """Remove the session from disk, durably; one open here is closed first. Refused with
        ``SessionBusy`` while it has a turn running or queued (nothing is changed);
        ``UnknownSession``; ``SessionUnavailable`` when another process has it open."""
        await self.wait_closed(session_id)
        live = self._open.get(session_id)
        if live is not None:
            if not live.actor.quiescent():
                raise SessionBusy(session_id)
            await self.close(live)
        await anyio.to_thread.run_sync(delete_session, self.state_dir, session_id)
        await anyio.to_thread.run_sync(forget_everywhere, self.state_dir, session_id)

    async def set_archived(self, session_id: str, archived: bool) -> None:
        """Archive (or unarchive) a session on disk; archiving one another process has open is
        refused (``SessionUnavailable``). One open here: the caller closes it first."""
        directory = await anyio.to_thread.run_sync(existing_dir, self.state_dir, session_id)
        if archived and not self.in_memory(session_id):
            await anyio.to_thread.run_sync(refuse_if_held, directory, session_id)
        await anyio.to_thread.run_sync(shelf.set_archived, directory, archived)

    async def set_title(self, session_id: str, title: str) -> Session[Obs] | None:
        """Store the client's title (durably), which the agent's own never replaces; the
        session, when it is open here (its title changes too)."""
        await anyio.to_thread.run_sync(existing_dir, self.state_dir, session_id)
        await anyio.to_thread.run_sync(set_client_title, self.state_dir, session_id, title)
        live = self._open.get(session_id)
        if live is not None:
            live.actor.title = title
        return live

    async def require_known(self, session_id: str) -> None:
        """``UnknownSession`` unless the session is in memory here or on disk."""
        if not self.in_memory(session_id):
            await anyio.to_thread.run_sync(existing_dir, self.state_dir, session_id)

    def hand_over(self, session: Session[Obs]) -> None:
        """Let ``session`` go without closing it, for another registry to ``adopt``: a running
        session whose client went, which another connection attaches to (docs/remote.md)."""
        if self._open.get(session.id) is session:
            del self._open[session.id]

    def adopt(self, session: Session[Obs]) -> None:
        """Take ``session`` (``hand_over`` by another registry over the same state directory):
        it is this registry's from now on, to drive and to close."""
        self._open[session.id] = session
        session._sessions = self

    async def cancel_all(self) -> None:
        """Cancel every session's work: the open ones and those whose close still waits for it."""
        waiting = [c.session for c in self._closing.values() if not c.releasing]
        for session in [*self.all, *waiting]:
            await session.cancel()

    async def close_all(self) -> None:
        """Close every session, all at once (so stopping their MCP servers does not add up), and
        wait for the closes already under way."""
        under_way = list(self._closing.values())
        async with anyio.create_task_group() as tg:
            for session in self.all:
                tg.start_soon(self.close, session)
            for closing in under_way:
                tg.start_soon(closing.done.wait)

    def writers(self) -> list[JournalWriter]:
        """The journal of every session open or being closed (what a forced exit flushes)."""
        return [s.writer for s in (*self.all, *self.closing)]

    @property
    def closing(self) -> list[Session[Obs]]:
        """The sessions being closed (no longer in ``all``, their journals not yet released)."""
        return [c.session for c in self._closing.values()]

    async def wait_closed(self, session_id: str) -> None:
        """Return once no session with that id is being closed (at once if none is)."""
        closing = self._closing.get(session_id)
        if closing is not None:
            await closing.done.wait()

    def close(self, session: Session[Obs]) -> Coroutine[Any, Any, None]:
        """Close ``session``; the coroutine returned does the waiting, and must be awaited.

        Synchronously, before anything is awaited, the session leaves the registry: ``get``
        and ``find`` no longer find it (so no new work reaches it) and ``closing`` /
        ``wait_closed`` know it. That lets a caller that must not wait itself (the ACP reader)
        make the session unreachable for whatever comes after the close, then hand the wait to
        a task. The coroutine waits for quiescence (turns and flushes; cancelled meanwhile, it
        puts the session back: a later ``close`` or ``close_all`` closes it), then stops the
        MCP servers and releases the journal (shielded). Closing a session already being
        closed waits for that close; closing one that is not open does nothing.
        """
        closing = self._closing.get(session.id)
        if closing is not None and closing.session is session:
            return closing.done.wait()
        if self._open.get(session.id) is not session:
            return _nothing()
        del self._open[session.id]
        closing = self._closing[session.id] = _Closing(session)
        return self._finish_close(closing)

    async def _finish_close(self, closing: _Closing[Obs]) -> None:
        session = closing.session
        try:
            try:
                await session.actor.when_idle()
            except BaseException:
                self._open.setdefault(session.id, session)  # not closed after all
                raise
            closing.releasing = True
            await _release(session.actor)
            _unlink(session.actor)
        finally:
            del self._closing[session.id]
            closing.done.set()


class _Closing(msgspec.Struct, Generic[Obs]):
    """A close under way: ``releasing`` once the session was quiescent and its actor stops
    (nothing may be posted to it any more); ``done`` when the close ended, either way."""

    session: Session[Obs]
    releasing: bool = False
    done: anyio.Event = msgspec.field(default_factory=anyio.Event)


async def _release(actor: SessionActor) -> None:
    """Stop a quiescent session's actor, its MCP servers, and release its journal."""
    await actor.stop()
    with anyio.CancelScope(shield=True):
        await actor.deps.tools.aclose()
        try:
            await actor.writer.close()
        except JournalFlushError as exc:
            log.error("session_closed_unflushed", session_id=actor.id, error=exc.error)
            return
    log.info("session_closed", session_id=actor.id)


def _unlink(actor: SessionActor) -> None:
    """Drop the closed ``Session``'s callbacks from its actor: they made a reference cycle,
    which kept the whole history alive until a collection of the cyclic GC (the journal's
    entries are not tracked by it: ``journal/events.py``); now it goes when the session does."""
    actor.deps.system_prompt = None
    actor.deps.compact_for = None
    actor.deps.tools.permissions.on_switch = None
    actor.deps.remember_learned = None
    if actor.deps.tools.context.tasks is not None:
        actor.deps.tools.context.tasks.on_end = None
    actor.deps.tools.context = replace(actor.deps.tools.context, subagents=None)


async def _nothing() -> None:
    return None


async def _flush_admitted(actor: SessionActor) -> None:
    try:
        await actor.writer.flush()
    except JournalError as exc:  # the actor reports its own flush failures
        log.warning("fork_parent_unflushed", session_id=actor.id, error=str(exc))
