"""ACP v1 wire types this agent reads and writes (a typed subset of the official schema).

Field names are the wire's camelCase (``rename="camel"``); ``_meta`` is ``meta`` here. Every
frame these types produce is validated against the official JSON schema in the test suite.
Custom data only ever goes into ``_meta`` (``acp_agent`` key), never into new root fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import msgspec
import msgspec.structs

from acp_agent.acp.schema_initialize import (  # re-exported: the schema is one module to its users
    PROTOCOL_VERSION as PROTOCOL_VERSION,
    AgentCapabilities as AgentCapabilities,
    AuthMethod as AuthMethod,
    ClientCapabilities as ClientCapabilities,
    ClientSessionCapabilities as ClientSessionCapabilities,
    ElicitationCapabilities as ElicitationCapabilities,
    Empty as Empty,
    FileSystemCapabilities as FileSystemCapabilities,
    Implementation as Implementation,
    InitializeParams as InitializeParams,
    InitializeResult as InitializeResult,
    McpCapabilities as McpCapabilities,
    PromptCapabilities as PromptCapabilities,
    SessionCapabilities as SessionCapabilities,
    SessionConfigSelect as SessionConfigSelect,
    SessionConfigSelectOption as SessionConfigSelectOption,
    SystemPromptCapability as SystemPromptCapability,
    SystemPromptModes as SystemPromptModes,
    Wire as Wire,
    meta_field as meta_field,
)
from acp_agent.content import ContentBlock, JsonObject


class SystemPromptParam(Wire, frozen=True):
    """Unstable ``SystemPrompt`` of new, load, resume and fork: checked by ``params.py``."""

    mode: str
    content: list[ContentBlock]


class AuthenticateParams(Wire, frozen=True):
    method_id: str
    meta: JsonObject | None = meta_field()


# -- sessions ---------------------------------------------------------------------------------


class NewSessionMeta(Wire, frozen=True):
    acp_agent: SessionRequestMeta | None = msgspec.field(default=None, name="acp_agent")


class SessionRequestMeta(Wire, frozen=True):
    session_id: str | None = None


if TYPE_CHECKING:
    McpServerList = list[JsonObject]
    DirectoryList = list[str]
else:  # what the wire may send: `_DefaultOnNull.__post_init__` turns null into []
    McpServerList = list[JsonObject] | None
    DirectoryList = list[str] | None


class _DefaultOnNull(Wire, frozen=True):
    """Params whose list fields ACP marks ``x-deserialize-default-on-null``: ``null`` is ``[]``.

    Invariant: once decoded (or constructed) none of ``_default_on_null`` is ``None``; the
    runtime type admits it only for that moment, which is why type checkers see the list type.
    """

    _default_on_null: ClassVar[tuple[str, ...]] = ("mcp_servers", "additional_directories")

    def __post_init__(self) -> None:
        for name in self._default_on_null:
            if getattr(self, name) is None:
                msgspec.structs.force_setattr(self, name, [])


class NewSessionParams(_DefaultOnNull, frozen=True):
    cwd: str
    mcp_servers: McpServerList = msgspec.field(default_factory=list)
    additional_directories: DirectoryList = msgspec.field(default_factory=list)
    system_prompt: SystemPromptParam | None = None
    meta: NewSessionMeta | None = msgspec.field(default=None, name="_meta")


class NewSessionResult(Wire, frozen=True):
    session_id: str
    config_options: list[SessionConfigSelect] | None = None
    modes: SessionModeState | None = None


class SessionSetupResult(Wire, frozen=True):
    """The result of ``session/load`` and ``session/resume``."""

    config_options: list[SessionConfigSelect] | None = None
    modes: SessionModeState | None = None


class SetConfigOptionParams(Wire, frozen=True):
    session_id: str
    config_id: str
    value: str | bool
    type: str | None = None
    meta: JsonObject | None = meta_field()


class SetConfigOptionResult(Wire, frozen=True):
    config_options: list[SessionConfigSelect]


class PromptParams(Wire, frozen=True):
    session_id: str
    prompt: list[ContentBlock]
    message_id: str | None = None
    meta: JsonObject | None = meta_field()


class PromptUsage(Wire, frozen=True):
    """Unstable ``Usage`` of a ``session/prompt`` answer: what the turn's requests used."""

    total_tokens: int
    input_tokens: int
    output_tokens: int
    thought_tokens: int | None = None
    cached_read_tokens: int | None = None


class PromptResult(Wire, frozen=True):
    stop_reason: str
    usage: PromptUsage | None = None
    meta: JsonObject | None = meta_field()


class LoadSessionParams(_DefaultOnNull, frozen=True):
    """``session/load`` and ``session/resume``."""

    session_id: str
    cwd: str
    mcp_servers: McpServerList = msgspec.field(default_factory=list)
    additional_directories: DirectoryList = msgspec.field(default_factory=list)
    system_prompt: SystemPromptParam | None = None
    meta: JsonObject | None = meta_field()


