"""The model-written title's request and cleaning (``turn/titles.py``)."""

from __future__ import annotations

import pytest

from acp_agent.content import TextContent
from acp_agent.journal.events import (
    AssistantMessage,
    Entry,
    Event,
    SourceKind,
    TextPart,
    TurnStart,
    UserMessage,
    source,
)
from acp_agent.turn.titles import TITLE_MAX_TOKENS, TITLE_SYSTEM, clean_title, title_request


@pytest.mark.parametrize(
    ("answer", "title"),
    [
        ('"Fixing the flaky login test."', "Fixing the flaky login test"),
        ("Title: **Journal fsync barriers**\n\nMore text", "Journal fsync barriers"),
        (
            "one two three four five six seven eight nine ten",
            "one two three four five six seven eight",
        ),
        ("  \n\n", None),
        ('""', None),
    ],
)
def test_clean_title(answer: str, title: str | None) -> None:
    assert clean_title(answer) == title


def entry(seq: int, event: Event) -> Entry:
    return Entry(seq=seq, time=0, event=event)


def test_the_request_carries_the_first_prompt_and_answer_no_tools_and_a_tiny_bound() -> None:
    entries = [
        entry(1, UserMessage("c", [TextContent(text="ctx")], source(SourceKind.CLIENT))),
        entry(2, TurnStart(turn=1)),
        entry(3, UserMessage("p", [TextContent(text="fix the login")], source(SourceKind.USER))),
        entry(
            4, AssistantMessage(turn=1, step=1, id="a", content=[TextPart("Done: it was a race")])
        ),
    ]
    request = title_request("s", entries)
    assert request is not None
    assert (request.turn, request.step, request.tools) == (0, 0, [])
    assert request.system == TITLE_SYSTEM and request.max_output_tokens == TITLE_MAX_TOKENS
    (ask,) = request.messages
    text = "".join(b.text for b in ask.content if isinstance(b, TextContent))
    assert text == "User: fix the login\n\nAssistant: Done: it was a race"
    assert title_request("s", entries[:2]) is None  # no direct prompt: no request
