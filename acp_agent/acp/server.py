"""The ACP router: the only place that knows method names.

Each handler decodes its ``params`` once into a typed struct (``decode_params`` turns a shape
mismatch into -32602 naming the path), drives the session layer (``session/service.py``: the
same ``Sessions`` and ``Session`` the Python API drives), and returns a typed result; a session
refusal becomes its wire error in ``failures.py``. The router keeps no per-session state: a
session's observer, mode and model are the session's own.
``session/prompt`` returns a ``Deferred``: the dispatcher keeps reading (so ``session/cancel``
gets through) and answers when the prompt's own turn ends. So does ``session/close``, whose
cancelled turn may wait for the client (nothing that waits for the client runs on the reader:
``transport/connection.py``), and a load, resume or fork of a session being closed.
``session/new``, ``session/load`` and ``session/resume`` return ``Then`` (inside that
``Deferred``, if any): once answered, they advertise the session's slash commands
(``available_commands_update``: ``/compact``), so the client already knows the session id. A
``/compact`` prompt is an ordinary ``session/prompt`` (the actor recognizes it). After a
``session/new`` answer the workspace instruction files are injected (``session/workspace.py``).

Modes (``mode_option.py``) are answered both as ``modes`` and as the ``mode`` config option; a
change through ``session/set_mode`` or ``session/set_config_option`` is announced both ways.
``additionalDirectories`` of new, load, resume and fork become the session's extra tool roots;
their ``mcpServers`` (``mcp/config.py``: stdio and http, advertised as ``mcpCapabilities``) are
checked before anything is created and become the session's MCP servers (``mcp/hub.py``),
connected at its first model request.
``session/delete`` and the unstable ``session/set_title``, ``session/status``,
``session/archive`` and ``session/unarchive`` are ``session_admin.py``'s. A client's
``$/cancel_request`` for a pending ``session/prompt`` ends that prompt only
(``Deferred.on_cancel`` is ``PendingPrompt.cancel``; the connection routes it): queued, it is
answered ``cancelled`` without running; running, its turn ends as with ``session/cancel``; the
session's other prompts run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from acp_agent.acp.extensions import (
    InjectParams,
    InjectResult,
    RewindParams,
    RewindResult,
    SteerParams,
    SteerResult,
    WhenIdleParams,
    WhenIdleResult,
    prompt_required,
)
from acp_agent.acp.failures import wire_error
from acp_agent.acp.handshake import initialize_result
from acp_agent.acp.mode_option import MODE_OPTION, choose_mode, mode_option, mode_state
from acp_agent.acp.model_option import ModelOption
from acp_agent.acp.observer import AcpClient, AcpObserver
from acp_agent.acp.params import (
    absolute_cwd,
    content_blocks,
    prompt_blocks,
    session_prompt,
    valid_roots,
)
from acp_agent.acp.sandbox_option import SANDBOX_OPTION, choose_sandbox, sandbox_option
from acp_agent.acp.schema import (
    AuthenticateParams,
    ForkRequestMeta,
    ForkSessionParams,
    ForkSessionResult,
    InitializeParams,
    InitializeResult,
    ListSessionsParams,
    ListSessionsResult,
    LoadSessionParams,
    NewSessionParams,
    NewSessionResult,
    PromptParams,
    PromptResult,
    PromptUsage,
    SessionConfigSelect,
    SessionIdParams,
    SessionInfo,
    SessionModeState,
    SessionSetupResult,
    SetConfigOptionParams,
    SetConfigOptionResult,
    SetSessionModeParams,
    SetSessionTitleParams,
)
from acp_agent.acp.session_admin import SessionAdmin, tell_fallback
from acp_agent.acp.thought_option import THOUGHT_OPTION, choose_level, thought_option
from acp_agent.commands.dispatch import CommandRefused
from acp_agent.commands.words import advertised
from acp_agent.content import JsonObject
from acp_agent.errors import InternalError, InvalidParams, decode_params
from acp_agent.journal.events import SourceKind, source, source_kind
from acp_agent.logs import get_logger
from acp_agent.mcp.config import McpServerConfig, journaled, parse_servers
from acp_agent.model.openai.warm import warm_up
from acp_agent.model.registry import ModelCatalog
from acp_agent.session.catalog import ArchiveFilter, BadCursor, SessionSummary, list_sessions
from acp_agent.session.errors import SessionError
from acp_agent.session.service import PendingPrompt, Session, Sessions, Setting
from acp_agent.session.system_prompt import SessionPrompt
from acp_agent.transport.connection import Deferred, NotificationHandler, RequestHandler, Then
from acp_agent.turn.vocabulary import Failed, Finished, Outcome, Placement, Refused, TurnUsage

log = get_logger("acp_agent.acp")

P = TypeVar("P")
T = TypeVar("T")


def _typed(type_: type[P], fn: Callable[[P], Awaitable[object]]) -> RequestHandler:
    """Decode ``params`` into ``type_``, call ``fn``; a session refusal becomes its wire error."""
    decoder = msgspec.json.Decoder(type_)

    async def handler(raw: msgspec.Raw | None) -> object:
        params = decode_params(raw or b"{}", type_, decoder)
        try:
            return await fn(params)
        except SessionError as exc:
            raise wire_error(exc) from exc

    return handler


def _typed_notification(type_: type[P], fn: Callable[[P], Awaitable[None]]) -> NotificationHandler:
    decoder = msgspec.json.Decoder(type_)

    async def handler(raw: msgspec.Raw | None) -> None:
        await fn(decode_params(raw or b"{}", type_, decoder))

    return handler


AcpSession = Session[AcpObserver]


def outcome_result(outcome: Outcome) -> PromptResult:
    match outcome:
        case Finished(stop=stop, usage=usage):
            return PromptResult(stop_reason=str(stop), usage=prompt_usage(usage))
        case Refused(reason=reason):
            meta: dict[str, object] = {"acp_agent": {"blocked": True, "reason": reason}}
            return PromptResult(stop_reason="refusal", meta=meta)
        case Failed(message=message):
            raise InternalError(message, {"reason": "turn_failed"})


def prompt_usage(usage: TurnUsage | None) -> PromptUsage | None:
    if usage is None:
        return None
    total = usage.input_tokens + usage.output_tokens
    return PromptUsage(
        total, usage.input_tokens, usage.output_tokens, usage.reasoning_tokens, usage.cached_tokens
    )


class AgentServer:
    """Routes ACP methods to the session layer (``session/service.py``) and projects the answers.
    What ``initialize`` negotiated is kept on the ``AcpClient``."""

    def __init__(
        self, client: AcpClient, sessions: Sessions[AcpObserver], models: ModelCatalog
    ) -> None:
        self.client = client
        self.sessions = sessions
        self.models = ModelOption(models)
        sessions.on_settings_changed = self._announce
        self.admin = SessionAdmin(sessions, _wire_errors)
        self._requests: dict[str, RequestHandler] = {
            "initialize": _typed(InitializeParams, self.initialize),
            "authenticate": _typed(AuthenticateParams, self.authenticate),
            "session/new": _typed(NewSessionParams, self.new_session),
            "session/prompt": _typed(PromptParams, self.prompt),
            "session/load": _typed(LoadSessionParams, self.load_session),
            "session/resume": _typed(LoadSessionParams, self.resume_session),
            "session/close": _typed(SessionIdParams, self.close_session),
            "session/fork": _typed(ForkSessionParams, self.fork_session),
            "session/list": _typed(ListSessionsParams, self.list_sessions),
            "session/set_config_option": _typed(SetConfigOptionParams, self.set_config_option),
            "session/set_mode": _typed(SetSessionModeParams, self.set_mode),
            "session/delete": _typed(SessionIdParams, self.admin.delete),
            "session/set_title": _typed(SetSessionTitleParams, self.admin.set_title),
            "session/status": _typed(SessionIdParams, self.admin.status),
            "session/archive": _typed(SessionIdParams, self.admin.archive),
            "session/unarchive": _typed(SessionIdParams, self.admin.unarchive),
            "_acp_agent/inject": _typed(InjectParams, self.inject),
            "_acp_agent/steer": _typed(SteerParams, self.steer),
            "_session/steering": _typed(SteerParams, self.session_steering),
            "_acp_agent/when_idle": _typed(WhenIdleParams, self.when_idle),
            "_acp_agent/rewind": _typed(RewindParams, self.rewind),
        }
        self._notifications: dict[str, NotificationHandler] = {
            "session/cancel": _typed_notification(SessionIdParams, self.cancel),
        }

    # -- Router protocol ----------------------------------------------------------------------

    def request_handler(self, method: str) -> RequestHandler | None:
        return self._requests.get(method)

    def notification_handler(self, method: str) -> NotificationHandler | None:
        return self._notifications.get(method)

    # -- handlers -------------------------------------------------------------------------------

    async def initialize(self, params: InitializeParams) -> InitializeResult:
        self.client.capabilities = params.client_capabilities
        return initialize_result(self.models.catalog)

    async def authenticate(self, params: AuthenticateParams) -> dict[str, Any]:
        """API keys come from the environment: this checks again and says what to set."""
        if self.models.authenticate(params.method_id):
            return {}
        raise InvalidParams(
            f"unknown authentication method {params.method_id!r}", {"path": "$.methodId"}
        )

    async def new_session(self, params: NewSessionParams) -> Then:
        setup = _Setup.checked(params)
        requested = (
            params.meta.acp_agent.session_id if params.meta and params.meta.acp_agent else None
        )
        session = await self.sessions.create(params.cwd, requested, journaled(params.mcp_servers))
        await setup.equip(session)
        result = NewSessionResult(session.id, self._config_options(session), _modes(session))
        return Then(result, lambda: self._after_new(session))

    async def _after_new(self, session: AcpSession) -> None:
        """Slash commands, then the workspace instructions (idle injections, journaled)."""
        _warm_up(session)
        await _advertise_commands(session)
        await session.inject_workspace_instructions()

    async def load_session(self, params: LoadSessionParams) -> Then | Deferred:
        """Rebuild the session from its journal and replay all of it, then answer."""
        return await self._after_close(params.session_id, lambda: self._load(params))

    async def _load(self, params: LoadSessionParams) -> Then:
        session = await self._open(params)
        await session.observer.replay(session.entries)
        return self._with_commands(session, self._setup_result(session, params.cwd))

    async def resume_session(self, params: LoadSessionParams) -> Then | Deferred:
        """Like ``session/load`` without the replay."""
        return await self._after_close(params.session_id, lambda: self._resume(params))

    async def _resume(self, params: LoadSessionParams) -> Then:
        """With ``_meta.acp_agent.afterSeq: N``, the updates numbered past ``N`` first (§13)."""
        after = after_seq(params.meta)
        session = await self._open(params)
        if after is not None:
            await session.observer.replay(session.entries, after)
        return self._with_commands(session, self._setup_result(session, params.cwd))

    def _setup_result(self, session: AcpSession, requested_cwd: str) -> object:
        """The options and modes; with ``_meta.acp_agent`` when the session kept another cwd
        than the one asked for (``_kept_cwd``)."""
        result = SessionSetupResult(self._config_options(session), _modes(session))
        ours = {**(_kept_cwd(session, requested_cwd) or {}), **_running(session)}
        if not ours:
            return result
        return {**msgspec.to_builtins(result), "_meta": {"acp_agent": ours}}

    def _config_options(self, session: AcpSession) -> list[SessionConfigSelect]:
        """Every config option of the session: the model (when offered), the mode, the
        thinking level (when the model takes one), the sandbox."""
        thought = [thought_option(session.thought_level)] if session.thinks else []
        mode, sandbox = mode_option(session.mode), sandbox_option(session.sandbox)
        return [*self.models.options(session.model), mode, *thought, sandbox]

    async def set_config_option(
        self, params: SetConfigOptionParams
    ) -> SetConfigOptionResult | Then:
        """The model selector (``model_option.py``); takes effect at the next model request.
        The mode selector (``mode_option.py``); takes effect at the next tool call. The
        sandbox (``sandbox_option.py``): at the next command, announced (``config_option_update``)."""
        session = self.sessions.get(params.session_id)
        if params.config_id == MODE_OPTION:
            await session.set_mode(choose_mode(params.value, "$.value"))
            return self._announcing_mode(
                session, SetConfigOptionResult(self._config_options(session))
            )
        if params.config_id == SANDBOX_OPTION:
            await session.set_sandbox(choose_sandbox(params.value, "$.value"))
            options = self._config_options(session)
            return Then(
                SetConfigOptionResult(options), lambda: session.observer.config_changed(options)
            )
        if params.config_id == THOUGHT_OPTION and session.thinks:
            await session.set_thought_level(choose_level(params.value))
            return SetConfigOptionResult(self._config_options(session))
        self.models.check_option(params.config_id)
        await session.set_model(params.value)
        return SetConfigOptionResult(self._config_options(session))

    async def set_mode(self, params: SetSessionModeParams) -> Then:
        session = self.sessions.get(params.session_id)
        await session.set_mode(choose_mode(params.mode_id, "$.modeId"))
        return self._announcing_mode(session, {})

    def _announcing_mode(self, session: AcpSession, result: object) -> Then:
        """Answer ``result``, then announce the session's mode both ways."""
        mode = str(session.mode)
        return Then(
            result, lambda: session.observer.mode_changed(mode, self._config_options(session))
        )

    async def _announce(self, session: AcpSession, setting: Setting) -> None:
        """A setting the client did not change (``/mode``, ``/model``, ``exit_plan_mode``),
        announced as ``set_mode``'s and ``set_config_option``'s are."""
        options = self._config_options(session)
        if setting is Setting.MODE:
            await session.observer.mode_changed(str(session.mode), options)
        else:
            await session.observer.config_changed(options)

    def _with_commands(self, session: AcpSession, result: object) -> Then:
        """Answer ``result``, then advertise the session's slash commands."""

        async def after() -> None:
            await session.observer.attached()  # a reattach: the live updates follow the answer
            _warm_up(session)
            await _advertise_commands(session)
            await tell_fallback(session)

        return Then(result, after)

    async def _open(self, params: LoadSessionParams) -> AcpSession:
        """The session, live or from disk, equipped with what the request carries. It keeps the
        cwd of its journal: a different ``cwd`` is logged (warning ``session_cwd_kept``) and
        the answer says so (``_kept_cwd``)."""
        setup = _Setup.checked(params)
        session = await self.sessions.open(params.session_id)
        session.observer.start_at(session.entries)
        await setup.equip(session)
        if session.header.cwd != params.cwd:
            log.warning(
                "session_cwd_kept",
                session_id=session.id,
                journal=session.header.cwd,
                requested=params.cwd,
            )
        return session

    async def close_session(self, params: SessionIdParams) -> Deferred:
        """Cancel the session's work and close it; answered once its turns ended, its journal
        is flushed and its lock released.

        Off the reader (a ``Deferred``): the cancelled turn's tools may wait for the client —
        ``terminal/kill`` and ``terminal/release`` of a command in its terminal — whose answers
        arrive behind this request. What is ordered with the messages that follow happens
        before the handler returns: the turn is cancelled, and the session leaves the registry
        (``Sessions.close``), so a later request on it is answered -32002 as after the close,
        and ``session/load``, ``resume`` or ``fork`` of it wait for the close (``_after_close``).
        """
        session = self.sessions.get(params.session_id)
        await session.cancel()
        closed = self.sessions.close(session)  # nothing is awaited between this and the return

        async def answer() -> dict[str, Any]:
            await closed
            return {}

        return Deferred(answer())

    async def _after_close(
        self, session_id: str, handler: Callable[[], Awaitable[Then]]
    ) -> Then | Deferred:
        """``handler()`` now; or, while a session with that id is being closed, once that
        close ended, off the reader (the close waits for its turns, which may wait for the
        client). A session refusal of the later call is answered like one of ``_typed``'s."""
        if all(s.id != session_id for s in self.sessions.closing):
            return await handler()

        async def later() -> Then:
            await self.sessions.wait_closed(session_id)
            try:
                return await handler()
            except SessionError as exc:
                raise wire_error(exc) from exc

        log.info("waiting_for_close", session_id=session_id)
        return Deferred(later())

    async def fork_session(self, params: ForkSessionParams) -> Then | Deferred:
        """Unstable ``session/fork``: a new session holding the parent's history up to a stable
        boundary (``_meta.acp_agent.seq``, default the last one), opened and ready to prompt,
        with the parent's mode and model; answered like ``session/new`` (options, modes, then
        the slash commands). A parent being closed is forked once it is closed, so the fork
        sees everything it admitted."""
        return await self._after_close(params.session_id, lambda: self._fork(params))

    async def _fork(self, params: ForkSessionParams) -> Then:
        setup = _Setup.checked(params)
        wanted = (params.meta.acp_agent if params.meta else None) or ForkRequestMeta()
        session = await self.sessions.fork(
            params.session_id,
            params.cwd,
            at_seq=wanted.seq,
            session_id=wanted.session_id,
            mcp_servers=journaled(params.mcp_servers),
        )
        await setup.equip(session)
        parent = msgspec.to_builtins(session.header.parent)
        result = ForkSessionResult(
            session_id=session.id,
            config_options=self._config_options(session),
            modes=_modes(session),
            meta={"acp_agent": {"parent": parent}},
        )
        return self._with_commands(session, result)

    async def list_sessions(self, params: ListSessionsParams) -> ListSessionsResult:
        archived = _archive_filter(params.archived)
        state_dir, cwd, cursor = self.sessions.state_dir, params.cwd, params.cursor
        try:
            page, cursor = list_sessions(state_dir, cwd, cursor, archived=archived)
        except BadCursor as exc:
            raise InvalidParams(str(exc), {"path": "$.cursor"}) from exc
        infos = [_session_info(s) for s in page]
        return ListSessionsResult(sessions=infos, next_cursor=cursor)

    async def prompt(self, params: PromptParams) -> PromptResult | Deferred:
        """A slash command (``commands/dispatch.py``) may answer at once; else a queued turn."""
        session = self.sessions.get(params.session_id)
        blocks = prompt_blocks(params.prompt)
        try:
            pending = await session.send(blocks)
        except CommandRefused as exc:
            raise InvalidParams(str(exc), {"path": "$.prompt"}) from exc
        if pending.answer is not None:  # a command the agent answered itself: no turn
            return PromptResult(stop_reason="end_turn")
        cancelled = PromptResult(stop_reason="cancelled")
        return Deferred(self._answer(pending), abandoned=cancelled, on_cancel=pending.cancel)

    async def _answer(self, pending: PendingPrompt) -> PromptResult:
        return outcome_result(await pending.outcome())

    async def cancel(self, params: SessionIdParams) -> None:
        session = self.sessions.find(params.session_id)
        if session is None:
            log.info("cancel_ignored", session_id=params.session_id, reason="unknown session")
            return
        await session.cancel()

    # -- extensions (docs/contract.md §4) -----------------------------------------------------

    async def inject(self, params: InjectParams) -> InjectResult:
        session = self.sessions.get(params.session_id)
        content = content_blocks(params.content)
        src = params.source if params.source is not None else source(SourceKind.CLIENT)
        if not source_kind(src):
            raise InvalidParams("source.kind must be a non-empty string", {"path": "$.source.kind"})
        injected = await session.inject(content, src)
        return InjectResult(message_id=injected.message_id, placement=str(injected.placement))

    async def steer(self, params: SteerParams) -> SteerResult:
        placement = await self.sessions.get(params.session_id).steer(prompt_blocks(params.prompt))
        return SteerResult(str(placement))

    async def session_steering(self, params: SteerParams) -> SteerResult:
        """``_session/steering``: the claude-agent-acp / codex-acp spelling of steer, with their
        ``idleBehavior: "promptRequired"`` (no turn is started; the client sends a prompt)."""
        session = self.sessions.get(params.session_id)
        steer = session.steer_running if prompt_required(params.meta) else session.steer
        placement = await steer(prompt_blocks(params.prompt))
        if placement is Placement.PROMPT_REQUIRED:
            return SteerResult(str(placement), reason="noRunningTurn")
        return SteerResult("injected" if placement is Placement.STEERED else str(placement))

    async def rewind(self, params: RewindParams) -> Then | Deferred:
        """``_acp_agent/rewind``: a fork of the session just before turn ``toTurn`` (its cwd,
        mode and model), opened and ready to prompt; answered ``{sessionId}``, then its slash
        commands, like a fork."""
        return await self._after_close(params.session_id, lambda: self._rewind(params))

    async def _rewind(self, params: RewindParams) -> Then:
        child = await self.sessions.rewind(
            params.session_id,
            params.to_turn,
            restore_files=params.restore_files,
            force=params.force,
        )
        return self._with_commands(child, RewindResult(child.id))

    async def when_idle(self, params: WhenIdleParams) -> Deferred:
        session = self.sessions.get(params.session_id)

        async def answer() -> WhenIdleResult:
            return WhenIdleResult(journal=await session.when_idle())

        return Deferred(answer())


