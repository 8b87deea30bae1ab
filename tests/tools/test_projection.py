"""Tool results carrying views, projected to ACP: live and on replay (one translator)."""

from __future__ import annotations

import msgspec

from acp_agent.acp import projection
from acp_agent.content import TextContent
from acp_agent.journal.events import Entry, ToolResult
from acp_agent.tools.display import DiffView, PlanItem, PlanStatus, PlanView, TerminalView, shown_as


class Catalog:
    def present(self, name: str, arguments: dict[str, object]) -> tuple[str, str, list[str]]:
        return name, "other", []


def wire(entry: Entry, *, live: bool) -> list[object]:
    return [msgspec.to_builtins(u) for u in projection.project(entry, Catalog(), live=live)]


def result(*blocks: TextContent, error: bool = False) -> Entry:
    return Entry(seq=5, time=0, event=ToolResult(1, 1, "c1", list(blocks), error))


def test_a_diff_is_shown_next_to_its_text_live_and_on_replay() -> None:
    entry = result(shown_as("Edited /w/a.py", DiffView("/w/a.py", "new", "old")))
    expected = [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "status": "completed",
            "content": [
                {"type": "diff", "path": "/w/a.py", "newText": "new", "oldText": "old"},
                {"type": "content", "content": {"type": "text", "text": "Edited /w/a.py"}},
            ],
        }
    ]
    assert wire(entry, live=True) == expected
    assert wire(entry, live=False) == expected


def test_a_terminal_is_shown_live_and_its_output_on_replay() -> None:
    entry = result(shown_as("$ ls\na\n[exit code 0]", TerminalView("t1")))
    (live,) = wire(entry, live=True)
    assert live["content"] == [{"type": "terminal", "terminalId": "t1"}]  # type: ignore[index]
    (replayed,) = wire(entry, live=False)
    assert replayed["content"] == [  # type: ignore[index]
        {"type": "content", "content": {"type": "text", "text": "$ ls\na\n[exit code 0]"}}
    ]


def test_a_plan_follows_the_tool_call_update() -> None:
    entries = [PlanItem("a", PlanStatus.COMPLETED), PlanItem("b")]
    entry = result(shown_as("Plan updated", PlanView(entries)))
    for live in (True, False):
        update, plan = wire(entry, live=live)
        assert update["status"] == "completed"  # type: ignore[index]
        assert plan == {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "a", "priority": "medium", "status": "completed"},
                {"content": "b", "priority": "medium", "status": "pending"},
            ],
        }


def test_other_meta_is_kept_and_plain_blocks_pass_through() -> None:
    block = shown_as("x", DiffView("/p", "n"))
    mixed = TextContent(text="x", meta={**(block.meta or {}), "other": 1})
    (update,) = wire(result(mixed, TextContent(text="plain"), error=True), live=True)
    assert update["status"] == "failed"  # type: ignore[index]
    assert update["content"][1:] == [  # type: ignore[index]
        {"type": "content", "content": {"type": "text", "text": "x", "_meta": {"other": 1}}},
        {"type": "content", "content": {"type": "text", "text": "plain"}},
    ]
