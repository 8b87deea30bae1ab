"""The session mode on the wire, both ways ACP offers it, kept in sync.

Older clients know ``modes`` (``SessionModeState`` in the ``session/new`` / ``load`` / ``resume``
answers, ``session/set_mode``, ``current_mode_update``); newer ones the ``configOptions`` entry
``mode`` (``category: "mode"``, ``session/set_config_option``, ``config_option_update``). Both read
and write the one mode of the session (``Session.mode`` / ``Session.set_mode``, which keeps it in
the session's settings file, so a session loaded, resumed or forked later is in the same mode);
whichever way the mode changes, the server sends ``current_mode_update`` and
``config_option_update``. A new session starts in the default mode (``ask``).
"""

from __future__ import annotations

from acp_agent.acp.schema import (
    SessionConfigSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)
from acp_agent.errors import InvalidParams
from acp_agent.tools.permissions import MODES, Mode, UnknownMode, require_mode

MODE_OPTION = "mode"


def mode_state(mode: Mode) -> SessionModeState:
    modes = [SessionMode(m.id, m.name, m.description) for m in MODES]
    return SessionModeState(str(mode), modes)


def mode_option(mode: Mode) -> SessionConfigSelect:
    return SessionConfigSelect(
        id=MODE_OPTION,
        name="Mode",
        current_value=str(mode),
        options=[SessionConfigSelectOption(m.id, m.name, m.description) for m in MODES],
        description="What the agent may do without asking: file edits and commands",
        category="mode",
    )


def choose_mode(value: object, path: str) -> Mode:
    """The mode a client asked for; -32602 naming ``path`` if there is no such mode."""
    try:
        return require_mode(value)
    except UnknownMode as exc:
        raise InvalidParams(str(exc), {"path": path}) from exc
