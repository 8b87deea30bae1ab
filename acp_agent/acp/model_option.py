"""The session's model on the wire: a ``configOptions`` entry, and the keys it needs.

- ``configOptions``: one ``select`` option, id ``model``, ``category: "model"``, whose values
  are the catalog's specs (``openai:gpt-4.1`` …). It is offered when a real provider is among
  the choices (a script-only server offers none). ``session/set_config_option`` on it switches
  the session's model (``Session.set_model``: from its next model request on, and kept in the
  session's settings, so a session loaded, resumed or forked later goes on with it).
- Keys: a provider whose key variable is unset is listed in ``initialize``'s ``authMethods``
  (the description says which variable to set), and ``session/new`` / ``load`` / ``resume`` on
  it, or switching to it, fail with -32000 saying the same (``acp/failures.py``).
  ``authenticate`` checks again. The key's value never appears here: only the variable's name.
"""

from __future__ import annotations

from acp_agent.acp.schema_initialize import (
    AuthMethod,
    SessionConfigSelect,
    SessionConfigSelectOption,
)
from acp_agent.errors import AuthRequired, InvalidParams
from acp_agent.model.registry import KeyNeeded, ModelCatalog

MODEL_OPTION = "model"


class ModelOption:
    """What the wire shows of the catalog; which model a session is on is the session's."""

    def __init__(self, catalog: ModelCatalog) -> None:
        self.catalog = catalog

    def auth_methods(self) -> list[AuthMethod]:
        return [_auth_method(needed) for needed in self.catalog.keys_needed()]

    def authenticate(self, method_id: str) -> bool:
        """``False``: not one of ours. Raises -32000 while the key is still missing."""
        for needed in self.catalog.keys_needed():
            if needed.method_id == method_id:
                raise AuthRequired(
                    f"{needed.env} is still not set: {needed.message}", {"env": needed.env}
                )
        return any(method_id == f"{name}-api-key" for name in self.catalog.provider_names())

    def options(self, current: str | None) -> list[SessionConfigSelect]:
        """The model selector showing ``current``; none when the catalog offers no choice."""
        if not self.catalog.offers_selector() or current is None:
            return []
        choices = [SessionConfigSelectOption(spec, spec) for spec in self.catalog.choices()]
        return [
            SessionConfigSelect(
                id=MODEL_OPTION,
                name="Model",
                current_value=current,
                options=choices,
                description="The model that answers this session's next request",
                category="model",
            )
        ]

    def check_option(self, config_id: str) -> None:
        """-32602 unless ``config_id`` is the model selector and it is offered."""
        if config_id != MODEL_OPTION or not self.catalog.offers_selector():
            raise InvalidParams(f"unknown config option {config_id!r}", {"path": "$.configId"})


def _auth_method(needed: KeyNeeded) -> AuthMethod:
    return AuthMethod(
        id=needed.method_id,
        name=f"Set {needed.env}",
        description=needed.message[0].upper() + needed.message[1:] + ".",
        meta={"acp_agent": {"env": needed.env, "provider": needed.provider}},
    )
