"""Memory per idle session (``N`` sessions), against ``N`` bare anyio tasks.

Ours: one agent; after ``initialize`` and 20 warm-up sessions, ``VmRSS`` is read, ``N`` more
sessions are created (``session/new``, pipelined 50 at a time), and ``VmRSS`` is read again. The
open file descriptors per session are noted too. Baseline: ``bench/idle_tasks.py`` parks ``N``
anyio tasks on events and reports its own ``VmRSS`` before and after.
"""

from __future__ import annotations

import asyncio
import json

from bench import idle_tasks
from bench.lab import PROTOCOL, Lab, Sizes, start_ours
from bench.stats import Better, Figure, Target
from bench.wire import WireClient, fd_count, result_of

WARM = 20
BATCH = 50


async def create_sessions(client: WireClient, lab: Lab, count: int, prefix: str) -> None:
    params = {"cwd": str(lab.cwd), "mcpServers": []}
    for start in range(0, count, BATCH):
        futures = []
        for index in range(start, min(start + BATCH, count)):
            meta = {"_meta": {"acp_agent": {"sessionId": f"{prefix}-{index}"}}}
            futures.append(client.start_request("session/new", {**params, **meta}))
        await client.flush()
        for future in futures:
            result_of(await future)


async def bare_tasks(count: int) -> float:
    process = await asyncio.create_subprocess_exec(
        *idle_tasks.command(count), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    report = json.loads(out)
    return float(report["after"] - report["before"]) / count


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    n = sizes.idle_sessions
    client = await start_ours(lab, "memory")
    try:
        await client.request("initialize", PROTOCOL)
        await create_sessions(client, lab, WARM, "warm")
        await asyncio.sleep(0.3)
        rss, fds = client.rss_kib(), fd_count(client.pid)
        await create_sessions(client, lab, n, "idle")
        await asyncio.sleep(0.3)
        per_session = (client.rss_kib() - rss) / n
        fds_per_session = (fd_count(client.pid) - fds) / n
    finally:
        await client.close(grace=60)
    per_task = await bare_tasks(n)
    return [
        Figure(
            key="idle_session_memory",
            title=f"memory per idle session ({n:,} sessions)",
            unit="KiB",
            ours=per_session,
            baseline=per_task,
            baseline_label=f"one bare anyio task parked on an Event ({n:,} tasks)",
            better=Better.LOWER,
            target=Target(64.0, on_ratio=False, text="<= 64 KiB"),
            samples=1,
            note=f"{fds_per_session:.1f} open file descriptors per session",
            extra={"fds_per_session": fds_per_session},
        )
    ]
