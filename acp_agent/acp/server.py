"""The ACP router: the only place that knows method names.

Each handler decodes its ``params`` once into a typed struct (``decode_params`` turns a shape
mismatch into -32602 naming the path), talks to the session layer, and returns a typed result.
``session/prompt`` returns a ``Deferred``: the dispatcher keeps reading (so ``session/cancel``
gets through) and answers when the prompt's own turn ends. ``session/new``, ``session/load`` and
``session/resume`` return ``Then``: once answered, they advertise the session's slash commands
(``available_commands_update``: ``/compact``), so the client already knows the session id. A
``/compact`` prompt is an ordinary ``session/prompt`` (the actor recognizes it). After a
``session/new`` answer the workspace instruction files are injected (``session/workspace.py``).

Modes (``mode_option.py``) are answered both as ``modes`` and as the ``mode`` config option; a
change through ``session/set_mode`` or ``session/set_config_option`` is announced both ways.
``additionalDirectories`` of new, load, resume and fork become the session's extra tool roots;
their ``mcpServers`` (``mcp/config.py``: stdio and http, advertised as ``mcpCapabilities``) are
checked before anything is created and become the session's MCP servers (``mcp/hub.py``),
connected at its first model request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import msgspec
import structlog

from acp_agent import __version__
from acp_agent.acp.extensions import (
    CAPABILITIES,
    STEERING_META,
    InjectParams,
    InjectResult,
    SteerParams,
    SteerResult,
    WhenIdleParams,
    WhenIdleResult,
    prompt_required,
)
from acp_agent.acp.mode_option import MODE_OPTION, choose_mode, mode_option, mode_state
from acp_agent.acp.model_option import ModelOption
from acp_agent.acp.observer import AcpObserver
from acp_agent.acp.params import (
    absolute_cwd,
    content_blocks,
    nonempty,
    prompt_blocks,
    valid_roots,
)
from acp_agent.acp.schema import (
    PROTOCOL_VERSION,
    AgentCapabilities,
    AuthenticateParams,
    ClientCapabilities,
    Empty,
    ForkRequestMeta,
    ForkSessionParams,
    ForkSessionResult,
    Implementation,
    InitializeParams,
    InitializeResult,
    ListSessionsParams,
    ListSessionsResult,
    LoadSessionParams,
    McpCapabilities,
    NewSessionParams,
    NewSessionResult,
    PromptCapabilities,
    PromptParams,
    PromptResult,
    SessionCapabilities,
    SessionConfigSelect,
    SessionIdParams,
    SessionInfo,
    SessionSetupResult,
    SetConfigOptionParams,
    SetConfigOptionResult,
    SetSessionModeParams,
)
from acp_agent.acp.settings_keeper import SettingsKeeper
from acp_agent.content import JsonObject
from acp_agent.errors import InternalError, InvalidParams, decode_params
from acp_agent.journal.events import SourceKind, source, source_kind
from acp_agent.mcp.config import McpServerConfig, journaled, parse_servers
from acp_agent.model.registry import ModelCatalog
from acp_agent.session.actor import SessionActor
from acp_agent.session.catalog import BadCursor, list_sessions
from acp_agent.session.manager import SessionManager
from acp_agent.session.ports import Reply
from acp_agent.session.signals import Failed, Finished, Outcome, Placement, Refused
from acp_agent.session.workspace import find_instructions
from acp_agent.tools.permissions import Mode, Permissions
from acp_agent.transport.connection import Deferred, NotificationHandler, RequestHandler, Then

log = structlog.get_logger("acp_agent.acp")

P = TypeVar("P")

AGENT_NAME = "acp-agent"


def _typed(type_: type[P], fn: Callable[[P], Awaitable[object]]) -> RequestHandler:
    decoder = msgspec.json.Decoder(type_)

    async def handler(raw: msgspec.Raw | None) -> object:
        return await fn(decode_params(raw or b"{}", type_, decoder))

    return handler


def _typed_notification(type_: type[P], fn: Callable[[P], Awaitable[None]]) -> NotificationHandler:
    decoder = msgspec.json.Decoder(type_)

    async def handler(raw: msgspec.Raw | None) -> None:
        await fn(decode_params(raw or b"{}", type_, decoder))

    return handler


def outcome_result(outcome: Outcome) -> PromptResult:
    match outcome:
        case Finished(stop=stop):
            return PromptResult(stop_reason=str(stop))
        case Refused(reason=reason):
            meta: dict[str, object] = {"acp_agent": {"blocked": True, "reason": reason}}
            return PromptResult(stop_reason="refusal", meta=meta)
        case Failed(message=message):
            raise InternalError(message, {"reason": "turn_failed"})


class AgentServer:
    """Routes ACP methods to the session layer. Holds what ``initialize`` negotiated."""

    sessions: SessionManager
    """Set by the app once the session manager exists (it needs the connection first)."""

    def __init__(self, observers: AcpObserver.Factory, models: ModelCatalog | None = None) -> None:
        self.observers = observers
        self.models = ModelOption(models or ModelCatalog(None, env={}))
        self.settings = SettingsKeeper(self.models)
        self.client_capabilities = ClientCapabilities()
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
            "_acp_agent/inject": _typed(InjectParams, self.inject),
            "_acp_agent/steer": _typed(SteerParams, self.steer),
            "_session/steering": _typed(SteerParams, self.session_steering),
            "_acp_agent/when_idle": _typed(WhenIdleParams, self.when_idle),
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
        self.client_capabilities = params.client_capabilities
        self.observers.client_capabilities = params.client_capabilities
        return InitializeResult(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(
                    list_=Empty(),
                    resume=Empty(),
                    close=Empty(),
                    fork=Empty(),
                    additional_directories=Empty(),
                ),
                meta=CAPABILITIES,
            ),
            agent_info=Implementation(name=AGENT_NAME, version=__version__, title="acp-agent"),
            auth_methods=self.models.auth_methods(),
            meta=STEERING_META,
        )

    async def authenticate(self, params: AuthenticateParams) -> dict[str, Any]:
        """API keys come from the environment: this checks again and says what to set."""
        if self.models.authenticate(params.method_id):
            return {}
        raise InvalidParams(
            f"unknown authentication method {params.method_id!r}", {"path": "$.methodId"}
        )

    async def new_session(self, params: NewSessionParams) -> Then:
        setup = _Setup.checked(params.cwd, params.additional_directories, params.mcp_servers)
        requested = (
            params.meta.acp_agent.session_id if params.meta and params.meta.acp_agent else None
        )
        self.models.require_key(self.models.catalog.default)
        actor = await self.sessions.create(params.cwd, requested, journaled(params.mcp_servers))
        await setup.equip(actor)
        modes = mode_state(_permissions(actor))
        result = NewSessionResult(actor.id, self._config_options(actor), modes)
        return Then(result, lambda: self._after_new(actor))

    async def _after_new(self, actor: SessionActor) -> None:
        """Slash commands, then the workspace instructions (idle injections, journaled)."""
        await self.observers.observer_for(actor).advertise_commands()
        for found in await anyio.to_thread.run_sync(find_instructions, actor.header.cwd):
            await actor.inject(found.content, found.source)

    async def load_session(self, params: LoadSessionParams) -> Then:
        """Rebuild the session from its journal and replay all of it, then answer."""
        actor = await self._open(params)
        await self.observers.observer_for(actor).replay(actor.entries)
        return self._with_commands(actor, self._setup_result(actor))

    async def resume_session(self, params: LoadSessionParams) -> Then:
        """Like ``session/load`` without the replay."""
        actor = await self._open(params)
        return self._with_commands(actor, self._setup_result(actor))

    def _setup_result(self, actor: SessionActor) -> SessionSetupResult:
        return SessionSetupResult(self._config_options(actor), mode_state(_permissions(actor)))

    def _config_options(self, actor: SessionActor) -> list[SessionConfigSelect]:
        """Every config option of the session: the model (when offered), then the mode."""
        return [*(self.models.options(actor.id) or []), mode_option(_permissions(actor))]

    async def set_config_option(
        self, params: SetConfigOptionParams
    ) -> SetConfigOptionResult | Then:
        """The model selector (``model_option.py``); takes effect at the next model request.
        The mode selector (``mode_option.py``); takes effect at the next tool call."""
        actor = self.sessions.get(params.session_id)
        if params.config_id == MODE_OPTION:
            self._switch_mode(actor, choose_mode(params.value, "$.value"))
            await self.settings.remember(self.sessions.state_dir, actor)
            return self._announcing_mode(actor, SetConfigOptionResult(self._config_options(actor)))
        self.models.select(actor, params)
        log.info("session_model_set", session_id=actor.id, model=self.models.current(actor.id))
        await self.settings.remember(self.sessions.state_dir, actor)
        return SetConfigOptionResult(self._config_options(actor))

    async def set_mode(self, params: SetSessionModeParams) -> Then:
        actor = self.sessions.get(params.session_id)
        self._switch_mode(actor, choose_mode(params.mode_id, "$.modeId"))
        await self.settings.remember(self.sessions.state_dir, actor)
        return self._announcing_mode(actor, {})

    def _switch_mode(self, actor: SessionActor, mode: Mode) -> None:
        _permissions(actor).mode = mode
        log.info("session_mode_set", session_id=actor.id, mode=str(mode))

    def _announcing_mode(self, actor: SessionActor, result: object) -> Then:
        """Answer ``result``, then announce the session's mode both ways."""
        mode, observer = str(_permissions(actor).mode), self.observers.observer_for(actor)
        return Then(result, lambda: observer.mode_changed(mode, self._config_options(actor)))

    def _with_commands(self, actor: SessionActor, result: object) -> Then:
        """Answer ``result``, then advertise the session's slash commands."""
        return Then(result, self.observers.observer_for(actor).advertise_commands)

    async def _open(self, params: LoadSessionParams) -> SessionActor:
        setup = _Setup.checked(params.cwd, params.additional_directories, params.mcp_servers)
        self.models.require_key(self.models.catalog.default)
        live = self.sessions.find(params.session_id) is not None
        actor = await self.sessions.open(params.session_id)
        if not live:
            await self.settings.restore(self.sessions.state_dir, actor)
        await setup.equip(actor)
        if actor.header.cwd != params.cwd:
            log.info(
                "session_cwd_differs",
                session_id=actor.id,
                journal=actor.header.cwd,
                requested=params.cwd,
            )
        return actor

    async def close_session(self, params: SessionIdParams) -> dict[str, Any]:
        """Cancel the session's work, wait for it, flush and release the journal lock."""
        actor = self.sessions.get(params.session_id)
        await actor.cancel()
        await self.sessions.close(actor)
        self.models.forget(actor.id)
        return {}

    async def fork_session(self, params: ForkSessionParams) -> Then:
        """Unstable ``session/fork``: a new session holding the parent's history up to a stable
        boundary (``_meta.acp_agent.seq``, default the last one), opened and ready to prompt,
        with the parent's mode and model; answered like ``session/new`` (options, modes, then
        the slash commands)."""
        setup = _Setup.checked(params.cwd, params.additional_directories, params.mcp_servers)
        wanted = (params.meta.acp_agent if params.meta else None) or ForkRequestMeta()
        actor = await self.sessions.fork(
            params.session_id,
            params.cwd,
            at_seq=wanted.seq,
            session_id=wanted.session_id,
            mcp_servers=journaled(params.mcp_servers),
        )
        await self.settings.restore(self.sessions.state_dir, actor)
        await setup.equip(actor)
        parent = msgspec.to_builtins(actor.header.parent)
        result = ForkSessionResult(
            session_id=actor.id,
            config_options=self._config_options(actor),
            modes=mode_state(_permissions(actor)),
            meta={"acp_agent": {"parent": parent}},
        )
        return self._with_commands(actor, result)

    async def list_sessions(self, params: ListSessionsParams) -> ListSessionsResult:
        try:
            page, cursor = list_sessions(self.sessions.state_dir, params.cwd, params.cursor)
        except BadCursor as exc:
            raise InvalidParams(str(exc), {"path": "$.cursor"}) from exc
        infos = [SessionInfo(s.session_id, s.cwd, s.title, s.updated_at) for s in page]
        return ListSessionsResult(sessions=infos, next_cursor=cursor)

    async def prompt(self, params: PromptParams) -> Deferred:
        actor = self.sessions.get(params.session_id)
        reply = await actor.submit(prompt_blocks(params.prompt))
        return Deferred(self._answer(reply))

    async def _answer(self, reply: Reply[Outcome]) -> PromptResult:
        return outcome_result(await reply.wait())

    async def cancel(self, params: SessionIdParams) -> None:
        actor = self.sessions.find(params.session_id)
        if actor is None:
            log.info("cancel_ignored", session_id=params.session_id, reason="unknown session")
            return
        await actor.cancel()

    # -- extensions (contracts §4) ------------------------------------------------------------

    async def inject(self, params: InjectParams) -> InjectResult:
        actor = self.sessions.get(params.session_id)
        content = content_blocks(params.content)
        src = params.source if params.source is not None else source(SourceKind.CLIENT)
        if not source_kind(src):
            raise InvalidParams("source.kind must be a non-empty string", {"path": "$.source.kind"})
        message_id, placement = await actor.inject(content, src)
        return InjectResult(message_id=message_id, placement=str(placement))

    async def steer(self, params: SteerParams) -> SteerResult:
        placement = await self.sessions.get(params.session_id).steer(nonempty(params.prompt))
        return SteerResult(str(placement))

    async def session_steering(self, params: SteerParams) -> SteerResult:
        """``_session/steering``: the claude-agent-acp / codex-acp spelling of steer, with their
        ``idleBehavior: "promptRequired"`` (no turn is started; the client sends a prompt)."""
        actor = self.sessions.get(params.session_id)
        start_turn = not prompt_required(params.meta)
        placement = await actor.steer(nonempty(params.prompt), start_turn=start_turn)
        if placement is Placement.PROMPT_REQUIRED:
            return SteerResult(str(placement), reason="noRunningTurn")
        return SteerResult("injected" if placement is Placement.STEERED else str(placement))

    async def when_idle(self, params: WhenIdleParams) -> Deferred:
        actor = self.sessions.get(params.session_id)

        async def answer() -> WhenIdleResult:
            return WhenIdleResult(journal=await actor.when_idle())

        return Deferred(answer())


@dataclass(frozen=True)
class _Setup:
    """What ``session/new``, ``load``, ``resume`` and ``fork`` carry for the session besides its
    id: checked before anything is created or opened, given to the session once it is."""

    roots: list[Path]
    servers: tuple[McpServerConfig, ...]

    @classmethod
    def checked(cls, cwd: str, directories: list[str], servers: list[JsonObject]) -> _Setup:
        absolute_cwd(cwd)
        return cls(valid_roots(directories), parse_servers(servers))

    async def equip(self, actor: SessionActor) -> None:
        """The extra tool roots and the MCP servers (connected at the first model request)."""
        actor.deps.tools.set_roots(self.roots)
        hub = actor.deps.tools.mcp
        if hub is not None:
            await hub.use(self.servers)
        elif self.servers:
            log.warning("mcp_servers_ignored", session_id=actor.id, reason="no MCP support wired")


def _permissions(actor: SessionActor) -> Permissions:
    return actor.deps.tools.permissions
