"""Compaction through the Python API, with the script model's request log as the witness.

"Model-visible = logged": every model request of a turn carries exactly ``derive_messages`` of
the journal as it was when the request was built (up to its ``step/start``) — before and after
a compaction. The summary request itself is no turn (``turn 0, step 0``, no tools): the messages
up to the cut, then the instruction.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec

from acp_agent.api import Agent, Session, compact_session
from acp_agent.content import plain_text
from acp_agent.journal.events import (
    Compaction,
    CompactionReason,
    Entry,
    StepStart,
    TurnStart,
    UserMessage,
    source,
)
from acp_agent.journal.invariant import check
from acp_agent.journal.reader import load_journal
from acp_agent.model.base import Capabilities, ModelRequest, StreamEvent
from acp_agent.model.script import ScriptLine, ScriptModel
from acp_agent.model.window import DEFAULT_CONTEXT_WINDOW
from acp_agent.turn.history import derive_messages
from acp_agent.turn.vocabulary import Failed, Finished, Placement, StopReason
from tests.session.support import lines, requests, types

END_TURN = Finished(StopReason.END_TURN)


@asynccontextmanager
async def agent_over(
    tmp_path: Path,
    script: list[ScriptLine],
    *,
    context_window: int = DEFAULT_CONTEXT_WINDOW,
    gated: bool = False,
) -> AsyncIterator[tuple[Agent, Path, GatedSummaries]]:
    log = tmp_path / "requests.jsonl"
    model = GatedSummaries(ScriptModel.from_lines(script, log), gated)
    async with Agent.open(tmp_path / "state", model, context_window=context_window) as agent:
        yield agent, log, model


class GatedSummaries:
    """The script model; with ``gated``, a summary request waits for ``release`` first."""

    name = "gated-script"
    capabilities = Capabilities()

    def __init__(self, inner: ScriptModel, gated: bool) -> None:
        self.inner = inner
        self.gated = gated
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if self.gated and request.turn == 0:
            self.entered.set()
            await self.release.wait()
        async for item in self.inner.stream(request):
            yield item


def encoded(value: object) -> Any:
    return json.loads(msgspec.json.encode(value))


def text_of(message: dict[str, Any]) -> str:
    return "".join(str(block.get("text", "")) for block in message["content"])


def user_texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [(text_of(m), m["source"]["kind"]) for m in request["messages"] if m["role"] == "user"]


def up_to_step(entries: Sequence[Entry], turn: int, step: int) -> list[Entry]:
    index = next(i for i, e in enumerate(entries) if e.event == StepStart(turn, step))
    return list(entries[: index + 1])


def assert_model_visible_is_logged(entries: Sequence[Entry], log: Path) -> None:
    """Every turn request equals the derivation of the journal at its ``step/start``."""
    for request in requests(log):
        if request["turn"] == 0:
            continue
        history = derive_messages(up_to_step(entries, request["turn"], request["step"]))
        assert request["messages"] == encoded(history), (request["turn"], request["step"])


def compactions(entries: Sequence[Entry]) -> list[tuple[int, Compaction]]:
    return [(e.seq, e.event) for e in entries if isinstance(e.event, Compaction)]


def turn_start_seq(entries: Sequence[Entry], turn: int) -> int:
    return next(e.seq for e in entries if e.event == TurnStart(turn))


def assert_invariant(tmp_path: Path, session: Session) -> None:
    loaded = load_journal(tmp_path / "state" / "sessions" / session.id / "journal.jsonl")
    assert check(loaded.header, loaded.entries) == []
    assert loaded.entries == session.entries  # everything admitted is durable


async def turn(session: Session, text: str) -> None:
    assert await (await session.send(text)).outcome() == END_TURN


# -- manual compaction ---------------------------------------------------------------------------


async def test_compact_summarizes_older_turns_and_later_requests_see_summary_plus_recent(
    tmp_path: Path,
) -> None:
    script = lines(
        '{"text": "one"}',
        '{"text": "two"}',
        '{"text": "three"}',
        '{"text": "SUMMARY of a and b"}',
        '{"text": "four"}',
    )
    async with agent_over(tmp_path, script) as (agent, log, _):
        session = await agent.new_session(tmp_path)
        for text in ("a", "b", "c"):
            await turn(session, text)
        outcome = await (await session.send("/compact keep the names")).outcome()
        assert outcome == END_TURN
        await turn(session, "d")
        await session.when_idle()
        entries = session.entries
        assert_invariant(tmp_path, session)
    assert types(entries).count("session/compaction") == 1
    [(seq, event)] = compactions(entries)
    cut = turn_start_seq(entries, 3)
    assert (event.through_seq, event.kept_from_seq, event.reason) == (
        cut - 1,
        cut,
        CompactionReason.MANUAL,
    )
    assert encoded(event.summary) == [{"type": "text", "text": "SUMMARY of a and b"}]
    assert types(entries)[seq - 2 : seq + 1] == ["turn/end", "session/compaction", "turn/start"]
    assert [e.event.turn for e in entries if isinstance(e.event, TurnStart)] == [1, 2, 3, 4]

    logged = requests(log)
    assert len(logged) == 5  # one per turn, plus the summary request
    summary_request = logged[3]
    assert (summary_request["turn"], summary_request["step"], summary_request["tools"]) == (
        0,
        0,
        [],
    )
    older = derive_messages([e for e in entries if e.seq < cut])
    assert summary_request["messages"][:-1] == encoded(older)
    instruction = summary_request["messages"][-1]
    assert instruction["source"] == {"kind": "compaction", "instruction": True}
    assert "keep the names" in text_of(instruction)

    after = logged[4]
    assert user_texts(after) == [("SUMMARY of a and b", "compaction"), ("c", "user"), ("d", "user")]
    assert after["messages"][0]["source"] == {"kind": "compaction", "id": event.id, "seq": seq}
    assert_model_visible_is_logged(entries, log)


async def test_session_compact_and_nothing_to_compact(tmp_path: Path) -> None:
    async with agent_over(tmp_path, lines('{"text": "S"}')) as (agent, log, _):
        session = await agent.new_session(tmp_path)
        assert await (await session.compact()).outcome() == END_TURN
        assert session.entries == []  # nothing to summarize: nothing asked, nothing appended
        assert not log.exists()
        await session.inject("a note")
        assert await (await session.compact("short")).outcome() == END_TURN
        await session.when_idle()
        assert types(session.entries) == ["user/message", "session/compaction"]
        assert_invariant(tmp_path, session)


async def test_compacting_a_session_whose_last_events_are_out_of_turn_injections(
    tmp_path: Path,
) -> None:
    script = lines('{"text": "one"}', '{"text": "two"}', '{"text": "S"}', '{"text": "three"}')
    async with agent_over(tmp_path, script) as (agent, log, _):
        session = await agent.new_session(tmp_path)
        await turn(session, "a")
        await session.inject("older context", source("client"))
        await turn(session, "b")
        await session.inject("x", source("client"))
        await session.inject("y", source("plugin", name="p"))
        assert await (await session.send("/compact")).outcome() == END_TURN
        await turn(session, "c")
        await session.when_idle()
        entries = session.entries
        assert_invariant(tmp_path, session)
    [(_, event)] = compactions(entries)
    assert event.kept_from_seq == turn_start_seq(entries, 2)  # turn 2, x and y kept verbatim
    summary_request, after = requests(log)[2:]
    assert user_texts(summary_request)[:-1] == [("a", "user"), ("older context", "client")]
    assert user_texts(after) == [
        ("S", "compaction"),
        ("b", "user"),
        ("x", "client"),
        ("y", "plugin"),
        ("c", "user"),
    ]
    assert_model_visible_is_logged(entries, log)


async def test_context_injected_during_a_compaction_is_appended_out_of_turn_and_kept(
    tmp_path: Path,
) -> None:
    script = lines('{"text": "one"}', '{"text": "two"}', '{"text": "S"}', '{"text": "three"}')
    async with agent_over(tmp_path, script, gated=True) as (agent, log, model):
        session = await agent.new_session(tmp_path)
        await turn(session, "a")
        await turn(session, "b")
        pending = await session.send("/compact")
        await model.entered.wait()
        injected = await session.inject("during", source("client"))
        assert injected.placement is Placement.APPENDED
        assert types(session.entries)[-1] == "user/message"  # appended at once, no turn
        model.release.set()
        assert await pending.outcome() == END_TURN
        await turn(session, "c")
        await session.when_idle()
        entries = session.entries
        assert_invariant(tmp_path, session)
    [(seq, event)] = compactions(entries)
    during = next(
        e.seq
        for e in entries
        if isinstance(e.event, UserMessage) and e.event.id == injected.message_id
    )
    assert event.kept_from_seq < during < seq  # landed after the cut: kept verbatim
    assert user_texts(requests(log)[-1]) == [
        ("S", "compaction"),
        ("b", "user"),
        ("during", "client"),
        ("c", "user"),
    ]
    assert_model_visible_is_logged(entries, log)


async def test_cancel_during_a_compaction_appends_nothing_and_answers_cancelled(
    tmp_path: Path,
) -> None:
    script = lines('{"text": "one"}', '{"text": "two"}')
    async with agent_over(tmp_path, script, gated=True) as (agent, log, model):
        session = await agent.new_session(tmp_path)
        await turn(session, "a")
        before = session.entries
        compacting = await session.send("/compact")
        queued = await session.send("queued")
        await model.entered.wait()
        await session.cancel()
        assert await compacting.outcome() == Finished(StopReason.CANCELLED)
        assert await queued.outcome() == Finished(StopReason.CANCELLED)
        await session.when_idle()
        assert session.entries == before  # no compaction, no queued prompt
        await turn(session, "b")
        await session.when_idle()
        entries = session.entries
        assert_invariant(tmp_path, session)
    assert compactions(entries) == []
    assert user_texts(requests(log)[-1]) == [("a", "user"), ("b", "user")]
    assert_model_visible_is_logged(entries, log)


async def test_a_failed_summary_answers_failed_and_appends_nothing(tmp_path: Path) -> None:
    script = lines(
        '{"text": "one"}', '{"error": {"message": "summary refused"}}', '{"text": "two"}'
    )
    async with agent_over(tmp_path, script) as (agent, log, _):
        session = await agent.new_session(tmp_path)
        await turn(session, "a")
        before = session.entries
        assert await (await session.send("/compact")).outcome() == Failed("summary refused")
        assert session.entries == before
        await turn(session, "b")
        await session.when_idle()
        assert_invariant(tmp_path, session)
    assert user_texts(requests(log)[-1]) == [("a", "user"), ("b", "user")]


# -- automatic compaction ----------------------------------------------------------------------


async def test_auto_compaction_before_a_turn_when_the_history_nears_the_window(
    tmp_path: Path,
) -> None:
    script = lines(*['{"text": "noted"}'] * 12)
    # 1000 tokens for the history, plus about 450 that the system message and tools take
    # (they are counted too: turn/gauge.py)
    async with agent_over(tmp_path, script, context_window=1450) as (agent, log, _):
        session = await agent.new_session(tmp_path)
        sent = 0
        while not compactions(session.entries):
            assert sent < 8, "no automatic compaction happened"
            sent += 1
            await turn(session, f"prompt {sent} " + "x" * 500)
        await turn(session, "after")
        await session.when_idle()
        entries = session.entries
        assert_invariant(tmp_path, session)
    [(seq, event)] = compactions(entries)
    assert event.reason is CompactionReason.AUTO
    assert sent > 2  # the first prompts fit
    assert entries[seq].event == TurnStart(sent)  # compacted, then the prompt's turn opened
    prompt = entries[seq + 1].event
    assert isinstance(prompt, UserMessage)
    assert plain_text(prompt.content).startswith(f"prompt {sent} ")
    assert event.kept_from_seq == turn_start_seq(entries, sent - 1)  # the last turn kept
    logged = requests(log)
    assert [r["turn"] for r in logged] == [*range(1, sent), 0, sent, sent + 1]
    first_after = user_texts(logged[sent])
    assert first_after[0] == ("noted", "compaction")
    assert [kind for _, kind in first_after] == ["compaction", "user", "user"]
    assert_model_visible_is_logged(entries, log)


# -- offline ---------------------------------------------------------------------------------------


async def test_compact_session_compacts_a_closed_session_on_disk(tmp_path: Path) -> None:
    async with agent_over(tmp_path, lines('{"text": "one"}', '{"text": "two"}')) as (agent, _, _):
        session = await agent.new_session(tmp_path, "closed-1")
        await turn(session, "a")
        await turn(session, "b")
    model = ScriptModel.from_lines(lines('{"text": "offline summary"}'))
    outcome = await compact_session(tmp_path / "state", "closed-1", model, instructions="brief")
    assert outcome == END_TURN
    loaded = load_journal(tmp_path / "state" / "sessions" / "closed-1" / "journal.jsonl")
    assert check(loaded.header, loaded.entries) == []
    [(_, event)] = compactions(loaded.entries)
    assert encoded(event.summary) == [{"type": "text", "text": "offline summary"}]
    assert event.kept_from_seq == turn_start_seq(loaded.entries, 2)


async def test_resume_after_compaction_keeps_committed_history_and_sees_summary(
    tmp_path: Path,
) -> None:
    """Compaction, then a fresh agent over the same state resumes the session: the next
    request is the journal's derivation (summary + kept history + the out-of-turn tail)."""
    script = lines('{"text": "one"}', '{"text": "two"}', '{"text": "S"}', '{"text": "three"}')
    async with agent_over(tmp_path, script) as (agent, log, _):
        session = await agent.new_session(tmp_path, "resumed")
        await turn(session, "a")
        await turn(session, "b")
        await session.inject("tail context", source("client"))
        assert await (await session.send("/compact")).outcome() == END_TURN
        await session.dispose()
    model = ScriptModel.from_lines(script[3:], log)
    async with Agent.open(tmp_path / "state", model) as agent:
        resumed = await agent.open_session("resumed")
        assert await (await resumed.send("c")).outcome() == END_TURN
        await resumed.when_idle()
        entries = resumed.entries
        assert_invariant(tmp_path, resumed)
    last = requests(log)[-1]
    assert user_texts(last) == [
        ("S", "compaction"),
        ("b", "user"),
        ("tail context", "client"),
        ("c", "user"),
    ]
    assert_model_visible_is_logged(entries, log)
