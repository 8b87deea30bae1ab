"""reliability.md scenario 12: many sessions at once, concurrent prompts, injections and cancels.

One agent process, ``SESSIONS`` sessions driven concurrently by one SDK client. Each session
runs ``BATCHES`` random batches: one prompt left to finish, one prompt cancelled at a random
point, or two prompts sent back to back (queued FIFO) and then cancelled; injections fly at
random moments throughout, some while idle, some into running turns. Then, for each session:
the journal holds the invariant, each batch's answers agree with its turns, every acknowledged
injection is there exactly once where its placement said, queued prompts were answered in
order, and no turn update came after its prompt's answer. A second process then loads every
session, and ``acp-agent journal check`` passes for each.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.integration.support import check_journal, serve_command, write_script
from tests.reliability.support import (
    CANCEL_POINTS,
    SEED,
    SlowClient,
    Tally,
    cancel_point,
    check_injections,
    check_turns,
    inject_after,
    make_files,
    prompt_ids,
    prompt_sent,
    random_script,
    scaled,
)
from tests.support.durability import initialize, journal_check_cli, when_idle
from tests.support.recording import RecordedAgent, decode_agent_line, recorded_agent

pytestmark = [pytest.mark.subprocess, pytest.mark.reliability]

SESSIONS = scaled(6, 32)
BATCHES = scaled(4, 10)
TURN_UPDATES = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update"}
)


@dataclass
class Batch:
    prompts: int
    first_line: int
    """Agent lines recorded when the batch was sent: nothing of it can come before."""
    request_ids: list[Any] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    journal_from: int = 0


@dataclass
class SessionRun:
    sid: str
    rng: random.Random
    batches: list[Batch] = field(default_factory=list)
    acknowledged: dict[str, str] = field(default_factory=dict)


async def run_batch(agent: RecordedAgent, run: SessionRun, index: int, journal_len: int) -> None:
    rng, sid = run.rng, run.sid
    kind = rng.choice(["finish", "cancel", "cancel", "queued"])
    batch = Batch(2 if kind == "queued" else 1, len(agent.transcript.agent_lines))
    batch.journal_from = journal_len
    run.batches.append(batch)
    sent = len(agent.transcript.client_messages)
    prompts = []
    for k in range(batch.prompts):
        prompts.append(asyncio.create_task(agent.prompt_text(sid, f"{sid} batch {index}.{k}")))
        await prompt_sent(agent, sent, sid, k + 1)  # so the FIFO order is known
    injections = [
        asyncio.create_task(inject_after(agent, sid, rng.uniform(0, 0.3), f"{sid} ctx {index}.{k}"))
        for k in range(rng.choice([0, 1, 1, 2]))
    ]
    if kind != "finish":
        await cancel_point(agent, rng, rng.choice(CANCEL_POINTS))
        await agent.conn.cancel(session_id=sid)
    batch.answers = [(await asyncio.wait_for(p, 30)).stop_reason for p in prompts]
    if kind == "finish":
        assert batch.answers == ["end_turn"], batch.answers
    for injected in await asyncio.gather(*injections):
        run.acknowledged[injected["messageId"]] = injected["placement"]
    batch.request_ids = prompt_ids(agent, sent, sid)
    assert len(batch.request_ids) == batch.prompts


async def drive_session(agent: RecordedAgent, run: SessionRun, state_dir: Path, cwd: Path) -> None:
    for index in range(BATCHES):
        journal_len = len(check_journal(state_dir, run.sid, cwd).events)
        await run_batch(agent, run, index, journal_len)
        health = await when_idle(agent, run.sid)
        assert health["journal"] == {"healthy": True, "unflushed": 0, "lastError": None}
        if run.rng.random() < 0.3:  # an idle injection between batches
            await inject_after(agent, run.sid, 0, f"{run.sid} idle {index}")


def check_session(
    run: SessionRun, frames: list[dict[str, Any]], state_dir: Path, cwd: Path, tally: Tally
) -> None:
    journal = check_journal(state_dir, run.sid, cwd)
    bounds = [b.journal_from for b in run.batches] + [len(journal.events)]
    for batch, start, end in zip(run.batches, bounds, bounds[1:], strict=False):
        tally.answers.update(batch.answers)
        check_turns(journal.events[start:end], batch.answers, tally)
    check_injections(journal.events, run.acknowledged, tally)
    check_order(run, frames)
    check_fifo(run, journal.events)


def check_fifo(run: SessionRun, events: list[dict[str, Any]]) -> None:
    """The prompts the journal holds are in the order they were sent."""
    texts = [
        block["text"]
        for e in events
        if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"
        for block in e["data"]["content"]
    ]
    sent = [f"{run.sid} batch {i}.{k}" for i, b in enumerate(run.batches) for k in range(b.prompts)]
    assert texts == [t for t in sent if t in texts], f"{run.sid}: prompts journaled out of order"


def check_order(run: SessionRun, frames: list[dict[str, Any]]) -> None:
    """Queued prompts that both ran answered in order; no turn update after the batch's answers.

    A queued prompt that a cancel reaches before its turn starts is answered at once, while the
    running one answers once its ``turn/end`` is durable, so then the order may flip (JSON-RPC
    does not order responses; the turns themselves still run FIFO: ``check_fifo``).
    """
    starts = [b.first_line for b in run.batches] + [len(frames)]
    for batch, end in zip(run.batches, starts[1:], strict=False):
        window = frames[batch.first_line : end]
        where = [
            next(i for i, f in enumerate(window) if "method" not in f and f.get("id") == rid)
            for rid in batch.request_ids
        ]
        if batch.answers.count("end_turn") == len(where):
            assert where == sorted(where), f"{run.sid}: queued prompts answered out of order"
        late = [
            f["params"]["update"]["sessionUpdate"]
            for f in window[max(where) + 1 :]
            if f.get("method") == "session/update"
            and f["params"]["sessionId"] == run.sid
            and f["params"]["update"]["sessionUpdate"] in TURN_UPDATES
        ]
        assert not late, f"{run.sid}: turn updates after the batch's last answer: {late}"


@pytest.mark.timeout(90 + SESSIONS * BATCHES)
async def test_many_sessions_at_once_each_keep_the_invariant(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    rng = random.Random(SEED)
    make_files(workspace)
    lines = random_script(rng, SESSIONS * BATCHES * 8 + 50)
    script = write_script(tmp_path / "script.jsonl", *lines)
    started = time.monotonic()
    tally = Tally()
    async with recorded_agent(SlowClient(rng), serve_command(script), env=agent_env) as agent:
        await initialize(agent)
        runs = []
        for _ in range(SESSIONS):
            created = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
            runs.append(SessionRun(created.session_id, random.Random(rng.random())))
        await asyncio.gather(*(drive_session(agent, run, state_dir, workspace) for run in runs))
        frames = [decode_agent_line(raw) for raw in agent.transcript.agent_lines]
        for run in runs:
            check_session(run, frames, state_dir, workspace, tally)
    print(tally.line(f"{SESSIONS} sessions x {BATCHES} batches", time.monotonic() - started))
    assert tally.answers["cancelled"] > 0 and tally.answers["end_turn"] > 0

    async with recorded_agent(env=agent_env) as agent:
        await initialize(agent)
        for run in runs:
            await agent.conn.load_session(cwd=str(workspace), session_id=run.sid, mcp_servers=[])
    for run in runs:
        assert journal_check_cli(state_dir, run.sid).returncode == 0, run.sid
