"""``initialize``: its answer, and answering it before the rest of the server is imported.

The answer (``initialize_result``) is the same wherever it is made: by the router
(``AgentServer.initialize``) for an ``initialize`` that comes later in a connection, and by
``answer_first`` for the first line of the process's input (``acp_agent/launch.py``), read
before the session, journal, tool and model stacks are imported, so an editor that spawns the
agent is answered about as soon as the interpreter is up. It depends on the capabilities (fixed
here) and on the model catalog (``authMethods``: the providers whose key is missing), so this
module imports only the initialize part of the schema (``schema_initialize.py``), the envelope
codec and the catalog, none of them heavy.

``answer_first`` answers only a well-formed ``initialize`` request whose params decode; for
anything else (a notification, another method, bad params, an invalid line) it returns
``None`` and the line is left to the ordinary path, which answers it exactly as it always did.
If you change what ``initialize`` answers, change it here: there is no other copy.
"""

from __future__ import annotations

import msgspec

from acp_agent import __version__
from acp_agent.acp.model_option import ModelOption
from acp_agent.acp.schema_initialize import (
    PROTOCOL_VERSION,
    AgentCapabilities,
    Empty,
    Implementation,
    InitializeParams,
    InitializeResult,
    McpCapabilities,
    PromptCapabilities,
    SessionCapabilities,
    SystemPromptCapability,
    SystemPromptModes,
)
from acp_agent.content import JsonObject
from acp_agent.errors import InvalidParams, decode_params
from acp_agent.model.registry import ModelCatalog
from acp_agent.transport.jsonrpc import IncomingRequest, decode_message, encode_response

AGENT_NAME = "acp-agent"
METHOD = "initialize"

CAPABILITIES: JsonObject = {"acp_agent": {"inject": True, "steer": True, "whenIdle": True}}
"""``agentCapabilities._meta``: the ``_acp_agent/*`` extensions (``extensions.py``)."""

STEERING_META: JsonObject = {"steering": {"supported": True}}
"""The ``initialize`` result's root ``_meta``: how claude-agent-acp and codex-acp advertise
``_session/steering``, and what their clients check before they send it.

Both are pinned (docs/contract.md §4 and the clients' checks), so ``_acp_agent/rewind`` is
advertised in neither: a client calls it, and a server without it answers -32601."""

_PARAMS = msgspec.json.Decoder(InitializeParams)


def initialize_result(models: ModelCatalog) -> InitializeResult:
    return InitializeResult(
        protocol_version=PROTOCOL_VERSION,
        agent_capabilities=AgentCapabilities(
            load_session=True,
            prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
            mcp_capabilities=McpCapabilities(http=True, sse=False),
            session_capabilities=SessionCapabilities(
                list_=Empty(),
                resume=Empty(),
                close=Empty(),
                fork=Empty(),
                additional_directories=Empty(),
                system_prompt=SystemPromptCapability(SystemPromptModes(override=Empty())),
                delete=Empty(),
                title=Empty(),
                status=Empty(),
                archive=Empty(),
            ),
            meta=CAPABILITIES,
        ),
        agent_info=Implementation(name=AGENT_NAME, version=__version__, title="acp-agent"),
        auth_methods=ModelOption(models).auth_methods(),
        meta=STEERING_META,
    )


def decode_initialize(raw: msgspec.Raw | None) -> InitializeParams:
    """``initialize``'s params; ``InvalidParams`` (-32602, naming the path) when they do not fit."""
    return decode_params(raw or b"{}", InitializeParams, _PARAMS)


def answer_first(line: bytes, models: ModelCatalog) -> tuple[bytes, InitializeParams] | None:
    """The response frame to ``line`` and the params it negotiated, if ``line`` is an
    ``initialize`` request this can answer; ``None`` leaves the line to the router."""
    message = decode_message(line)
    if not isinstance(message, IncomingRequest) or message.method != METHOD:
        return None
    try:
        params = decode_initialize(message.params)
    except InvalidParams:
        return None
    return encode_response(message.id, initialize_result(models)), params