class _Setup(msgspec.Struct, frozen=True):
    """What ``session/new``, ``load``, ``resume`` and ``fork`` carry for the session besides its
    id: checked before anything is created or opened, given to the session once it is."""

    roots: list[Path]
    servers: tuple[McpServerConfig, ...]
    prompt: SessionPrompt | None

    @classmethod
    def checked(cls, params: NewSessionParams | LoadSessionParams | ForkSessionParams) -> _Setup:
        absolute_cwd(params.cwd)
        roots = valid_roots(params.additional_directories)
        servers = parse_servers(params.mcp_servers)
        return cls(roots, servers, session_prompt(params.system_prompt))

    async def equip(self, session: AcpSession) -> None:
        """The extra tool roots, the MCP servers (connected at the first model request), and
        the client's system prompt when it sent one (else the session keeps the one it has)."""
        session.set_roots(self.roots)
        await session.use_mcp_servers(self.servers)
        if self.prompt is not None:
            await session.set_prompt(self.prompt)


def _running(session: AcpSession) -> dict[str, object]:
    """``runningTurn: {turn}`` while a turn runs (docs/contract.md §13): this connection is
    then sent its end, ``_acp_agent/turn_ended``."""
    turn = session.observer.running_turn
    if turn is None:
        return {}
    session.observer.announce_end = True
    return {"runningTurn": {"turn": turn}}


