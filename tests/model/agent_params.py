"""Request params and environment for the model tests that drive the real agent process
(``test_process.py``, ``test_titles.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.process import EnvOverrides

NO_KEYS: EnvOverrides = {"OPENAI_API_KEY": None, "DEEPSEEK_API_KEY": None, "OPENAI_BASE_URL": None}
"""No provider key or base URL from the machine's environment."""


def init() -> dict[str, Any]:
    return {"protocolVersion": 1, "clientCapabilities": {}}


def new(cwd: Path, session_id: str) -> dict[str, Any]:
    """``session/new`` asking for ``session_id`` (``_meta.acp_agent.sessionId``)."""
    return {"cwd": str(cwd), "mcpServers": [], "_meta": {"acp_agent": {"sessionId": session_id}}}


def prompt(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
