"""The context window assumed for a model whose provider names none: one definition for all."""

from __future__ import annotations

from typing import Final

DEFAULT_CONTEXT_WINDOW: Final = 200_000
"""Tokens; ``--context-window`` / ``ACP_AGENT_CONTEXT_WINDOW`` and a provider's own
``context_window`` setting override it."""
