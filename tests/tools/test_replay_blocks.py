"""``session/load`` queues its replay in blocks of frames (``AcpObserver.replay``,
``Connection.notify_all``): the client must read the very bytes one ``notify`` per update
gives, in order, whatever the journal holds (``docs/benchmarks.md``, "Replay <= 2.5x raw
decoding": batching is an optimization, never a second translator)."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from acp_agent.acp import projection
from acp_agent.acp.cursor import numbers, stamped
from acp_agent.acp.observer import REPLAY_BLOCK, AcpObserver
from acp_agent.acp.schema import SessionNotification
from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import (
    AssistantMessage,
    Compaction,
    CompactionReason,
    Entry,
    Event,
    SourceKind,
    ThoughtPart,
    ToolResult,
    TurnStart,
)
from acp_agent.tools.display import DiffView, PlanItem, PlanView, TerminalView, shown_as
from acp_agent.transport.jsonrpc import FrameError, encode_notification, encode_notifications
from tests.journal.builders import assistant, call, end, error, result, steering, user

SESSION = "s-replay"


class Catalog:
    def present(self, name: str, arguments: dict[str, object]) -> tuple[str, str, list[str]]:
        path = arguments.get("path")
        return f"{name} {path}", "read", [f"/w/{path}"] if isinstance(path, str) else []


class CapturingConn:
    """What ``AcpObserver.replay`` hands the connection: the blocks, as the wire gets them."""

    def __init__(self) -> None:
        self.blocks: list[bytes] = []

    async def notify_all(self, method: str, params: Sequence[object]) -> None:
        if params:
            self.blocks.append(encode_notifications(method, params))


POOL: list[Event] = [
    user("hi"),
    user("injected", kind=SourceKind.CLIENT),
    TurnStart(1),
    steering(1, "wait"),
    assistant(1, 1, "text with \u2028 and \n and \u00e9", ["c1"]),
    assistant(1, 2, "answer"),
    call(1, 1, "c1", {"path": "a.py", "n": [1, 2.5, None, True]}),
    result(1, 1, "c1"),
    result(1, 1, "c1", error=True),
    ToolResult(1, 1, "c1", [shown_as("Edited a.py", DiffView("/w/a.py", "new", "old"))], False),
    ToolResult(1, 1, "c1", [shown_as("$ ls", TerminalView("t1"))], False),
    ToolResult(1, 1, "c1", [shown_as("Plan", PlanView([PlanItem("a"), PlanItem("b")]))], False),
    error(1, 1),
    end(1),
]


def one_frame_each(entries: list[Entry], compaction_updates: bool) -> bytes:
    """The slow path: ``project`` per entry and one ``encode_notification`` per update, each
    numbered by ``cursor.numbers``."""
    names: projection.ToolNames = {}
    frames = []
    for entry in entries:
        updates = projection.project(
            entry, Catalog(), live=False, compaction_updates=compaction_updates, names=names
        )
        for update, seq in zip(updates, numbers(entry.seq, updates), strict=True):
            notification = SessionNotification(SESSION, stamped(update, seq))
            frames.append(encode_notification("session/update", notification))
    return b"".join(frames)


async def replayed(entries: list[Entry], compaction_updates: bool) -> list[bytes]:
    conn = CapturingConn()
    observer = AcpObserver(conn, SESSION, Catalog(), compaction_updates)  # type: ignore[arg-type]
    await observer.replay(entries)
    return conn.blocks


def numbered(events: list[Event]) -> list[Entry]:
    return [Entry(seq=i + 1, time=1_700_000_000_000 + i, event=e) for i, e in enumerate(events)]


@settings(max_examples=60, deadline=None)
@given(picks=st.lists(st.sampled_from(POOL), max_size=3 * REPLAY_BLOCK), updates=st.booleans())
def test_the_replay_blocks_are_the_frames_of_one_notify_per_update(
    picks: list[Event], updates: bool
) -> None:
    entries = numbered(picks)
    blocks = anyio.run(replayed, entries, updates)
    assert b"".join(blocks) == one_frame_each(entries, updates)
    assert all(blocks), "no empty block is queued"


def test_a_long_replay_is_queued_in_several_blocks() -> None:
    entries = numbered([assistant(1, 1, f"part {i}") for i in range(3 * REPLAY_BLOCK)])
    blocks = anyio.run(replayed, entries, False)
    assert len(blocks) == 3
    assert b"".join(blocks) == one_frame_each(entries, False)


def test_a_block_holds_at_most_replay_block_frames_whatever_an_entry_projects_to() -> None:
    # observer.py: the writer counts a block's frames against its capacity; entries of three
    # updates each (two thoughts and a text) must not stretch a block past REPLAY_BLOCK.
    message = with_thought(with_thought(assistant(1, 1, "visible")))
    entries = numbered([message] * REPLAY_BLOCK)
    blocks = anyio.run(replayed, entries, False)
    assert [block.count(b"\n") for block in blocks] == [REPLAY_BLOCK] * 3
    assert b"".join(blocks) == one_frame_each(entries, False)


def test_a_compaction_replays_alike_for_both_kinds_of_client() -> None:
    summary: list[ContentBlock] = [TextContent(text="what happened")]
    compaction = Compaction("k1", summary, 4, 5, CompactionReason.MANUAL)
    entries = numbered([user("a"), compaction, with_thought(assistant(2, 1, "visible"))])
    for updates in (False, True):
        assert b"".join(anyio.run(replayed, entries, updates)) == one_frame_each(entries, updates)


def with_thought(message: AssistantMessage) -> AssistantMessage:
    return msgspec.structs.replace(message, content=[ThoughtPart("thinking"), *message.content])


def test_encode_notifications_is_encode_notification_joined() -> None:
    params = [{"a": 1}, None, {"text": "x\ny"}, [1.5, "\u2028"]]
    joined = b"".join(encode_notification("m", p) for p in params)
    assert encode_notifications("m", params) == joined
    assert encode_notifications("m", []) == b""
    # Without a None, the params are encoded as lines and wrapped by one replace (jsonrpc.py).
    present = [{"a": 1}, "s", {"text": "x\ny", "u": "\u2028"}, [1.5], 7]
    assert encode_notifications("m/é", present) == b"".join(
        encode_notification("m/é", p) for p in present
    )


def test_a_raw_newline_in_any_notification_of_a_block_is_refused() -> None:
    # jsonrpc.py: an encoded frame may never hold a raw newline (it would split the line).
    with pytest.raises(FrameError, match="raw newline"):
        encode_notifications("m", [{"ok": 1}, {"bad": msgspec.Raw(b'"a\nb"')}])
