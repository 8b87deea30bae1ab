"""The session's model on the wire: a ``configOptions`` entry, and the keys it needs.

- ``configOptions``: one ``select`` option, id ``model``, ``category: "model"``, whose values
  are the catalog's specs (``openai:gpt-4.1`` …). It is offered when a real provider is among
  the choices (a script-only server offers none). ``session/set_config_option`` switches the
  session's provider (``actor.deps.model``) from its next model request on and answers with
  the options. The choice is kept in the session's settings file (``session/settings.py``):
  a session loaded or resumed later, or forked, goes on with it while the server still offers
  it (else the default, logged ``session_model_unavailable``).
- Keys: a provider whose key variable is unset is listed in ``initialize``'s ``authMethods``
  (the description says which variable to set), and ``session/new`` / ``load`` / ``resume`` on
  it, or switching to it, fail with -32000 saying the same. ``authenticate`` checks again.
  The key's value never appears here: only the variable's name.
"""

from __future__ import annotations

from acp_agent.acp.schema import (
    AuthMethod,
    SessionConfigSelect,
    SessionConfigSelectOption,
    SetConfigOptionParams,
)
from acp_agent.errors import AuthRequired, InvalidParams
from acp_agent.model.registry import KeyNeeded, ModelCatalog
from acp_agent.session.actor import SessionActor

MODEL_OPTION = "model"


class ModelOption:
    def __init__(self, catalog: ModelCatalog) -> None:
        self.catalog = catalog
        self._chosen: dict[str, str] = {}

    def auth_methods(self) -> list[AuthMethod]:
        return [_auth_method(needed) for needed in self.catalog.keys_needed()]

    def require_key(self, spec: str | None) -> None:
        needed = self.catalog.key_needed(spec)
        if needed is not None:
            raise AuthRequired(
                f"authentication required for model {spec}: {needed.message}",
                {"authMethodId": needed.method_id, "env": needed.env},
            )

    def authenticate(self, method_id: str) -> bool:
        """``False``: not one of ours. Raises -32000 while the key is still missing."""
        for needed in self.catalog.keys_needed():
            if needed.method_id == method_id:
                raise AuthRequired(
                    f"{needed.env} is still not set: {needed.message}", {"env": needed.env}
                )
        return any(method_id == f"{name}-api-key" for name in self.catalog.provider_names())

    def current(self, session_id: str) -> str | None:
        return self._chosen.get(session_id, self.catalog.default)

    def options(self, session_id: str) -> list[SessionConfigSelect] | None:
        current = self.current(session_id)
        if not self.catalog.offers_selector() or current is None:
            return None
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

    def select(self, actor: SessionActor, params: SetConfigOptionParams) -> None:
        if params.config_id != MODEL_OPTION or not self.catalog.offers_selector():
            raise InvalidParams(
                f"unknown config option {params.config_id!r}", {"path": "$.configId"}
            )
        spec = params.value
        choices = self.catalog.choices()
        if not isinstance(spec, str) or spec not in choices:
            raise InvalidParams(
                f"unknown model {spec!r}; one of {', '.join(choices)}", {"path": "$.value"}
            )
        self.require_key(spec)
        actor.deps.model = self.catalog.provider(spec)
        self._chosen[actor.id] = spec

    def chosen(self, session_id: str) -> str | None:
        """The model the client chose for the session, ``None`` while it is on the default."""
        return self._chosen.get(session_id)

    def restore(self, actor: SessionActor, spec: str) -> bool:
        """Put a loaded session back on the model it was on (``session/settings.py``);
        ``False`` when this server no longer offers it or lacks its key (the default stays)."""
        usable = (
            self.catalog.offers_selector()
            and spec in self.catalog.choices()
            and self.catalog.key_needed(spec) is None
        )
        if usable:
            actor.deps.model = self.catalog.provider(spec)
            self._chosen[actor.id] = spec
        return usable

    def forget(self, session_id: str) -> None:
        self._chosen.pop(session_id, None)


def _auth_method(needed: KeyNeeded) -> AuthMethod:
    return AuthMethod(
        id=needed.method_id,
        name=f"Set {needed.env}",
        description=needed.message[0].upper() + needed.message[1:] + ".",
        meta={"acp_agent": {"env": needed.env, "provider": needed.provider}},
    )
