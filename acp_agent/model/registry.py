"""Model selection: ``--model SPEC`` to a provider instance (one per process)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

from acp_agent.model.base import ModelError, ModelProvider, ModelRequest, StreamEvent
from acp_agent.model.script import ScriptModel


class BadModelSpec(ValueError):
    pass


class Unconfigured:
    """Answers every request with an error telling the user what to configure."""

    name = "unconfigured"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        raise ModelError("no model configured: pass --model SPEC or set ACP_AGENT_MODEL")
        yield  # pragma: no cover - makes this an async generator


def make_model(spec: str | None) -> ModelProvider:
    if not spec:
        return Unconfigured()
    scheme, _, rest = spec.partition(":")
    if scheme == "script" and rest:
        log_path = os.environ.get("ACP_AGENT_SCRIPT_REQUESTS")
        return ScriptModel(Path(rest), Path(log_path) if log_path else None)
    raise BadModelSpec(f"unknown model spec {spec!r}; expected script:PATH")
