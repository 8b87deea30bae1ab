"""Making a request fit the model's context window by trimming text, visibly.

Used where a request must go out whatever the history holds: the compaction request, which is
what frees the window, so it must never be the request that fails for want of it
(``compaction.py``). The history itself is never changed: only what one request sends.

``fit_messages`` trims the *largest* text first (a pasted log, a huge tool result, the prompt
that overflowed), keeping its beginning and end and putting a marker in the middle that says how
much was left out, until the messages' estimate is within the budget. Messages, their order and
their sources stay as they are, so the summary can still say where everything came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import AssistantPart, TextPart, ThoughtPart
from acp_agent.model.base import (
    CHARS_PER_TOKEN,
    AssistantTurn,
    ModelMessage,
    ToolTurn,
    UserTurn,
    tokens_of,
)

MIN_KEEP_CHARS: Final = 200
"""A text is never trimmed below this (its head and tail around the marker)."""
MAX_ROUNDS: Final = 64


def estimate(messages: Sequence[ModelMessage]) -> int:
    """Tokens, as the rest of the session layer counts them: JSON characters / 4."""
    return tokens_of(len(msgspec.json.encode(messages)))


def marker(removed: int) -> str:
    return f"\n[… {removed} characters left out here to fit the model's context window …]\n"


def trimmed(text: str, keep: int) -> str:
    """``text`` cut to about ``keep`` characters: its head and tail around a marker."""
    if len(text) <= keep + len(marker(len(text))):
        return text
    edge = max(keep // 2, 1)
    return text[:edge] + marker(len(text) - 2 * edge) + text[-edge:]


def fit_messages(messages: Sequence[ModelMessage], budget_tokens: int) -> list[ModelMessage]:
    """``messages`` with their largest texts trimmed until the estimate is within budget (or
    nothing is left to trim)."""
    fitted = list(messages)
    for _ in range(MAX_ROUNDS):
        excess = (estimate(fitted) - budget_tokens) * CHARS_PER_TOKEN
        if excess <= 0:
            break
        index, size = _largest(fitted)
        if size <= MIN_KEEP_CHARS + len(marker(size)):
            break
        fitted[index] = _shrunk(fitted[index], max(size - excess, MIN_KEEP_CHARS))
    return fitted


def _largest(messages: Sequence[ModelMessage]) -> tuple[int, int]:
    sizes = [max((len(t) for t in _texts(m)), default=0) for m in messages]
    index = max(range(len(sizes)), key=sizes.__getitem__, default=0)
    return index, sizes[index] if sizes else 0


def _texts(message: ModelMessage) -> list[str]:
    match message:
        case UserTurn(content=blocks) | ToolTurn(content=blocks):
            return [b.text for b in blocks if isinstance(b, TextContent)]
        case AssistantTurn(content=parts):
            return [p.text for p in parts if isinstance(p, TextPart | ThoughtPart)]
    return []


def _shrunk(message: ModelMessage, keep: int) -> ModelMessage:
    """``message`` with its largest text trimmed to ``keep`` characters."""
    longest = max(_texts(message), key=len)
    match message:
        case UserTurn(content=blocks, source=src):
            return UserTurn(_blocks(blocks, longest, keep), src)
        case ToolTurn(call_id=call_id, content=blocks, is_error=is_error):
            return ToolTurn(call_id, _blocks(blocks, longest, keep), is_error)
        case AssistantTurn(content=parts, reasoning_details=details):
            return AssistantTurn(_parts(parts, longest, keep), details)
    return message


def _blocks(blocks: list[ContentBlock], longest: str, keep: int) -> list[ContentBlock]:
    done, out = False, []
    for block in blocks:
        if not done and isinstance(block, TextContent) and block.text is longest:
            block, done = msgspec.structs.replace(block, text=trimmed(block.text, keep)), True
        out.append(block)
    return out


def _parts(parts: list[AssistantPart], longest: str, keep: int) -> list[AssistantPart]:
    done, out = False, []
    for part in parts:
        if not done and isinstance(part, TextPart | ThoughtPart) and part.text is longest:
            part, done = msgspec.structs.replace(part, text=trimmed(part.text, keep)), True
        out.append(part)
    return out


# -- a tool loop that outgrew the window --------------------------------------------------------


def left_out(chars: int) -> str:
    return (
        f"[tool result left out to fit the model's context window ({chars} characters); "
        "the full result is kept in the session's journal]"
    )


def fit_tool_results(
    messages: Sequence[ModelMessage], recent: int, budget_tokens: int
) -> list[ModelMessage]:
    """``messages`` with the oldest of their last ``recent`` tool results (the open turn's)
    left out, each replaced by a marker, until the estimate is within budget; the newest one is
    cut to its head and tail (``trimmed``) rather than left out. What one request sends only:
    the journal keeps every result whole."""
    fitted = list(messages)
    turn_tools = [i for i, m in enumerate(fitted) if isinstance(m, ToolTurn)][-recent:]
    for index in turn_tools[:-1] if recent else ():
        if estimate(fitted) <= budget_tokens:
            return fitted
        fitted[index] = _left_out(fitted[index])
    excess = (estimate(fitted) - budget_tokens) * CHARS_PER_TOKEN
    if recent and turn_tools and excess > 0:
        newest = turn_tools[-1]
        size = max((len(t) for t in _texts(fitted[newest])), default=0)
        if size > MIN_KEEP_CHARS:
            fitted[newest] = _shrunk(fitted[newest], max(size - excess, MIN_KEEP_CHARS))
    return fitted


def _left_out(message: ModelMessage) -> ModelMessage:
    assert isinstance(message, ToolTurn)
    chars = sum(len(t) for t in _texts(message))
    if chars <= MIN_KEEP_CHARS:
        return message
    return ToolTurn(message.call_id, [TextContent(text=left_out(chars))], message.is_error)
