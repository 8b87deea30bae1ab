"""Shared pieces of the reliability suite: scale, seeds, random turns, and per-turn checks.

Scale: the quick variant runs in the normal ``make test``; ``ACP_AGENT_RELIABILITY=full`` (what
``make test-reliability`` sets) multiplies the iterations. ``RELIABILITY_SEED`` replays a run.

The checks read the journal's raw lines through ``tests.integration.support.check_journal``
(format + the project's invariant checker), then hold what reliability.md asks per turn:

- a prompt is answered exactly once, ``end_turn`` or ``cancelled``, never an error;
- each ``end_turn`` answer is one turn ended ``completed``; each ``cancelled`` answer at most one
  turn, ended ``cancelled`` — or ``completed`` when the cancel raced the natural end, which
  acp-notes.md still answers ``cancelled`` — (a cancel that beats the turn's start opens none);
- every acknowledged injection is in the journal exactly once, inside a turn when it was
  answered ``staged`` and between turns when answered ``appended`` (context is never dropped);
- every turn update of the session comes before the prompt's answer.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.support import TURN_UPDATE_KINDS, read_call
from tests.support.acp_schema import JsonObject
from tests.support.durability import inject, until
from tests.support.recording import RecordedAgent, RecordingClient, decode_agent_line

FULL = os.environ.get("ACP_AGENT_RELIABILITY") == "full"
SEED = int(os.environ.get("RELIABILITY_SEED", "20261130"))
FILES = {"a.txt": "alpha\n", "b.txt": "beta\n" * 20, "c.txt": "gamma\n"}


def scaled(quick: int, full: int) -> int:
    """``quick`` in the normal suite, ``full`` under ``ACP_AGENT_RELIABILITY=full``."""
    return full if FULL else quick


def make_files(workspace: Path) -> None:
    for name, content in FILES.items():
        (workspace / name).write_text(content, encoding="utf-8")


def random_line(rng: random.Random, tag: str) -> JsonObject:
    """One script answer: a few streamed chunks, often a tool batch (sometimes a missing file)."""
    line: JsonObject = {
        "chunks": [f"{tag}:{k} " for k in range(rng.randint(2, 10))],
        "delayMs": rng.randint(2, 15),
    }
    if rng.random() < 0.2:
        line["thought"] = f"thinking about {tag}"
    if rng.random() < 0.55:
        names = [*FILES, "missing.txt"]
        line["toolCalls"] = [
            read_call(f"{tag}-{k}", rng.choice(names)) for k in range(rng.randint(1, 3))
        ]
    return line


def random_script(rng: random.Random, count: int, prefix: str = "l") -> list[JsonObject]:
    """``count`` answers; each line is a valid answer to any request, so a cancelled turn that
    leaves some unconsumed only shifts which answer the next request gets."""
    return [random_line(rng, f"{prefix}{n}") for n in range(count)]


class SlowClient(RecordingClient):
    """Answers ``fs/read_text_file`` after a random pause: cancels land while a tool waits."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__(real_fs=True)
        self.rng = rng

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(self.rng.uniform(0, 0.03))
        return await super().read_text_file(*args, **kwargs)


async def inject_after(agent: RecordedAgent, sid: str, delay: float, text: str) -> JsonObject:
    await asyncio.sleep(delay)
    return await inject(agent, sid, text)


async def prompt_sent(
    agent: RecordedAgent, since: int, sid: str | None = None, count: int = 1
) -> None:
    """Wait until the SDK has written ``count`` ``session/prompt``s after message ``since``."""
    await until(lambda: len(prompt_ids(agent, since, sid)) >= count, "the prompt to be sent")


async def cancel_point(agent: RecordedAgent, rng: random.Random, how: str) -> None:
    """Wait for the moment the plan names, then return (the caller cancels)."""
    updates = agent.client.updates
    if how == "at once":
        return
    if how == "after a delay":
        await asyncio.sleep(rng.uniform(0, 0.25))
        return
    start = len(updates)
    wanted = rng.randint(1, 8) if how == "after updates" else 1
    deadline = asyncio.get_running_loop().time() + 1.0
    while asyncio.get_running_loop().time() < deadline:
        new = updates[start:]
        if how == "after updates" and len(new) >= wanted:
            return
        if how == "at a tool call" and any(
            type(r.update).__name__ in ("ToolCallStart", "ToolCallProgress") for r in new
        ):
            return
        await asyncio.sleep(0.002)


CANCEL_POINTS = ("at once", "after a delay", "after updates", "at a tool call")


# --- checking ------------------------------------------------------------------------------------


