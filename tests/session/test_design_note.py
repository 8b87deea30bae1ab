"""The design note's acceptance criteria, proven at the Python API level.

Each test names the criterion (AC1..AC7 of mission/seed-en.md) it proves. The same criteria are
proven over the ACP wire with a real client in tests/integration/test_injection_wire.py.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from structlog.testing import capture_logs

from acp_agent.api import Session
from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import (
    EventType,
    SourceKind,
    TurnEnd,
    TurnEndKind,
    UserMessage,
    source,
)
from acp_agent.journal.faults import FaultKind, FaultOp, FaultPlan, FaultyJournalFile
from acp_agent.journal.files import JournalFile, open_journal_file
from acp_agent.journal.invariant import check
from acp_agent.journal.reader import load_journal
from acp_agent.turn.admission import AdditionalContext, Allow, Block, Decision
from acp_agent.turn.vocabulary import Finished, Placement, Refused, StopReason
from tests.session.support import GatedSync, GateTool, lines, requests, scripted_agent, types


def text_of(message: dict[str, Any]) -> str:
    return "".join(str(block.get("text", "")) for block in message["content"])


def user_texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    """(text, source kind) of the user-role messages of one logged model request."""
    return [
        (text_of(message), message["source"]["kind"])
        for message in request["messages"]
        if message["role"] == "user"
    ]


def journal_of(tmp_path: Path, session: Session) -> list[str]:
    path = tmp_path / "state" / "sessions" / session.id / "journal.jsonl"
    return path.read_text().splitlines()


def assert_invariant(tmp_path: Path, session: Session) -> None:
    loaded = load_journal(tmp_path / "state" / "sessions" / session.id / "journal.jsonl")
    assert check(loaded.header, loaded.entries) == []


# -- AC1 / AC2 / AC3: the shape of the API and of persisted events -----------------------------


def test_ac1_send_and_steer_carry_no_context() -> None:
    assert list(inspect.signature(Session.send).parameters) == ["self", "prompt"]
    assert list(inspect.signature(Session.steer).parameters) == ["self", "prompt"]


def test_ac2_additional_context_is_exactly_content_and_source() -> None:
    assert AdditionalContext.__struct_fields__ == ("content", "source")
    encoded = msgspec.json.encode(AdditionalContext([TextContent(text="x")], source("hook")))
    assert msgspec.json.decode(encoded) == {
        "content": [{"type": "text", "text": "x"}],
        "source": {"kind": "hook"},
    }


def test_ac3_no_context_message_prompt_prefix_or_envelope_in_the_vocabulary() -> None:
    names = {str(t) for t in EventType}
    assert "context/message" not in names
    assert not any("prefix" in f or "envelope" in f for f in UserMessage.__struct_fields__)
    assert UserMessage.__struct_fields__ == ("id", "content", "source")


# -- AC4: idle inject ------------------------------------------------------------------------------


async def test_ac4_idle_inject_appends_one_message_and_flushes_without_a_turn(
    tmp_path: Path,
) -> None:
    gated = GatedSync()
    async with scripted_agent(tmp_path, [], file_factory=gated.factory()) as (agent, log):
        session = await agent.new_session(tmp_path)
        gated.release.clear()  # the next fdatasync blocks until released
        injected = await session.inject("use tabs", source(SourceKind.CLIENT))
        assert injected.placement is Placement.APPENDED
        assert types(session.entries) == ["user/message"]  # admitted before the flush completes
        waiter_done = anyio.Event()

        async def wait_idle() -> None:
            await session.when_idle()
            waiter_done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_idle)
            await anyio.sleep(0.05)
            assert not waiter_done.is_set()  # when_idle waits for the unfinished flush
            gated.release.set()
        assert waiter_done.is_set()
        lines_on_disk = journal_of(tmp_path, session)
        assert len(lines_on_disk) == 2  # header + the one user/message, durable
        assert '"type":"user/message"' in lines_on_disk[1]
        assert not log.exists()  # no model call
        assert_invariant(tmp_path, session)


async def test_ac4_dispose_waits_for_the_idle_flush(tmp_path: Path) -> None:
    gated = GatedSync()
    async with scripted_agent(tmp_path, [], file_factory=gated.factory()) as (agent, _):
        session = await agent.new_session(tmp_path)
        gated.release.clear()
        await session.inject("x")
        with anyio.move_on_after(0.1) as early:
            await session.dispose()
        assert early.cancelled_caught  # still flushing
        gated.release.set()
        await session.dispose()
        assert len(journal_of(tmp_path, session)) == 2


async def test_ac4_idle_inject_does_not_change_turn_number(tmp_path: Path) -> None:
    script = lines('{"text": "one"}', '{"text": "two"}')
    async with scripted_agent(tmp_path, script) as (agent, log):
        session = await agent.new_session(tmp_path)
        assert await (await session.send("a")).outcome() == Finished(StopReason.END_TURN)
        await session.inject("between turns")
        assert await (await session.send("b")).outcome() == Finished(StopReason.END_TURN)
        await session.when_idle()
        turns = [e.event.turn for e in session.entries if isinstance(e.event, TurnEnd)]
        assert turns == [1, 2]
        assert types(session.entries).count("turn/start") == 2
        assert len(requests(log)) == 2  # one model request per send, none for the inject
        second = user_texts(requests(log)[1])
        assert second == [("a", "user"), ("between turns", "plugin"), ("b", "user")]
        assert_invariant(tmp_path, session)


# -- AC5: active-turn injection drains after the complete batch ---------------------------------


async def test_ac5_context_injected_mid_batch_lands_after_all_results_before_next_request(
    tmp_path: Path,
) -> None:
    gate = GateTool()
    script = lines(
        '{"toolCalls": [{"id": "c1", "name": "gate", "arguments": {"name": "one"}},'
        ' {"id": "c2", "name": "gate", "arguments": {"name": "two"}}]}',
        '{"text": "done"}',
    )
    async with scripted_agent(tmp_path, script, tools=[gate]) as (agent, log):
        session = await agent.new_session(tmp_path)
        pending = await session.send("go")
        await gate.reached("one").wait()
        staged = await session.inject("mid-batch note", source(SourceKind.CLIENT))
        assert staged.placement is Placement.STAGED
        gate.gate("one").set()
        await gate.reached("two").wait()
        steer = await session.steer("and hurry")
        assert steer is Placement.STEERED
        gate.gate("two").set()
        assert await pending.outcome() == Finished(StopReason.END_TURN)
        order = types(session.entries)
        assert order == [
            "turn/start",
            "user/message",
            "step/start",
            "assistant/message",
            "tool/call",
            "tool/call",
            "tool/result",
            "tool/result",
            "step/end",
            "user/message",
            "steering/message",
            "step/start",
            "assistant/message",
            "step/end",
            "turn/end",
        ]
        # the second request sees the note and the steering, as separate user messages in order
        second = requests(log)[1]
        assert user_texts(second)[-2:] == [("mid-batch note", "client"), ("and hurry", "user")]
        roles = [m["role"] for m in second["messages"]]
        assert roles == ["user", "assistant", "tool", "tool", "user", "user"]
        assert_invariant(tmp_path, session)


async def test_ac5_plain_context_in_a_final_step_is_appended_before_turn_end(
    tmp_path: Path,
) -> None:
    script = lines('{"chunks": ["a", "b"], "delayMs": 30}')
    async with scripted_agent(tmp_path, script) as (agent, log):
        session = await agent.new_session(tmp_path)
        pending = await session.send("go")
        await anyio.sleep(0.01)
        assert (await session.inject("late note")).placement is Placement.STAGED
        assert await pending.outcome() == Finished(StopReason.END_TURN)
        assert types(session.entries)[-3:] == ["step/end", "user/message", "turn/end"]
        assert len(requests(log)) == 1  # plain context does not force another step
        assert_invariant(tmp_path, session)


async def test_ac5_contexts_left_in_the_outbox_at_cancel_are_kept(tmp_path: Path) -> None:
    script = lines('{"text": "partial", "hang": true}')
    async with scripted_agent(tmp_path, script) as (agent, _):
        session = await agent.new_session(tmp_path)
        pending = await session.send("go")
        await anyio.sleep(0.02)
        await session.inject("keep me")
        await session.cancel()
        assert await pending.outcome() == Finished(StopReason.CANCELLED)
        tail = session.entries[-2:]
        assert isinstance(tail[0].event, UserMessage)
        assert isinstance(tail[1].event, TurnEnd)
        assert tail[1].event.reason.kind is TurnEndKind.CANCELLED
        assert_invariant(tmp_path, session)


# -- AC6: admission before the turn -----------------------------------------------------------


class BlockWords:
    def __init__(self) -> None:
        self.seen: list[list[ContentBlock]] = []

    async def admit(self, session_id: str, content: list[ContentBlock]) -> Decision:
        self.seen.append(content)
        text = "".join(b.text for b in content if isinstance(b, TextContent))
        if "forbidden" in text:
            return Block("no forbidden words")
        hint = AdditionalContext([TextContent(text="hint from hook")], source("hook", hook="t"))
        return Allow([TextContent(text=text.upper())], (hint,))


async def test_ac6_blocked_prompt_opens_no_turn_and_keeps_earlier_injection(
    tmp_path: Path,
) -> None:
    async with scripted_agent(tmp_path, [], admission=BlockWords()) as (agent, log):
        session = await agent.new_session(tmp_path)
        await session.inject("caller context")
        outcome = await (await session.send("a forbidden prompt")).outcome()
        assert outcome == Refused("no forbidden words")
        await session.when_idle()
        assert types(session.entries) == ["user/message"]  # only the injected context
        assert not log.exists()
        assert len(journal_of(tmp_path, session)) == 2
        assert_invariant(tmp_path, session)


async def test_ac6_allowed_prompt_then_hook_contexts_each_their_own_message(
    tmp_path: Path,
) -> None:
    async with scripted_agent(tmp_path, lines('{"text": "ok"}'), admission=BlockWords()) as (
        agent,
        log,
    ):
        session = await agent.new_session(tmp_path)
        assert await (await session.send("hello")).outcome() == Finished(StopReason.END_TURN)
        assert types(session.entries)[:4] == [
            "turn/start",
            "user/message",
            "user/message",
            "step/start",
        ]
        assert user_texts(requests(log)[0]) == [("HELLO", "user"), ("hint from hook", "hook")]


# -- durability: failed idle flush ------------------------------------------------------------


async def test_failed_idle_flush_is_reported_not_an_agent_error_and_retried(
    tmp_path: Path,
) -> None:
    plan = FaultPlan()

    def factory(path: Path, *, create: bool) -> JournalFile:
        return FaultyJournalFile(open_journal_file(path, create=create), plan)

    errors: list[tuple[str, int]] = []

    class Observer:
        async def appended(self, entry: object) -> None: ...
        async def text_delta(self, message_id: str, text: str) -> None: ...
        async def thought_delta(self, message_id: str, text: str) -> None: ...
        async def tool_started(self, call: object) -> None: ...
        async def journal_error(self, error: str, unflushed: int) -> None:
            errors.append((error, unflushed))

        async def titled(self, title: str) -> None: ...
        async def compaction_progress(self, *args: object) -> None: ...
        async def usage(self, *args: object) -> None: ...
        async def note(self, text: str) -> None: ...
        async def notice(self, notice: object) -> None: ...
        async def command_answer(self, text: str, command: str) -> None: ...

    from acp_agent.api import Agent
    from acp_agent.model.script import ScriptModel

    with capture_logs() as logs:
        async with Agent.open(
            tmp_path / "state",
            ScriptModel.from_lines([]),
            file_factory=factory,
            observer=lambda header: Observer(),
        ) as agent:
            session = await agent.new_session(tmp_path)
            plan.arm(FaultOp.FSYNC, FaultKind.EIO)
            injected = await session.inject("precious")
            health = await session.when_idle()
            # when_idle retried once: the armed fault fired once, the retry succeeded
            assert errors and errors[0][1] == 1
            assert health.healthy and health.unflushed == 0
            assert types(session.entries) == ["user/message"]
            assert "agent/error" not in "".join(journal_of(tmp_path, session))
            assert injected.message_id in journal_of(tmp_path, session)[1]
    assert any(entry["event"] == "journal_flush_failed" for entry in logs)


async def test_failed_flush_keeps_event_admitted_and_health_reports_it(tmp_path: Path) -> None:
    plan = FaultPlan()

    def factory(path: Path, *, create: bool) -> JournalFile:
        return FaultyJournalFile(open_journal_file(path, create=create), plan)

    async with scripted_agent(tmp_path, [], file_factory=factory) as (agent, _):
        session = await agent.new_session(tmp_path)
        plan.arm(FaultOp.FSYNC, FaultKind.EIO, times=2)  # the flush and when_idle's retry
        await session.inject("kept in memory")
        health = await session.when_idle()
        assert not health.healthy
        assert health.unflushed == 1
        assert health.last_error is not None
        assert types(session.entries) == ["user/message"]
        health = await session.when_idle()  # the fault has cleared: this retry succeeds
        assert health.healthy and health.unflushed == 0
        assert len(journal_of(tmp_path, session)) == 2


@pytest.mark.parametrize("steer_first", [True, False])
async def test_steer_when_idle_starts_a_new_turn(tmp_path: Path, steer_first: bool) -> None:
    async with scripted_agent(tmp_path, lines('{"text": "ok"}')) as (agent, log):
        session = await agent.new_session(tmp_path)
        if steer_first:
            assert await session.steer("do it") is Placement.STARTED_NEW_TURN
        else:
            await (await session.send("do it")).outcome()
        await session.when_idle()
        assert types(session.entries)[:2] == ["turn/start", "user/message"]
        assert user_texts(requests(log)[0]) == [("do it", "user")]


async def test_ac1_agent_queued_reports_only_retained_message_and_steering_facts(
    tmp_path: Path,
) -> None:
    script = lines('{"chunks": ["a", "b"], "delayMs": 40}', '{"text": "x"}', '{"text": "y"}')
    with capture_logs() as logs:
        async with scripted_agent(tmp_path, script) as (agent, _):
            session = await agent.new_session(tmp_path)
            first = await session.send("first")
            second = await session.send("second")
            await anyio.sleep(0.02)
            await session.steer("also")
            await first.outcome()
            await second.outcome()
    queued = [entry for entry in logs if entry["event"] == "agent_queued"]
    assert [(q["kind"], q["depth"]) for q in queued] == [("prompt", 1), ("steering", 1)]
    for entry in queued:
        assert set(entry) == {"event", "log_level", "kind", "depth", "turn", "session_id"}
