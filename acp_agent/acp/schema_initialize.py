"""The ACP v1 wire types of ``initialize`` and the model selector: what the first answer needs.

``acp/handshake.py`` answers the first ``initialize`` before the rest of the server is imported
(``launch.py``), and these are the types it needs; defining the whole schema (``schema.py``,
which re-exports every name here) costs a few milliseconds more before that answer. Same rules
as ``schema.py``: camelCase on the wire, ``_meta`` is ``meta``, custom data only in ``_meta``.
"""

from __future__ import annotations

import msgspec

from acp_agent.content import JsonObject

PROTOCOL_VERSION = 1


class Wire(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    pass


def meta_field() -> JsonObject | None:
    return msgspec.field(default=None, name="_meta")


# -- initialize -------------------------------------------------------------------------------


class FileSystemCapabilities(Wire, frozen=True):
    read_text_file: bool = False
    write_text_file: bool = False


class ClientSessionCapabilities(Wire, frozen=True):
    compaction: JsonObject | None = None
    """``{}``: the client takes ``compaction_update`` / ``compaction_summary_chunk`` updates."""
    notices: JsonObject | None = None
    """``{}``: the client presents ``notice`` updates (none is sent otherwise)."""
    meta: JsonObject | None = meta_field()


class ElicitationCapabilities(Wire, frozen=True):
    form: JsonObject | None = None
    """``{}``: the client renders ``elicitation/create`` forms (the ``ask_user`` tool)."""
    url: JsonObject | None = None


class ClientCapabilities(Wire, frozen=True):
    fs: FileSystemCapabilities = FileSystemCapabilities()
    terminal: bool = False
    session: ClientSessionCapabilities | None = None
    elicitation: ElicitationCapabilities | None = None
    subagents: JsonObject | None = None
    """Unstable: the client understands child sessions (``subagent_update``)."""
    meta: JsonObject | None = meta_field()

    @property
    def compaction_updates(self) -> bool:
        return self.session is not None and self.session.compaction is not None

    @property
    def notices(self) -> bool:
        return self.session is not None and self.session.notices is not None

    @property
    def elicitation_form(self) -> bool:
        return self.elicitation is not None and self.elicitation.form is not None


class Implementation(Wire, frozen=True):
    name: str
    version: str
    title: str | None = None


class InitializeParams(Wire, frozen=True):
    protocol_version: int | str | None = None
    client_capabilities: ClientCapabilities = ClientCapabilities()
    client_info: Implementation | None = None
    meta: JsonObject | None = meta_field()


class PromptCapabilities(Wire, frozen=True):
    image: bool = False
    audio: bool = False
    embedded_context: bool = False


class McpCapabilities(Wire, frozen=True):
    """``None`` is left out; the agent states both transports explicitly."""

    http: bool | None = None
    sse: bool | None = None


class Empty(Wire, frozen=True):
    pass


class SystemPromptModes(Wire, frozen=True):
    """Modes beyond ``append`` (unstable ``SessionSystemPromptModeCapabilities``)."""

    override: Empty | None = None


class SystemPromptCapability(Wire, frozen=True):
    mode: SystemPromptModes | None = None


class SessionCapabilities(Wire, frozen=True):
    list_: Empty | None = msgspec.field(default=None, name="list")
    resume: Empty | None = None
    close: Empty | None = None
    fork: Empty | None = None
    additional_directories: Empty | None = None
    system_prompt: SystemPromptCapability | None = None
    delete: Empty | None = None
    title: Empty | None = None
    """Unstable ``session/set_title``."""
    status: Empty | None = None
    """Unstable ``session/status``."""
    archive: Empty | None = None
    """Unstable ``session/archive`` / ``session/unarchive`` and ``session/list``'s filter."""


class AgentCapabilities(Wire, frozen=True):
    load_session: bool = False
    prompt_capabilities: PromptCapabilities = PromptCapabilities()
    mcp_capabilities: McpCapabilities = McpCapabilities()
    session_capabilities: SessionCapabilities = SessionCapabilities()
    meta: JsonObject | None = meta_field()


class AuthMethod(Wire, frozen=True):
    id: str
    name: str
    description: str | None = None
    meta: JsonObject | None = meta_field()


class InitializeResult(Wire, frozen=True):
    protocol_version: int
    agent_capabilities: AgentCapabilities
    agent_info: Implementation
    auth_methods: list[AuthMethod] = msgspec.field(default_factory=list)
    meta: JsonObject | None = meta_field()


class SessionConfigSelectOption(Wire, frozen=True):
    value: str
    name: str
    description: str | None = None


class SessionConfigSelect(Wire, frozen=True, tag="select", tag_field="type"):
    """A ``SessionConfigOption`` of type ``select`` (the model selector is one)."""

    id: str
    name: str
    current_value: str
    options: list[SessionConfigSelectOption]
    description: str | None = None
    category: str | None = None