@dataclass
class Tally:
    """What a run saw, for its summary line and for "the test was not vacuous" checks."""

    answers: Counter[str] = field(default_factory=Counter)
    cancelled_in: Counter[str] = field(default_factory=Counter)
    staged: int = 0
    appended: int = 0
    raced_end: int = 0
    tool_results: int = 0
    synthetic_results: int = 0

    def line(self, what: str, seconds: float) -> str:
        return (
            f"{what} (seed {SEED}): answers {dict(self.answers)}, cancelled turns by where the "
            f"cancel landed {dict(self.cancelled_in)}, injections {self.staged} staged / "
            f"{self.appended} appended, {self.raced_end} cancels that raced the turn's natural "
            f"end (answered cancelled, journaled completed), {self.tool_results} tool results "
            f"({self.synthetic_results} errors), {seconds:.1f}s"
        )


def turn_spans(events: list[JsonObject]) -> list[tuple[int, int]]:
    """(index of ``turn/start``, index of its ``turn/end``) of each closed turn in ``events``."""
    spans = []
    start = None
    for index, event in enumerate(events):
        if event["type"] == "turn/start":
            start = index
        elif event["type"] == "turn/end":
            assert start is not None, f"turn/end without turn/start at {event}"
            spans.append((start, index))
            start = None
    assert start is None, "a turn is still open"
    return spans


def where_cancelled(turn: list[JsonObject]) -> str:
    """Which part of a cancelled turn the cancel cut: the model stream or a tool batch."""
    before_end = [e["type"] for e in turn[:-1]]
    calls = before_end.count("tool/call")
    if calls:
        last_step = max(i for i, t in enumerate(before_end) if t == "step/start")
        if "tool/call" in before_end[last_step:]:
            return "tool batch"
    return "model stream" if "step/start" in before_end else "before the model"


def check_turns(new_events: list[JsonObject], answers: list[str], tally: Tally) -> None:
    """The events one batch of prompts added agree with the prompts' ``answers``."""
    spans = turn_spans(new_events)
    turns = [new_events[a : b + 1] for a, b in spans]
    reasons = Counter(turn[-1]["data"]["reason"]["kind"] for turn in turns)
    told = f"answered {answers}, the journal's turns ended {dict(reasons)}"
    assert len(turns) <= len(answers), told
    assert set(reasons) <= {"completed", "cancelled"}, told
    assert reasons["completed"] >= answers.count("end_turn"), told
    assert reasons["cancelled"] <= answers.count("cancelled"), told
    # A cancel that races the natural end is still answered ``cancelled`` (acp-notes.md), while
    # the journal records the turn as it ended: ``completed``.
    tally.raced_end += reasons["completed"] - answers.count("end_turn")
    for turn in turns:
        results = [e for e in turn if e["type"] == "tool/result"]
        tally.tool_results += len(results)
        tally.synthetic_results += sum(1 for e in results if e["data"]["isError"])
        if turn[-1]["data"]["reason"]["kind"] == "cancelled":
            tally.cancelled_in[where_cancelled(turn)] += 1


def check_injections(events: list[JsonObject], acknowledged: dict[str, str], tally: Tally) -> None:
    """Each acknowledged message id (-> its placement) is in ``events`` once, placed as told."""
    inside: set[int] = set()
    for a, b in turn_spans(events):
        inside.update(range(a, b + 1))
    seen: Counter[str] = Counter()
    where: dict[str, bool] = {}
    for index, event in enumerate(events):
        if event["type"] == "user/message" and event["data"]["id"] in acknowledged:
            seen[event["data"]["id"]] += 1
            where[event["data"]["id"]] = index in inside
    for message_id, placement in acknowledged.items():
        assert seen[message_id] == 1, (
            f"injection {message_id} ({placement}) is in the journal {seen[message_id]} times"
        )
        if placement == "staged":
            assert where[message_id], f"staged injection {message_id} landed between turns"
            tally.staged += 1
        else:
            assert placement == "appended", placement
            assert not where[message_id], f"appended injection {message_id} landed in a turn"
            tally.appended += 1


def prompt_ids(agent: RecordedAgent, since: int, sid: str | None = None) -> list[Any]:
    """Ids of the ``session/prompt`` requests (of session ``sid``) sent after message ``since``."""
    return [
        m["id"]
        for m in agent.transcript.client_messages[since:]
        if m.get("method") == "session/prompt" and (sid is None or m["params"]["sessionId"] == sid)
    ]


def check_updates_before_answer(
    agent: RecordedAgent, sid: str, first_line: int, last_line: int, request_id: Any
) -> None:
    """Between agent lines ``first_line`` and ``last_line``: nothing of the turn after its answer."""
    frames = [decode_agent_line(raw) for raw in agent.transcript.agent_lines[first_line:last_line]]
    answers = [i for i, f in enumerate(frames) if "method" not in f and f.get("id") == request_id]
    assert len(answers) == 1, f"prompt {request_id} answered {len(answers)} times"
    late = [
        f["params"]["update"]["sessionUpdate"]
        for f in frames[answers[0] + 1 :]
        if f.get("method") == "session/update"
        and f["params"]["sessionId"] == sid
        and f["params"]["update"]["sessionUpdate"] in TURN_UPDATE_KINDS
    ]
    assert not late, f"turn updates after the answer to prompt {request_id}: {late}"
