"""Model-written session titles: one small request after the first turn, in the background.

When a session's first turn (turn 1) ends, the actor asks the session's model for a short
title (``title_request``: the first prompt and the start of the answer, no tools, a tiny
output bound ``TITLE_MAX_TOKENS``) in a task of its own: nothing waits for it. Bounded by
``TITLE_TIMEOUT_S``; a failure, a timeout or an empty answer is logged (``title_not_written``)
and the first-prompt title stays. The task is cancelled when the session closes (the actor's
task group ends), and a title set meanwhile by other means is never overwritten (the actor
checks that the title is still the one the request started from).

Never for the ``script:`` model: its lines answer turns and compactions only, so a scripted
session keeps its first-prompt title (``SessionDeps.model_titles`` is false for it). The
request is no turn: it carries ``turn 0, step 0`` like a compaction's summary request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import anyio

from acp_agent.content import ContentBlock, TextContent, plain_text
from acp_agent.controls import without_controls
from acp_agent.journal.events import (
    AssistantMessage,
    Entry,
    SourceKind,
    TextPart,
    UserMessage,
    source as make_source,
    source_kind,
)
from acp_agent.model.base import ModelProvider, ModelRequest, TextDelta, UserTurn
from acp_agent.turn.parts import aclose_stream

TITLE_LENGTH: Final = 80
TITLE_MAX_TOKENS: Final = 24
TITLE_TIMEOUT_S: Final = 20.0
TITLE_WORDS: Final = 8
EXCERPT_CHARS: Final = 1500


def title_from(text: str) -> str:
    """A session title from free text: one line, no control character (``controls.py``), at
    most ``TITLE_LENGTH`` characters. Every title goes through here: the first prompt's, the
    model's (``clean_title``) and the client's (``session/set_title``)."""
    line = " ".join(without_controls(text).split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


TITLE_SYSTEM: Final = (
    "You name conversations. Answer with a title of at most 8 words for the conversation "
    "below: plain text on one line, no quotes, no final period."
)


def title_request(session_id: str, entries: Sequence[Entry]) -> ModelRequest | None:
    """The title request for a session whose first turn is in ``entries`` (None: no prompt)."""
    prompt = next((e.event for e in entries if _is_prompt(e)), None)
    if not isinstance(prompt, UserMessage):
        return None
    answer = " ".join(
        part.text
        for e in entries
        if isinstance(e.event, AssistantMessage)
        for part in e.event.content
        if isinstance(part, TextPart)
    )
    text = f"User: {plain_text(prompt.content)[:EXCERPT_CHARS]}"
    if answer.strip():
        text += f"\n\nAssistant: {answer[:EXCERPT_CHARS]}"
    content: list[ContentBlock] = [TextContent(text=text)]
    ask = UserTurn(content, make_source(SourceKind.PLUGIN, name="title"))
    return ModelRequest(
        session_id, 0, 0, [ask], [], TITLE_SYSTEM, max_output_tokens=TITLE_MAX_TOKENS
    )


def _is_prompt(entry: Entry) -> bool:
    event = entry.event
    return isinstance(event, UserMessage) and source_kind(event.source) == SourceKind.USER


async def ask_title(model: ModelProvider, request: ModelRequest) -> str | None:
    """The model's title, cleaned (None: it gave nothing usable in time). Raises the
    provider's ``ModelError``."""
    chunks: list[str] = []
    events = model.stream(request)
    try:
        with anyio.move_on_after(TITLE_TIMEOUT_S):
            async for item in events:
                if isinstance(item, TextDelta):
                    chunks.append(item.text)
            return clean_title("".join(chunks))
        return None
    finally:
        await aclose_stream(events)


def clean_title(text: str) -> str | None:
    """One line, no surrounding quotes or final period, at most ``TITLE_WORDS`` words."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return None
    line = lines[0].removeprefix("Title:").strip().strip("\"'`*").rstrip(".").strip()
    words = line.split()[:TITLE_WORDS]
    return title_from(" ".join(words)) or None
