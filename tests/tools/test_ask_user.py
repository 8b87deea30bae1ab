"""``ask_user`` against an in-memory elicitation twin: the form it asks with (ACP
``ElicitationFormMode`` / ``StringPropertySchema``, SDK 2.4.0 ``schema/v1/schema.json``) and how
each answer (``CreateElicitationResponse`` actions) becomes the tool result."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.content import TextContent
from acp_agent.errors import PeerError
from acp_agent.tools.ask_user import AskUser
from acp_agent.tools.base import ToolContext, ToolError
from acp_agent.tools.client import Elicited
from acp_agent.tools.permissions import CallInfo
from acp_agent.tools.registry import coding_tools
from tests.support.acp_schema import AcpSchema


class Twin:
    def __init__(self, answer: Elicited | Exception) -> None:
        self.answer = answer
        self.asked: list[tuple[str | None, str, dict[str, object]]] = []

    async def ask(
        self, call_id: str | None, message: str, requested_schema: dict[str, object]
    ) -> Elicited:
        self.asked.append((call_id, message, requested_schema))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def context(twin: Twin | None, tmp_path: Path) -> ToolContext:
    call = CallInfo("q1", "Ask", "other", [], {})
    return ToolContext("s1", tmp_path, call=call, elicitation=twin)


async def run(args: dict[str, object], twin: Twin | None, tmp_path: Path) -> tuple[str, bool]:
    """The result text and error flag, as the runner makes them (a ``ToolError`` is a result)."""
    try:
        out = await AskUser().run(args, context(twin, tmp_path))
    except ToolError as exc:
        out = exc.output()
    block = out.content[0]
    assert isinstance(block, TextContent)
    return block.text, out.is_error


ASK: dict[str, object] = {"question": "Tabs or spaces?", "options": ["tabs", "spaces"]}


async def test_the_form_is_a_titled_single_choice_valid_per_the_schema(
    tmp_path: Path, acp_schema: AcpSchema
) -> None:
    twin = Twin(Elicited("accept", {"answer": "tabs"}))
    assert await run(ASK, twin, tmp_path) == ("The user answered: tabs", False)
    ((call_id, message, form),) = twin.asked
    assert (call_id, message) == ("q1", "Tabs or spaces?")
    acp_schema.check_type(form, "ElicitationSchema")
    answer = form["properties"]["answer"]  # type: ignore[index]
    assert answer["oneOf"] == [
        {"const": "tabs", "title": "tabs"},
        {"const": "spaces", "title": "spaces"},
    ]


async def test_free_text_without_options(tmp_path: Path, acp_schema: AcpSchema) -> None:
    twin = Twin(Elicited("accept", {"answer": "use black"}))
    assert await run({"question": "Formatter?"}, twin, tmp_path) == (
        "The user answered: use black",
        False,
    )
    form = twin.asked[0][2]
    acp_schema.check_type(form, "ElicitationSchema")
    assert "oneOf" not in form["properties"]["answer"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("answer", "text", "is_error"),
    [
        (Elicited("decline"), "The user declined to answer.", False),
        (Elicited("cancel"), "The user dismissed the question", False),
        (Elicited("accept", None), "The user accepted but gave no answer.", False),
        (Elicited("_custom"), "ask_user: the client answered an unknown action '_custom'", True),
        (PeerError(-32603, "boom"), "ask_user: the client could not ask the user", True),
    ],
)
async def test_each_answer_becomes_the_result(
    tmp_path: Path, answer: Elicited | Exception, text: str, is_error: bool
) -> None:
    got, error = await run({"question": "?"}, Twin(answer), tmp_path)
    assert got.startswith(text) and error is is_error


@pytest.mark.parametrize(
    "args",
    [
        {"question": "   "},
        {"question": "pick", "options": ["a", "a"]},
        {"question": "pick", "options": ["a", " "]},
        {"question": "pick", "options": [str(n) for n in range(21)]},
        {"options": ["a"]},
    ],
)
async def test_bad_arguments_are_errors_without_asking(
    tmp_path: Path, args: dict[str, object]
) -> None:
    twin = Twin(Elicited("accept", {"answer": "x"}))
    _, error = await run(args, twin, tmp_path)
    assert error and twin.asked == []


async def test_without_elicitation_there_is_no_tool_and_no_question(tmp_path: Path) -> None:
    assert "ask_user" not in [t.name for t in coding_tools()]
    assert "ask_user" in [t.name for t in coding_tools(ask_user=True)]
    text, error = await run({"question": "?"}, None, tmp_path)
    assert error and "cannot ask the user" in text
