"""kill -9 at random moments (reliability.md scenario 1): what was acknowledged survives.

One seeded loop (``KILL9_SEED`` overrides the seed, ``KILL9_ITERATIONS`` the count). Each
iteration starts a new agent process on the same state dir and first ``session/load``s the session
the previous iteration killed, then checks, against what the journal held at the moment of the
kill (read before the new process touched it):

- the load succeeds; the journal afterwards is the old valid prefix, byte for byte, plus exactly
  the repair ``interrupted_turn_repair`` prescribes: synthetic error results, ``step/end`` and
  ``turn/end {interrupted}`` for a turn the kill cut open, and nothing at all when the journal
  ended between turns (a trailing out-of-turn ``user/message`` is kept as it is);
- a damaged tail was moved to a ``journal.tail.*`` side file holding exactly the removed bytes;
- every event the client saw *acknowledged as durable* is in the journal and in the replay: an
  injection followed by an answered ``_acp_agent/when_idle`` (or by a prompt whose response
  arrived), a staged injection whose turn answered, a prompt whose response arrived (its turn
  ended ``completed``);
- seqs are contiguous, the invariant holds, and ``acp-agent journal check`` exits 0.

Then (sometimes in a fresh session, usually in the same one) it drives a random mix of streaming
turns, tool batches and injections, and SIGKILLs the process at a random moment — now and then
while the load itself runs, so a repair can be cut short too. A last process verifies the last
kill. The loop prints a one-line summary.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import pytest

from acp_agent.journal.events import Entry, ToolResult, TurnEnd, TurnStart, UserMessage
from acp_agent.journal.reader import ParsedJournal, parse_journal
from tests.integration.support import read_call, serve_command, write_script
from tests.support.durability import (
    agent_said,
    assert_loaded_from,
    check_frames_of_killed,
    has_open_turn,
    initialize,
    inject,
    journal_check_cli,
    journal_file,
    killable_agent,
    last_request_id,
    sigkill,
    text,
    until,
    updates_before_response,
    when_idle,
)
from tests.support.recording import RecordedAgent, RecordingClient

pytestmark = pytest.mark.subprocess

SEED = int(os.environ.get("KILL9_SEED", "1337"))
ITERATIONS = int(os.environ.get("KILL9_ITERATIONS", "30"))
KILL_WINDOW = 0.5  # seconds after the driving starts
KILL_DURING_LOAD = 0.15  # probability
FRESH_SESSION = 0.2  # probability


# --- what the client saw acknowledged ---------------------------------------------------------


@dataclass
class Acked:
    """Per session: what must survive any later crash."""

    message_ids: set[str] = field(default_factory=set)
    prompts: set[str] = field(default_factory=set)
    pending_ids: list[str] = field(default_factory=list)
    """Injections answered ``appended`` but not yet covered by a durability barrier."""

    def barrier_passed(self, pending: list[str]) -> None:
        """A barrier the client saw complete covers every injection answered before it began."""
        self.message_ids.update(pending)
        del self.pending_ids[: len(pending)]


@dataclass
class Stats:
    iterations: int = 0
    mid_turn: int = 0
    idle: int = 0
    repaired_tails: int = 0
    during_load: int = 0
    kept_trailing: int = 0
    synthetic_results: int = 0
    fresh_sessions: int = 0
    acked_events: int = 0

    def line(self, seconds: float) -> str:
        kills = self.mid_turn + self.idle + self.during_load
        return (
            f"kill -9 loop (seed {SEED}): {kills} iterations/kills, {self.mid_turn} kills mid-turn,"
            f" {self.idle} kills while idle ({self.kept_trailing} leaving trailing out-of-turn"
            f" user/messages, kept), {self.during_load} kills during session/load,"
            f" {self.repaired_tails} repaired tails, {self.synthetic_results} synthetic tool"
            f" results, {self.iterations} verified loads,"
            f" {self.fresh_sessions} sessions, {self.acked_events} acknowledged events checked,"
            f" {seconds:.1f}s"
        )


class SlowReads(RecordingClient):
    """Answers ``fs/read_text_file`` after a pause, so kills land inside tool batches too."""

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.04)
        return await super().read_text_file(*args, **kwargs)


# --- the plan of one iteration ----------------------------------------------------------------


@dataclass(frozen=True)
class Action:
    kind: str  # stream | tools | staged | inject | burst
    chunks: int = 0
    delay_ms: int = 0
    count: int = 0


def plan_actions(rng: random.Random) -> list[Action]:
    actions = []
    for _ in range(rng.randint(3, 7)):
        kind = rng.choice(["stream", "stream", "tools", "staged", "inject", "inject", "burst"])
        actions.append(
            Action(
                kind,
                chunks=rng.randint(10, 30),
                delay_ms=rng.randint(2, 8),
                count=rng.randint(2, 5),
            )
        )
    return actions


def script_lines(actions: list[Action], tag: str) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for n, action in enumerate(actions):
        if action.kind in ("stream", "staged"):
            chunks = [f"{tag}-{n}:{k} " for k in range(action.chunks)]
            lines.append({"chunks": chunks, "delayMs": action.delay_ms})
        elif action.kind == "tools":
            lines.append(
                {"toolCalls": [read_call(f"{tag}-{n}-a", "a"), read_call(f"{tag}-{n}-b", "b")]}
            )
            lines.append({"chunks": [f"{tag}-{n}:read "] * 3, "delayMs": action.delay_ms})
    return lines


async def drive(
    agent: RecordedAgent, sid: str, actions: list[Action], tag: str, acked: Acked
) -> None:
    """Run the plan; record each acknowledgment the moment it arrives."""
    for n, action in enumerate(actions):
        prompt = f"{tag}-{n}"
        if action.kind in ("stream", "tools"):
            pending = list(acked.pending_ids)
            response = await agent.prompt_text(sid, prompt)
            assert response.stop_reason == "end_turn"
            acked.prompts.add(prompt)
            acked.barrier_passed(pending)
        elif action.kind == "staged":
            pending = list(acked.pending_ids)
            turn = asyncio.create_task(agent.prompt_text(sid, prompt))
            try:
                await until(partial(agent_said, agent, sid, f"{prompt}:0 "), "the first chunk")
                staged = await inject(agent, sid, text(f"{prompt} staged"))
                assert staged["placement"] == "staged"
                assert (await turn).stop_reason == "end_turn"
            finally:  # killed meanwhile: the prompt fails with the connection; collect it
                turn.cancel()
                await asyncio.gather(turn, return_exceptions=True)
            acked.prompts.add(prompt)
            acked.message_ids.add(staged["messageId"])
            acked.barrier_passed(pending)
        elif action.kind == "inject":
            injected = await inject(agent, sid, f"{prompt} idle")
            assert injected["placement"] == "appended"
            acked.pending_ids.append(injected["messageId"])
            pending = list(acked.pending_ids)
            health = await when_idle(agent, sid)
            assert health["journal"]["healthy"] is True
            acked.barrier_passed(pending)
        else:  # a burst of idle injections, no barrier of its own
            for k in range(action.count):
                injected = await inject(agent, sid, f"{prompt} burst {k}")
                acked.pending_ids.append(injected["messageId"])


# --- checking a killed session ----------------------------------------------------------------


def encode_events(entries: list[Entry]) -> list[bytes]:
    return [msgspec.json.encode(entry.event) for entry in entries]


def ends_between_turns_with_user_messages(entries: list[Entry]) -> bool:
    """The journal ends with ``user/message``s after the last ``turn/end`` (or with no turn)."""
    trailing = 0
    for entry in reversed(entries):
        if isinstance(entry.event, UserMessage):
            trailing += 1
            continue
        return trailing > 0 and isinstance(entry.event, TurnEnd)
    return trailing > 0


def check_acknowledged(entries: list[Entry], acked: Acked, replay: list[dict[str, Any]]) -> int:
    """Every acknowledged event is in the journal (and in the replay); returns how many."""
    ids = {e.event.id for e in entries if isinstance(e.event, UserMessage)}
    missing_ids = acked.message_ids - ids
    assert not missing_ids, f"acknowledged injections lost: {sorted(missing_ids)}"
    completed: set[str] = set()
    turn_prompt: str | None = None
    for entry in entries:
        event = entry.event
        if isinstance(event, TurnStart):
            turn_prompt = None
        elif isinstance(event, UserMessage) and event.source.get("kind") == "user":
            turn_prompt = turn_prompt or _plain(event)
        elif isinstance(event, TurnEnd) and event.reason.kind == "completed" and turn_prompt:
            completed.add(turn_prompt)
    missing_prompts = acked.prompts - completed
    assert not missing_prompts, f"acknowledged turns lost or not completed: {missing_prompts}"
    replayed_ids = {
        p["update"].get("messageId")
        for p in replay
        if p["update"]["sessionUpdate"] == "user_message_chunk"
    }
    assert acked.message_ids <= replayed_ids, "the replay misses acknowledged injections"
    replayed_text = {
        p["update"]["content"].get("text")
        for p in replay
        if p["update"]["sessionUpdate"] == "user_message_chunk"
    }
    assert acked.prompts <= replayed_text, "the replay misses acknowledged prompts"
    return len(acked.message_ids) + len(acked.prompts)


def _plain(message: UserMessage) -> str:
    return "".join(getattr(block, "text", "") for block in message.content)


@dataclass
class KillSnapshot:
    """The session's journal as the kill left it, before any process touched it again."""

    data: bytes
    parsed: ParsedJournal


