"""OpenAI-compatible Chat Completions providers: OpenAI, DeepSeek, any compatible base URL.

Importing this package imports neither the HTTP stack (httpx: the provider imports it at its
first request) nor the provider itself: its names are looked up at their first use (PEP 562),
so the registry can import ``settings`` before ``initialize`` is answered without paying for
the provider's anyio and structlog. See ``docs/providers.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp_agent.model.openai.provider import OpenAICompatible
    from acp_agent.model.openai.settings import (
        DEFAULT_CONTEXT_WINDOW,
        Endpoint,
        ModelSettings,
        RetryPolicy,
        Secret,
    )

_HOMES = {
    "DEFAULT_CONTEXT_WINDOW": "settings",
    "Endpoint": "settings",
    "ModelSettings": "settings",
    "OpenAICompatible": "provider",
    "RetryPolicy": "settings",
    "Secret": "settings",
}

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "Endpoint",
    "ModelSettings",
    "OpenAICompatible",
    "RetryPolicy",
    "Secret",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
