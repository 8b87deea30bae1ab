"""One sample of an agent: a "life" process and a "load" process, driven by the raw ACP client.

The life process: spawn → ``initialize`` (answered: the start figure; RSS read at once) →
``session/new`` (request → answer) → 20 prompts ``hi`` (the first one's prompt → first chunk is
the "fresh process" figure, the median of the other 19 the "warm" figure; RSS read after the
20th) → a second
``session/new`` with the tool turn (the model asks to read ``note.txt``; prompt → answer, checked
by the model's closing ``Done.``, which the fake model only says after a tool result) and
``stream 5000`` (first → last ``agent_message_chunk``, all 5,000 deltas' text checked to have
arrived). The load process: spawn → ``initialize`` → ``session/load`` of the 20-turn session
(request → answer, and spawn → answer).

A "chunk" is an ``agent_message_chunk`` with non-empty text (fast-agent also sends empty ones).
Requests from the agent are answered as an editor set to auto-approve would:
``session/request_permission`` with its first ``allow_*`` option; no ``fs`` or ``terminal``
capability is offered, so each agent uses its own file and shell tools.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.peers.agents import Agent
from bench.peers.fake_model import DONE_TEXT, READ_MARKER, FakeModel, Request, stream_parts
from bench.sdk_agent import CHUNK as ECHO_CHUNK
from bench.wire import Json, WireClient, WireError, result_of

TURNS = 20
STREAM_CHUNKS = 5000
WITHIN = 120.0
INITIALIZE = {
    "protocolVersion": 1,
    "clientCapabilities": {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
    },
    "clientInfo": {"name": "bench-peers", "version": "0"},
}


@dataclass
class Life:
    initialize_ms: float
    rss_initialize_kib: int
    new_session_ms: float
    """The first ``session/new`` of the process, request → answer."""
    new_total_ms: float
    """Spawn → that ``session/new`` answered: what an editor waits for before its prompt box
    (an agent that answers ``initialize`` early pays its imports in ``session/new``)."""
    first_prompt_ms: float
    warm_prompt_ms: float
    rss_turns_kib: int
    session_id: str
    hi_requests: list[Request]
    """The model requests of the first prompt ``hi`` of the process."""
    tool_ms: float | None = None
    stream_ms: float | None = None
    stream_frames: int = 0
    notes: dict[str, str] = field(default_factory=dict)
    """Why a figure is missing, per figure key."""


@dataclass
class Load:
    load_ms: float
    total_ms: float
    replayed: int
    """``session/update`` notifications of the loaded session before the answer."""


def approve(frame: Json) -> Json | None:
    """The answer of an auto-approving editor; ``None`` (refused) for anything else."""
    if frame.get("method") != "session/request_permission":
        return None
    options = frame["params"]["options"]
    chosen = next((o for o in options if str(o.get("kind", "")).startswith("allow")), options[0])
    return {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}


class Chunks:
    """Arrival times and text of the agent's message chunks, per session."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.text: list[str] = []

    def reset(self) -> None:
        self.times, self.text = [], []

    def __call__(self, frame: Json, now: float) -> None:
        update = frame["params"]["update"]
        if update.get("sessionUpdate") != "agent_message_chunk":
            return
        content = update.get("content") or {}
        text = content.get("text") if isinstance(content, dict) else None
        if text:
            self.times.append(now)
            self.text.append(text)


async def spawn(agent: Agent, home: Path, model: FakeModel, cwd: Path, log: Path) -> WireClient:
    launch = agent.launch(home, model.base_url(agent.key))
    client = await WireClient.spawn(launch.argv, env=launch.env, stderr=log, cwd=cwd)
    client.on_request = approve
    return client


async def prompt(client: WireClient, chunks: Chunks, session_id: str, text: str) -> float:
    """Send one prompt; prompt written → first chunk, after the turn ended ``end_turn``."""
    chunks.reset()
    started = time.perf_counter()
    params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    answer = client.start_request("session/prompt", params)
    await client.flush()
    stop = result_of(await asyncio.wait_for(answer, WITHIN)).get("stopReason")
    if stop != "end_turn":
        raise WireError(f"prompt {text!r} ended with {stop!r}")
    if not chunks.times:
        raise WireError(f"prompt {text!r} ended without a message chunk")
    return chunks.times[0] - started