def snapshot(state_dir: Path, sid: str) -> KillSnapshot:
    data = journal_file(state_dir, sid).read_bytes()
    return KillSnapshot(data, parse_journal(data))


def check_after_load(state_dir: Path, sid: str, before: KillSnapshot, stats: Stats) -> list[Entry]:
    """The journal right after a successful load: the old prefix plus exactly the repair."""
    # a kill cuts at most the last write: every complete line the agent wrote is good
    prefix_len = before.data.rfind(b"\n") + 1
    assert before.parsed.size == prefix_len, before.parsed.tail
    outcome = assert_loaded_from(before.data, prefix_len, journal_file(state_dir, sid))
    old = before.parsed.entries
    if before.parsed.tail is not None:
        stats.repaired_tails += 1
    if has_open_turn(old):
        stats.mid_turn += 1
        repair = outcome.entries[outcome.kept :]
        stats.synthetic_results += sum(isinstance(e.event, ToolResult) for e in repair)
    else:
        stats.idle += 1
        assert outcome.repaired == 0
        if ends_between_turns_with_user_messages(old):
            stats.kept_trailing += 1
    return outcome.entries


async def cli_check(state_dir: Path, sid: str) -> None:
    """``acp-agent journal check`` on a copy (the live session keeps appending meanwhile)."""
    copy = state_dir.parent / f"check-{sid}-{time.monotonic_ns()}"
    shutil.copytree(state_dir / "sessions" / sid, copy / "sessions" / sid)
    result = await asyncio.to_thread(journal_check_cli, copy, sid)
    assert result.returncode == 0, result.stdout + result.stderr
    shutil.rmtree(copy)


