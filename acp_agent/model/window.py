"""The context window: the default assumed for a model whose provider names none, and the
window a server's overflow error names (so a session learns the real one at the first refusal).
"""

from __future__ import annotations

import re
from typing import Final

DEFAULT_CONTEXT_WINDOW: Final = 200_000
"""Tokens; ``--context-window`` / ``ACP_AGENT_CONTEXT_WINDOW`` and a provider's own
``context_window`` setting override it."""

_NAMED: Final = (
    # llama.cpp: "request (9412 tokens) exceeds the available context size (8192 tokens)"
    re.compile(r"available context size \((\d+) tokens\)"),
    # llama.cpp's error object: "n_ctx": 4096 (also older servers' message-less bodies)
    re.compile(r"\"?n_ctx\"?\s*[:=]\s*(\d+)"),
    # OpenAI, Azure, DeepSeek, vLLM, llama-cpp-python: "maximum context length is 4096 tokens"
    re.compile(r"maximum context length is (\d+) tokens"),
    # SGLang: "longer than the model's context length (32768 tokens)"
    re.compile(r"context length \((\d+) tokens\)"),
    # llama-cpp-python's own: "exceed context window of 4096"
    re.compile(r"context window of (\d+)"),
)


def window_named(text: str) -> int | None:
    """The window in tokens that a server's overflow error names, if it names one."""
    for pattern in _NAMED:
        match = pattern.search(text)
        if match is not None and int(match.group(1)) > 0:
            return int(match.group(1))
    return None


_COUNTED: Final = (
    re.compile(r"\"?n_prompt_tokens\"?\s*[:=]\s*(\d+)"),  # llama.cpp's error object
    re.compile(r"request \((\d+) tokens\) exceeds"),  # llama.cpp's message
    re.compile(r"(\d+) in the messages"),  # vLLM, DeepSeek, llama-cpp-python
    re.compile(r"messages resulted in (\d+) tokens"),  # OpenAI, Azure
    re.compile(r"has (\d+) input tokens"),  # vLLM
    re.compile(r"The input \((\d+) tokens\)"),  # SGLang
)


def prompt_tokens_named(text: str) -> int | None:
    """The refused request's prompt tokens as the server counted them, if its error says."""
    for pattern in _COUNTED:
        match = pattern.search(text)
        if match is not None:
            return int(match.group(1))
    return None


def overflow_facts(text: str) -> dict[str, int | None]:
    """``ContextOverflow``'s keyword arguments read from a server's error text."""
    return {"window": window_named(text), "prompt_tokens": prompt_tokens_named(text)}
