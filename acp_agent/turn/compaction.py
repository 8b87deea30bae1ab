"""History compaction: ``/compact`` and automatic compaction near the model's context window.

Theory of operation
-------------------
A compaction replaces the older part of the model-visible history by a summary the model writes,
and records that as one standalone ``session/compaction`` event, between turns. Nothing is
deleted from the journal: ``history.derive_messages`` simply starts from the last compaction's
summary and ``keptFromSeq`` (see its docstring), so what the model sees stays a pure function of
the journal ("model-visible = logged"), before and after a compaction.

*The cut* (``plan_compaction``) is a seq at which no turn is open: the ``turn/start`` of a turn
still visible, or the end of the history. So no tool call is ever separated from its result. It
keeps the most recent turns verbatim — at most ``KEEP_TURNS`` of them, within ``keep_tokens`` —
and summarizes the rest, which must hold at least one message: the earliest boundary meeting
all three wins. Messages are treated alike whatever their source: an out-of-turn
``user/message`` older than the cut goes into the summary, a newer one is kept verbatim, and
so is anything injected while the summary is being written (it lands after the cut).

*The summary* is asked of the session's own ``ModelProvider`` in one ordinary request: the
messages to summarize (the previous summary first, if any) and a last user-role instruction
(source ``{"kind": "compaction", "instruction": true}``), with no tools. The request is no turn:
it carries ``turn 0, step 0`` (the script model logs it like that). The answer's text, verbatim,
is the summary; an empty answer is a failure.

*When*: ``/compact [instructions]`` — a prompt whose whole text is the command — queues like any
prompt and skips admission (``SessionActor.compact``; the command's parser is
``commands/words.py``'s). Automatically, when a prompt has been admitted
and the derived history plus that prompt is estimated (JSON characters / 4) above
``AUTO_COMPACT_AT`` of the context window: the admission worker measures it (``window_neared``)
and the machine compacts before it opens the turn.

``api.compact_session`` compacts a session on disk with no server (for a CLI).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Final

import msgspec

from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import Entry, SourceKind, source
from acp_agent.journal.turns import turn_starts
from acp_agent.model.base import (
    CHARS_PER_TOKEN,
    ModelError,
    ModelMessage,
    ModelProvider,
    ModelRequest,
    TextDelta,
    UserTurn,
)
from acp_agent.model.window import DEFAULT_CONTEXT_WINDOW
from acp_agent.turn.fit import estimate, fit_messages
from acp_agent.turn.history import compacted_head, messages_of

COMMAND: Final = "/compact"
"""Tokens; a provider that knows better is configured with ``--context-window``."""
AUTO_COMPACT_AT: Final = 0.8
"""Compact before a turn when the history would fill this share of the window."""
KEEP_SHARE: Final = 0.25
"""At most this share of the window is kept verbatim after a compaction."""
KEEP_TURNS: Final = 1
SUMMARY_BUDGET: Final = 0.6
"""The summary request's messages are trimmed to this share of the window (``fit.py``): the
request that frees the window must itself fit, with room for the system prompt and the answer."""

SUMMARY_INSTRUCTION: Final = (
    "Summarize the conversation so far. Your summary replaces it: from now on you will see only "
    "the summary and the most recent turns. Keep the user's goals and requests, the decisions "
    "made, the facts learned (file names, values, results of tools), context supplied by other "
    "sources and where it came from, open questions and unfinished work. Write the summary only."
)


class CompactionProgress(StrEnum):
    """What a session reports while a compaction runs (its end is the appended event)."""

    STARTED = "started"
    FAILED = "failed"
    CANCELLED = "cancelled"


# -- sizes ------------------------------------------------------------------------------------


def estimate_tokens(messages: Sequence[ModelMessage]) -> int:
    """A provider-neutral estimate: characters of the messages' JSON / 4 (``model.base.tokens_of``)."""
    return estimate(messages)


def window_neared(tokens: int, context_window: int, share: float = AUTO_COMPACT_AT) -> bool:
    """Do messages whose estimate is ``tokens`` near the context window? (The actor takes the
    history's estimate from ``History.json_chars``, not by encoding it again.)"""
    return tokens > share * context_window


def keep_budget(context_window: int) -> int:
    return int(context_window * KEEP_SHARE)


# -- the cut ----------------------------------------------------------------------------------


class CompactionPlan(msgspec.Struct, frozen=True):
    messages: list[ModelMessage]
    """What the summary replaces: the previous summary (if any), then the messages to the cut."""
    kept_from_seq: int

    @property
    def through_seq(self) -> int:
        return self.kept_from_seq - 1


def plan_compaction(
    entries: Sequence[Entry], *, keep_tokens: int, keep_turns: int = KEEP_TURNS
) -> CompactionPlan | None:
    """Where to cut (see the module docstring); None when nothing can be summarized.

    ``entries`` must have no open turn (the machine compacts only between turns).
    """
    head, start = compacted_head(entries)
    visible = [entry for entry in entries if entry.seq >= start]
    end = entries[-1].seq + 1 if entries else 1
    cuts = [*turn_starts(visible), end]
    for cut in cuts:
        older = messages_of(e for e in visible if e.seq < cut)
        kept = [e for e in visible if e.seq >= cut]
        turns = len(turn_starts(kept))
        if older and turns <= keep_turns and estimate_tokens(messages_of(kept)) <= keep_tokens:
            return CompactionPlan(head + older, cut)
    return None


# -- the summary --------------------------------------------------------------------------------


def summary_request(
    session_id: str,
    plan: CompactionPlan,
    instructions: str,
    system: str = "",
    context_window: int = DEFAULT_CONTEXT_WINDOW,
    token_ratio: float = 1.0,
) -> ModelRequest:
    """The summary request, fitted to ``SUMMARY_BUDGET`` of the window in real tokens: its
    chars-÷-4 estimate times ``token_ratio`` (``gauge.py``) — what the server counts."""
    text = SUMMARY_INSTRUCTION
    if instructions:
        text += f"\n\nAdditional instructions from the user: {instructions}"
    ask = UserTurn([TextContent(text=text)], source(SourceKind.COMPACTION, instruction=True))
    ratio = max(token_ratio, 1.0)
    fixed = estimate([ask]) + len(system) // CHARS_PER_TOKEN
    budget = int(context_window * SUMMARY_BUDGET / ratio) - fixed
    messages = fit_messages(plan.messages, max(budget, 1))
    return ModelRequest(
        session_id,
        0,
        0,
        [*messages, ask],
        [],
        system,
        context_window=context_window,
        token_ratio=ratio,
    )


async def summarize(model: ModelProvider, request: ModelRequest) -> list[ContentBlock]:
    """The model's answer to ``request`` as summary content; raises ``ModelError``."""
    chunks = [item.text async for item in model.stream(request) if isinstance(item, TextDelta)]
    text = "".join(chunks).strip()
    if not text:
        raise ModelError("the model answered the summary request with no text")
    return [TextContent(text=text)]