# --- the loop ---------------------------------------------------------------------------------


# A hang guard that grows with the loop (each iteration spawns and kills an agent, then runs
# `journal check` and a load): the suite-wide 60 s came within seconds of the 30-iteration
# loop's run time at a load of 9 on 2 cores. Not a speed target.
@pytest.mark.timeout(max(60, 6 * ITERATIONS))
async def test_kill9_loop_loses_nothing_acknowledged(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    started = time.monotonic()
    rng = random.Random(SEED)
    (workspace / "a").write_text("A" * 100)
    (workspace / "b").write_text("B" * 100)
    files = {str(workspace / "a"): "A" * 100, str(workspace / "b"): "B" * 100}
    acked: dict[str, Acked] = {}
    stats = Stats()
    current: str | None = None
    before: KillSnapshot | None = None  # the journal as the last kill left it

    for iteration in range(ITERATIONS + 1):
        last = iteration == ITERATIONS
        tag = f"i{iteration}"
        actions = [] if last else plan_actions(rng)
        script = write_script(tmp_path / f"{tag}.jsonl", *script_lines(actions, tag))
        kill_in_load = before is not None and not last and rng.random() < KILL_DURING_LOAD
        fresh = current is None or (not last and rng.random() < FRESH_SESSION)
        kill_after = rng.uniform(0, KILL_WINDOW)
        load_kill_after = rng.uniform(0, 0.03)
        async with killable_agent(
            SlowReads(files=files),
            serve_command(script),
            env=agent_env,
            validate=False,
            expect_exit_code=None,
        ) as agent:
            await initialize(agent)
            if current is not None and before is not None:
                start = len(agent.transcript.agent_frames)
                loading = asyncio.create_task(
                    agent.conn.load_session(cwd=str(workspace), session_id=current)
                )
                if kill_in_load:
                    # cut the load (and its repair) short; the next process must still end
                    # with the old prefix plus exactly the repair, so `before` is kept
                    await asyncio.sleep(load_kill_after)
                    await sigkill(agent)
                    loading.cancel()
                    await asyncio.gather(loading, return_exceptions=True)
                    stats.during_load += 1
                    continue
                await loading
                replay = updates_before_response(
                    agent, start, last_request_id(agent, "session/load")
                )
                entries = check_after_load(state_dir, current, before, stats)
                stats.acked_events += check_acknowledged(entries, acked[current], replay)
                stats.iterations += 1
                await cli_check(state_dir, current)
            if last:
                break
            if fresh:
                current = await agent_session(agent, workspace)
                acked[current] = Acked()
                stats.fresh_sessions += 1
            assert current is not None
            driver = asyncio.create_task(drive(agent, current, actions, tag, acked[current]))
            done, _ = await asyncio.wait({driver}, timeout=kill_after)
            if driver in done:
                driver.result()  # a failed acknowledgment is a failure, not a kill
            await sigkill(agent)
            driver.cancel()
            await asyncio.gather(driver, return_exceptions=True)
            # injections no barrier covered before the kill may or may not have survived
            acked[current].pending_ids.clear()
        check_frames_of_killed(agent)
        before = snapshot(state_dir, current)

    summary = stats.line(time.monotonic() - started)
    print("\n" + summary)
    assert stats.iterations == ITERATIONS - stats.during_load
    assert stats.mid_turn > 0 and stats.idle > 0, summary


async def agent_session(agent: RecordedAgent, workspace: Path) -> str:
    response = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
    return response.session_id
