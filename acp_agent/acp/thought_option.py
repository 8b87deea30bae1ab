"""The session's thinking level on the wire: a ``configOptions`` entry, ``category:
"thought_level"``.

Offered for sessions on an OpenAI-compatible model (not the script model): ``default`` leaves
the provider's own level (no ``reasoning_effort`` is sent), ``low`` / ``medium`` / ``high`` are
sent as ``reasoning_effort`` in every request from the next one on
(``Session.set_thought_level``, kept with the session's settings).
"""

from __future__ import annotations

from typing import Final

from acp_agent.acp.schema import SessionConfigSelect, SessionConfigSelectOption
from acp_agent.errors import InvalidParams

THOUGHT_OPTION: Final = "thought_level"
DEFAULT: Final = "default"
LEVELS: Final = (
    (DEFAULT, "Default", "The model's own thinking level"),
    ("low", "Low", "Think briefly: faster, cheaper answers"),
    ("medium", "Medium", "Think as much as the task needs"),
    ("high", "High", "Think longest: hardest problems"),
)


def thought_option(level: str | None) -> SessionConfigSelect:
    return SessionConfigSelect(
        id=THOUGHT_OPTION,
        name="Thinking",
        current_value=level or DEFAULT,
        options=[SessionConfigSelectOption(v, name, about) for v, name, about in LEVELS],
        description="How much the model reasons before it answers",
        category="thought_level",
    )


def choose_level(value: object) -> str | None:
    """The level a client asked for (``None``: the default); -32602 naming ``$.value``."""
    if not isinstance(value, str) or value not in (v for v, _, _ in LEVELS):
        known = ", ".join(v for v, _, _ in LEVELS)
        raise InvalidParams(
            f"unknown thinking level {value!r}; one of {known}", {"path": "$.value"}
        )
    return None if value == DEFAULT else value