class ListSessionsParams(Wire, frozen=True):
    cwd: str | None = None
    cursor: str | None = None
    archived: str | None = None
    """Unstable ``SessionArchiveFilter``: ``exclude`` (the default), ``include``, ``only``."""
    meta: JsonObject | None = meta_field()


class SessionInfo(Wire, frozen=True):
    session_id: str
    cwd: str
    title: str | None = None
    updated_at: str | None = None
    archived: bool | None = None
    """Unstable; on every listed session, since the agent advertises ``archive``."""
    meta: JsonObject | None = meta_field()
    """``{"acp_agent": {"parentSessionId"}}`` on a subagent's session."""


class ListSessionsResult(Wire, frozen=True):
    sessions: list[SessionInfo]
    next_cursor: str | None = None


class ForkRequestMeta(Wire, frozen=True):
    session_id: str | None = None
    seq: int | None = None


class ForkSessionMeta(Wire, frozen=True):
    acp_agent: ForkRequestMeta | None = msgspec.field(default=None, name="acp_agent")


class ForkSessionParams(_DefaultOnNull, frozen=True):
    """``session/fork`` (unstable ACP); ``_meta.acp_agent`` may pick the new id and the seq."""

    session_id: str
    cwd: str
    mcp_servers: McpServerList = msgspec.field(default_factory=list)
    additional_directories: DirectoryList = msgspec.field(default_factory=list)
    system_prompt: SystemPromptParam | None = None
    meta: ForkSessionMeta | None = msgspec.field(default=None, name="_meta")


class ForkSessionResult(Wire, frozen=True):
    session_id: str
    config_options: list[SessionConfigSelect] | None = None
    modes: SessionModeState | None = None
    meta: JsonObject | None = meta_field()


class SessionIdParams(Wire, frozen=True):
    session_id: str
    meta: JsonObject | None = meta_field()


class SetSessionTitleParams(Wire, frozen=True):
    """Unstable ``session/set_title``."""

    session_id: str
    title: str
    meta: JsonObject | None = meta_field()


class SetSessionTitleResult(Wire, frozen=True):
    title: str


class SessionStatusResult(Wire, frozen=True):
    """Unstable ``session/status``: ``open`` (in memory here) or ``saved`` (on disk)."""

    status: str


# -- agent -> client ----------------------------------------------------------------------------


class ReadTextFileParams(Wire, frozen=True):
    session_id: str
    path: str
    line: int | None = None
    limit: int | None = None


class ReadTextFileResult(Wire, frozen=True):
    content: str


class WriteTextFileParams(Wire, frozen=True):
    session_id: str
    path: str
    content: str


class EnvVariable(Wire, frozen=True):
    name: str
    value: str


class CreateTerminalParams(Wire, frozen=True):
    session_id: str
    command: str
    args: list[str] = msgspec.field(default_factory=list)
    env: list[EnvVariable] = msgspec.field(default_factory=list)
    cwd: str | None = None
    output_byte_limit: int | None = None


class CreateTerminalResult(Wire, frozen=True):
    terminal_id: str


class TerminalParams(Wire, frozen=True):
    """``terminal/output``, ``terminal/wait_for_exit``, ``terminal/kill``, ``terminal/release``."""

    session_id: str
    terminal_id: str


class TerminalExitStatus(Wire, frozen=True):
    exit_code: int | None = None
    signal: str | None = None


class TerminalOutputResult(Wire, frozen=True):
    output: str
    truncated: bool = False
    exit_status: TerminalExitStatus | None = None


class PermissionOption(Wire, frozen=True):
    option_id: str
    name: str
    kind: str


class ToolCallUpdateFields(Wire, frozen=True):
    """ACP ``ToolCallUpdate``: the tool call a permission request is about."""

    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: JsonObject | None = None


class RequestPermissionParams(Wire, frozen=True):
    session_id: str
    tool_call: ToolCallUpdateFields
    options: list[PermissionOption]


class PermissionOutcome(Wire, frozen=True):
    """``{"outcome": "cancelled"}`` or ``{"outcome": "selected", "optionId": ...}``."""

    outcome: str
    option_id: str | None = None


class RequestPermissionResult(Wire, frozen=True):
    outcome: PermissionOutcome


class CreateElicitationParams(Wire, frozen=True):
    """``elicitation/create`` in form mode, tied to a session and a tool call."""

    session_id: str
    mode: str
    """``form`` (always sent: ``omit_defaults`` would drop a default)."""
    message: str
    requested_schema: JsonObject
    tool_call_id: str | None = None


class CreateElicitationResult(Wire, frozen=True):
    """``accept`` (with ``content``), ``decline``, ``cancel``, or a future action."""

    action: str
    content: dict[str, str | int | float | bool | list[str]] | None = None