def after_seq(meta: JsonObject | None) -> int | None:
    """``_meta.acp_agent.afterSeq`` of a ``session/resume``; ``InvalidParams`` unless an
    integer."""
    ours = (meta or {}).get("acp_agent")
    value = ours.get("afterSeq") if isinstance(ours, dict) else None
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidParams("_meta.acp_agent.afterSeq must be an integer (an update's seq)")
    return value


def _session_info(s: SessionSummary) -> SessionInfo:
    parent = s.parent_session_id
    meta: JsonObject | None = None
    if parent is not None:
        meta = {"acp_agent": {"parentSessionId": parent}}
    return SessionInfo(s.session_id, s.cwd, s.title, s.updated_at, s.archived, meta)


def _kept_cwd(session: AcpSession, requested: str) -> dict[str, str] | None:
    """What a load or resume with another ``cwd`` than the journal's tells the client, as the
    answer's ``_meta.acp_agent``; ``None`` when they agree. A session's cwd is fixed at
    creation: its history (relative paths, the workspace instructions injected then, the
    hooks chosen by it) is about that directory, so it is kept, and a fork is the way to go on
    elsewhere."""
    kept = session.header.cwd
    if kept == requested:
        return None
    warning = (
        f"Session {session.id} keeps its working directory {kept}; the requested {requested} "
        f"was not used. To continue this conversation in {requested}, fork the session there "
        "(session/fork with that cwd)."
    )
    return {"cwd": kept, "requestedCwd": requested, "warning": warning}


async def _advertise_commands(session: AcpSession) -> None:
    """The built-in slash commands and the session's skills, read again now."""
    await session.observer.advertise_commands(advertised(await session.find_skills()))


def _archive_filter(value: str | None) -> ArchiveFilter:
    """``session/list``'s unstable ``archived``: absent is ``exclude``; an unknown value -32602."""
    try:
        return ArchiveFilter(value or ArchiveFilter.EXCLUDE)
    except ValueError:
        choices = ", ".join(f.value for f in ArchiveFilter)
        raise InvalidParams(
            f"unknown archived filter {value!r}; one of {choices}", {"path": "$.archived"}
        ) from None


async def _wire_errors(work: Awaitable[T]) -> T:
    """``work``'s result; a session refusal becomes its wire error (for work off the reader)."""
    try:
        return await work
    except SessionError as exc:
        raise wire_error(exc) from exc


def _warm_up(session: AcpSession) -> None:
    """A session on an HTTP model: import the HTTP stack now, not at its first prompt."""
    if endpoint := session.capabilities.http_endpoint:
        warm_up(endpoint)


def _modes(session: AcpSession) -> SessionModeState:
    return mode_state(session.mode)
