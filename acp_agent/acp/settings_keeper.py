"""Keeping a session's mode and model across processes (``session/settings.py`` on disk).

The router calls ``remember`` after every ``session/set_mode`` / ``session/set_config_option``,
and ``restore`` when ``session/load``, ``session/resume`` or ``session/fork`` opens a session
from disk (a fork's file is the parent's, copied by ``session/fork.py``). A failed write is logged
(``session_settings_write_failed``) and the change stands for this process; a model the server
no longer offers (or whose key is missing) is logged (``session_model_unavailable``) and the
session stays on the default.
"""

from __future__ import annotations

from pathlib import Path

import structlog

from acp_agent.acp.model_option import ModelOption
from acp_agent.session.actor import SessionActor
from acp_agent.session.settings import SessionSettings, load_settings, save_settings
from acp_agent.tools.permissions import Permissions, parse_mode

log = structlog.get_logger(__name__)


class SettingsKeeper:
    def __init__(self, models: ModelOption) -> None:
        self.models = models

    async def remember(self, state_dir: Path, actor: SessionActor) -> None:
        settings = SessionSettings(str(_permissions(actor).mode), self.models.chosen(actor.id))
        await save_settings(state_dir, actor.id, settings)

    async def restore(self, state_dir: Path, actor: SessionActor) -> None:
        settings = await load_settings(state_dir, actor.id)
        mode = parse_mode(settings.mode) if settings.mode is not None else None
        if mode is not None:
            _permissions(actor).mode = mode
        if settings.model is not None and not self.models.restore(actor, settings.model):
            log.warning("session_model_unavailable", session_id=actor.id, model=settings.model)


def _permissions(actor: SessionActor) -> Permissions:
    return actor.deps.tools.permissions