# -- session modes ------------------------------------------------------------------------------


class SessionMode(Wire, frozen=True):
    id: str
    name: str
    description: str | None = None


class SessionModeState(Wire, frozen=True):
    current_mode_id: str
    available_modes: list[SessionMode]


class SetSessionModeParams(Wire, frozen=True):
    session_id: str
    mode_id: str
    meta: JsonObject | None = meta_field()


# -- session/update -----------------------------------------------------------------------------


class _Update(
    msgspec.Struct, frozen=True, rename="camel", omit_defaults=True, tag_field="sessionUpdate"
):
    pass


class UserMessageChunk(_Update, frozen=True, tag="user_message_chunk"):
    content: ContentBlock
    message_id: str | None = None
    meta: JsonObject | None = meta_field()


class AgentMessageChunk(_Update, frozen=True, tag="agent_message_chunk"):
    content: ContentBlock
    message_id: str | None = None
    meta: JsonObject | None = meta_field()


class AgentThoughtChunk(_Update, frozen=True, tag="agent_thought_chunk"):
    content: ContentBlock
    message_id: str | None = None
    meta: JsonObject | None = meta_field()


class ToolCallContentItem(msgspec.Struct, frozen=True, tag="content", tag_field="type"):
    content: ContentBlock


class ToolCallDiff(Wire, frozen=True, tag="diff", tag_field="type"):
    path: str
    new_text: str
    old_text: str | None = None


class ToolCallTerminal(Wire, frozen=True, tag="terminal", tag_field="type"):
    terminal_id: str


ToolCallContent = ToolCallContentItem | ToolCallDiff | ToolCallTerminal


class ToolCallLocation(Wire, frozen=True):
    path: str
    line: int | None = None


class ToolCallStart(_Update, frozen=True, tag="tool_call"):
    tool_call_id: str
    title: str
    kind: str
    status: str
    name: str | None = None
    """The tool's name (ACP ``ToolCall.name``)."""
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: JsonObject | None = None
    meta: JsonObject | None = meta_field()


class ToolCallProgress(_Update, frozen=True, tag="tool_call_update"):
    tool_call_id: str
    name: str | None = None
    status: str | None = None
    content: list[ToolCallContent] | None = None
    meta: JsonObject | None = meta_field()


class SubagentUpdate(_Update, frozen=True, tag="subagent_update"):
    """Unstable: this session created and owns the child ``session_id`` (a subagent); sent
    only to a client that advertised ``subagents``."""

    session_id: str
    title: str | None = None
    description: str | None = None
    meta: JsonObject | None = meta_field()


class SessionInfoUpdate(_Update, frozen=True, tag="session_info_update"):
    title: str | None = None
    updated_at: str | None = None
    meta: JsonObject | None = meta_field()


class UnstructuredCommandInput(Wire, frozen=True):
    hint: str


class AvailableCommand(Wire, frozen=True):
    name: str
    description: str
    input: UnstructuredCommandInput | None = None


class AvailableCommandsUpdate(_Update, frozen=True, tag="available_commands_update"):
    available_commands: list[AvailableCommand]
    meta: JsonObject | None = meta_field()


class CompactionUpdate(_Update, frozen=True, tag="compaction_update"):
    """Only for clients that advertised ``session.compaction``; omitted fields stay unchanged."""

    compaction_id: str
    status: str
    summary: list[ContentBlock] | None = None
    error: str | None = None
    meta: JsonObject | None = meta_field()


class Cost(Wire, frozen=True):
    amount: float
    currency: str


class UsageUpdate(_Update, frozen=True, tag="usage_update"):
    """Tokens in context after the last model request, and the context window's size."""

    used: int
    size: int
    cost: Cost | None = None
    """What the session's requests cost so far, when the provider (or its prices) says."""
    meta: JsonObject | None = meta_field()


class PlanEntry(Wire, frozen=True):
    content: str
    priority: str
    status: str


class PlanUpdate(_Update, frozen=True, tag="plan"):
    entries: list[PlanEntry]
    meta: JsonObject | None = meta_field()


class NoticeUpdate(_Update, frozen=True, tag="notice"):
    """Only for clients that advertised ``session.notices``: live, never history."""

    severity: str
    title: str
    description: str | None = None
    meta: JsonObject | None = meta_field()


class CurrentModeUpdate(_Update, frozen=True, tag="current_mode_update"):
    current_mode_id: str
    meta: JsonObject | None = meta_field()


class ConfigOptionUpdate(_Update, frozen=True, tag="config_option_update"):
    config_options: list[SessionConfigSelect]
    meta: JsonObject | None = meta_field()


SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | SessionInfoUpdate
    | AvailableCommandsUpdate
    | CompactionUpdate
    | UsageUpdate
    | PlanUpdate
    | NoticeUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SubagentUpdate
)


class SessionNotification(Wire, frozen=True):
    session_id: str
    update: SessionUpdate
