"""OpenAI-compatible Chat Completions providers: OpenAI, DeepSeek, any compatible base URL.

Importing this package does not import the HTTP stack (httpx): the provider imports it at its
first request, so ``initialize`` answers without paying for it. See ``docs/providers.md``.
"""

from acp_agent.model.openai.provider import (
    DEFAULT_CONTEXT_WINDOW,
    Endpoint,
    ModelSettings,
    OpenAICompatible,
    RetryPolicy,
    Secret,
)

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "Endpoint",
    "ModelSettings",
    "OpenAICompatible",
    "RetryPolicy",
    "Secret",
]
