"""``fork_session`` through the real session layer: the child's journal, its model history,
and every refusal leaving nothing behind."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest

from acp_agent.api import Agent, Session
from acp_agent.content import TextContent
from acp_agent.journal.errors import JournalExists, JournalFlushError, JournalNotFound
from acp_agent.journal.events import Parent, UserMessage, source, source_kind
from acp_agent.journal.faults import Fault, FaultKind, FaultOp, faulty_factory
from acp_agent.journal.invariant import check, check_file
from acp_agent.journal.paths import InvalidSessionId
from acp_agent.journal.reader import load_journal
from acp_agent.model.base import UserTurn
from acp_agent.session.catalog import read_title
from acp_agent.session.errors import ForkRefused
from acp_agent.session.fork import fork_session
from acp_agent.session.settings import SessionSettings, read_settings, write_settings
from acp_agent.turn.history import derive_messages
from acp_agent.turn.vocabulary import Finished, StopReason
from tests.fork.support import (
    INJECTED_SEQ,
    LAST_SEQ,
    PARENT,
    PARENT_SCRIPT,
    build_parent,
    journal_entries,
    run_parent,
    workspace,
)
from tests.session.support import GateTool, lines, requests, scripted_agent, types


async def open_session(agent: Agent, session_id: str) -> Session:
    return await agent.open_session(session_id)


def session_ids(state: Path) -> list[str]:
    return sorted(path.name for path in (state / "sessions").iterdir())


async def test_fork_at_a_between_turn_injection_continues_from_exactly_that_history(
    tmp_path: Path,
) -> None:
    script = lines(*PARENT_SCRIPT, '{"text": "forked answer"}')
    async with scripted_agent(tmp_path, script) as (agent, log):
        await run_parent(agent, workspace(tmp_path))  # the parent stays live: its lock is held
        state = tmp_path / "state"
        parent_bytes = (state / "sessions" / PARENT / "journal.jsonl").read_bytes()
        header = await fork_session(state, PARENT, at_seq=INJECTED_SEQ, new_id="child")
        assert header.parent == Parent(session_id=PARENT, seq=INJECTED_SEQ)
        assert header.cwd == str(workspace(tmp_path))

        forked = load_journal(state / "sessions" / "child" / "journal.jsonl")
        assert forked.header == header
        assert forked.entries == journal_entries(state, PARENT)[:INJECTED_SEQ]  # seqs and times
        last = forked.entries[-1].event
        assert isinstance(last, UserMessage) and source_kind(last.source) == "client"
        assert check(forked.header, forked.entries) == []

        child = await open_session(agent, "child")
        assert await (await child.send("and now?")).outcome() == Finished(StopReason.END_TURN)
        request = requests(log)[-1]
        assert (request["sessionId"], request["turn"], request["step"]) == ("child", 2, 1)
        expected = [
            *derive_messages(forked.entries),
            UserTurn([TextContent(text="and now?")], source("user")),
        ]
        assert request["messages"] == msgspec.to_builtins(expected)
        assert "read a.txt please" not in str(request["messages"])
        await child.dispose()
        assert (state / "sessions" / PARENT / "journal.jsonl").read_bytes() == parent_bytes
    assert check_file(state / "sessions" / "child") == []
    assert types(journal_entries(state, "child")[INJECTED_SEQ:]) == [
        "turn/start",
        "user/message",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]


async def test_fork_defaults_to_the_last_boundary_an_out_of_turn_tail_included(
    tmp_path: Path,
) -> None:
    state = await build_parent(tmp_path)
    header = await fork_session(state, PARENT)
    assert header.parent == Parent(session_id=PARENT, seq=LAST_SEQ)
    child = journal_entries(state, header.id)
    assert child == journal_entries(state, PARENT)
    last = child[-1].event
    assert isinstance(last, UserMessage) and source_kind(last.source) == "hook"
    assert check_file(state / "sessions" / header.id) == []
    assert read_title(state / "sessions" / header.id) == "Hi there"  # as the parent was titled


async def test_fork_at_zero_is_an_empty_child_with_another_cwd(tmp_path: Path) -> None:
    state = await build_parent(tmp_path)
    header = await fork_session(state, PARENT, at_seq=0, new_id="empty", cwd="/elsewhere")
    loaded = load_journal(state / "sessions" / "empty" / "journal.jsonl")
    assert (loaded.header.cwd, loaded.header.parent, loaded.entries) == (
        "/elsewhere",
        Parent(session_id=PARENT, seq=0),
        [],
    )
    assert header == loaded.header
    assert read_title(state / "sessions" / "empty") is None


async def test_the_child_gets_the_parents_mode_and_model(tmp_path: Path) -> None:
    state = await build_parent(tmp_path)
    chosen = SessionSettings(mode="read-only", model="openai:gpt-4.1")
    write_settings(state / "sessions" / PARENT, chosen)
    header = await fork_session(state, PARENT)
    assert read_settings(state / "sessions" / header.id) == chosen
    plain = await fork_session(state, header.id, at_seq=0, new_id="plain")
    assert read_settings(state / "sessions" / plain.id) == chosen
    (state / "sessions" / PARENT / "settings.json").unlink()
    bare = await fork_session(state, PARENT, new_id="bare")
    assert not (state / "sessions" / bare.id / "settings.json").exists()


@pytest.mark.parametrize(
    ("seq", "reason"),
    [
        (9, "seq 9 is inside turn 2 (turn/start at seq 8, turn/end at seq 18)"),
        (2, "seq 2 is inside turn 1 (turn/start at seq 1, turn/end at seq 6)"),
        (20, "seq 20 is past the end of the journal (last seq 19)"),
    ],
)
async def test_fork_at_a_non_boundary_is_refused_and_creates_nothing(
    tmp_path: Path, seq: int, reason: str
) -> None:
    state = await build_parent(tmp_path)
    with pytest.raises(ForkRefused) as refused:
        await fork_session(state, PARENT, at_seq=seq, new_id="child")
    assert str(refused.value) == f"cannot fork session 'parent' at seq {seq}: {reason}"
    assert session_ids(state) == [PARENT]


async def test_unknown_parent_bad_ids_and_a_taken_id_create_nothing(tmp_path: Path) -> None:
    state = await build_parent(tmp_path)
    with pytest.raises(JournalNotFound):
        await fork_session(state, "nope")
    with pytest.raises(InvalidSessionId):
        await fork_session(state, "../parent")
    with pytest.raises(InvalidSessionId):
        await fork_session(state, PARENT, new_id="a/b")
    with pytest.raises(JournalExists):
        await fork_session(state, PARENT, new_id=PARENT)
    assert session_ids(state) == [PARENT]
    assert check_file(state / "sessions" / PARENT) == []


async def test_a_failed_copy_removes_the_half_made_child(tmp_path: Path) -> None:
    state = await build_parent(tmp_path)
    first_flush_fails = faulty_factory([Fault(FaultOp.FSYNC, FaultKind.EIO, first=2)])
    with pytest.raises(JournalFlushError):
        await fork_session(state, PARENT, new_id="child", file_factory=first_flush_fails)
    assert session_ids(state) == [PARENT]


async def test_a_live_parent_mid_turn_forks_at_what_is_on_disk_before_the_turn(
    tmp_path: Path,
) -> None:
    gate = GateTool()
    script = lines(
        '{"text": "one"}',
        '{"toolCalls": [{"id": "g1", "name": "gate", "arguments": {"name": "x"}}]}',
        '{"text": "two"}',
    )
    async with scripted_agent(tmp_path, script, tools=[gate]) as (agent, _log):
        parent = await agent.new_session(tmp_path, PARENT)
        await (await parent.send("first")).outcome()
        await parent.inject("between", source("client"))
        await parent.when_idle()
        pending = await parent.send("second")
        await gate.reached("x").wait()  # turn 2 is open; its tool call is durable
        state = tmp_path / "state"
        with pytest.raises(ForkRefused, match=r"seq 9 is inside turn 2 \(.*no turn/end yet\)"):
            await fork_session(state, PARENT, at_seq=9)
        header = await fork_session(state, PARENT)
        assert header.parent == Parent(session_id=PARENT, seq=7)
        gate.gate("x").set()
        assert await pending.outcome() == Finished(StopReason.END_TURN)
    assert types(journal_entries(state, header.id)) == [
        *["turn/start", "user/message", "step/start", "assistant/message", "step/end"],
        *["turn/end", "user/message"],
    ]


async def test_forking_a_live_parent_first_makes_what_it_admitted_durable(tmp_path: Path) -> None:
    inject_flush_fails = faulty_factory(
        [Fault(FaultOp.WRITE, FaultKind.EIO, first=2, session=PARENT)]  # write 1 is the header
    )
    async with scripted_agent(tmp_path, [], file_factory=inject_flush_fails) as (agent, _log):
        parent = await agent.new_session(tmp_path, PARENT)
        await parent.inject("between", source("client"))
        writer = agent._sessions.get(PARENT).actor.writer
        while writer.health.healthy:  # noqa: ASYNC110 - the failure has no event to await
            await anyio.sleep(0.01)
        assert journal_entries(tmp_path / "state", PARENT) == []  # admitted, not on disk
        child = await agent.fork_session(PARENT, tmp_path)
        assert child.header.parent == Parent(session_id=PARENT, seq=1)
        assert types(child.entries) == ["user/message"]