async def new_session(client: WireClient, cwd: Path) -> str:
    created = await client.request("session/new", {"cwd": str(cwd), "mcpServers": []}, WITHIN)
    return str(created["sessionId"])


async def life(agent: Agent, home: Path, model: FakeModel, cwd: Path, log: Path) -> Life:
    model.take(agent.key)
    client = await spawn(agent, home, model, cwd, log)
    chunks = Chunks()
    client.on_update = chunks
    try:
        await client.request("initialize", INITIALIZE, WITHIN)
        initialize_ms = 1000 * (time.perf_counter() - client.started)
        rss_initialize = client.rss_kib()
        asked = time.perf_counter()
        session_id = await new_session(client, cwd)
        new_session_ms = 1000 * (time.perf_counter() - asked)
        new_total_ms = 1000 * (time.perf_counter() - client.started)
        model.take(agent.key)
        first = await prompt(client, chunks, session_id, "hi")
        hi_requests = model.model_requests(agent.key)
        warm = [await prompt(client, chunks, session_id, "hi") for _ in range(TURNS - 1)]
        rss_turns = client.rss_kib()
        got = Life(
            initialize_ms,
            rss_initialize,
            new_session_ms,
            new_total_ms,
            1000 * first,
            1000 * statistics.median(warm),
            rss_turns,
            session_id,
            hi_requests,
        )
        second = await new_session(client, cwd)
        if agent.tools:
            await tool_turn(client, chunks, second, cwd, got)
        else:
            got.notes["tool_ms"] = "no tools: an echo"
        expected = (
            "".join(stream_parts(STREAM_CHUNKS)) if agent.model else ECHO_CHUNK * STREAM_CHUNKS
        )
        await stream_turn(client, chunks, second, expected, got)
    finally:
        await client.close()
    return got


async def tool_turn(
    client: WireClient, chunks: Chunks, session_id: str, cwd: Path, got: Life
) -> None:
    text = f"{READ_MARKER} {cwd / 'note.txt'} and tell me what it says."
    started = time.perf_counter()
    await prompt(client, chunks, session_id, text)
    ended = time.perf_counter()
    if DONE_TEXT in "".join(chunks.text):
        got.tool_ms = 1000 * (ended - started)
    else:
        got.notes["tool_ms"] = "the agent did not run the tool the model asked for"


async def stream_turn(
    client: WireClient, chunks: Chunks, session_id: str, expected: str, got: Life
) -> None:
    await prompt(client, chunks, session_id, f"stream {STREAM_CHUNKS}")
    text = "".join(chunks.text)
    if text.strip() != expected.strip():
        shown = len(text.split())
        got.notes["stream_ms"] = f"the text of {shown} of {STREAM_CHUNKS} deltas arrived"
        return
    got.stream_ms = 1000 * (chunks.times[-1] - chunks.times[0])
    got.stream_frames = len(chunks.times)


async def load(
    agent: Agent, home: Path, model: FakeModel, cwd: Path, log: Path, session_id: str
) -> Load:
    client = await spawn(agent, home, model, cwd, log)
    try:
        await client.request("initialize", INITIALIZE, WITHIN)
        started = time.perf_counter()
        params = {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
        await client.request("session/load", params, WITHIN)
        ended = time.perf_counter()
        replayed = client.updates.get(session_id, 0)
    finally:
        await client.close()
    return Load(1000 * (ended - started), 1000 * (ended - client.started), replayed)


async def floor(argv: list[str]) -> float:
    """Spawn → exit of ``argv -c pass``, in ms (the interpreter's own start)."""
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *argv, "-c", "pass", stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL
    )
    if await process.wait() != 0:
        raise WireError(f"{argv} -c pass failed")
    return 1000 * (time.perf_counter() - started)
