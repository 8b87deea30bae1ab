"""Process start: spawn → ``initialize`` answered, against the interpreter's own floor.

Ours: a fresh ``python -m acp_agent`` (script model, fresh state dir) is spawned and
``initialize`` written at once; the sample is the time from just before the spawn to reading
the answer. A second sampler goes on to ``session/new`` (spawn → ``session/new`` answered), what
an editor waits for before the first prompt box. Floor: ``python -c pass`` with the same
interpreter, spawn → exit (the interpreter's start-up and shutdown, the ``site`` import with the
editable install's path hook; nothing of ours). Fresh processes, interleaved, order flipped every
round.
"""

from __future__ import annotations

import asyncio
import sys
import time

from bench.lab import PROTOCOL, Lab, Sizes, start_ours
from bench.stats import Better, Figure, Target, interleave, median

SLACK_MS = 25.0
"""The target: ``initialize`` answered at most this long after the floor (issue 16)."""


async def floor() -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await process.wait()
    return time.perf_counter() - started


async def to_initialize(lab: Lab) -> float:
    client = await start_ours(lab, "spawn")
    try:
        await client.request("initialize", PROTOCOL, within=60)
        return time.perf_counter() - client.started
    finally:
        await client.close()


async def to_session_new(lab: Lab) -> float:
    client = await start_ours(lab, "spawn-new")
    try:
        await client.request("initialize", PROTOCOL, within=60)
        params = {"cwd": str(lab.cwd), "mcpServers": []}
        await client.request("session/new", params, within=60)
        return time.perf_counter() - client.started
    finally:
        await client.close()


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    samplers = {
        "ours": lambda: to_initialize(lab),
        "new": lambda: to_session_new(lab),
        "floor": floor,
    }
    samples = await interleave(samplers, sizes.startup_rounds, warmup=2)
    ours, new, base = (1000 * median(samples[name]) for name in ("ours", "new", "floor"))
    return [
        Figure(
            key="spawn_initialize",
            title="spawn → `initialize` answered",
            unit="ms",
            ours=ours,
            baseline=base,
            baseline_label="spawn → exit of `python -c pass` (the interpreter's floor)",
            better=Better.LOWER,
            target=Target(base + SLACK_MS, on_ratio=False, text=f"<= floor + {SLACK_MS:.0f} ms"),
            samples=sizes.startup_rounds,
            note=f"{ours - base:.1f} ms above the floor",
            extra={"above_floor_ms": ours - base},
        ),
        Figure(
            key="spawn_session_new",
            title="spawn → `initialize` → `session/new` answered",
            unit="ms",
            ours=new,
            baseline=base,
            baseline_label="spawn → exit of `python -c pass`",
            better=Better.LOWER,
            samples=sizes.startup_rounds,
            note=f"{new - base:.1f} ms above the floor",
        ),
    ]
