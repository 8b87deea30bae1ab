"""Memory per idle session (``N`` sessions, under a 1,024 descriptor limit), against ``N`` bare
anyio tasks.

Ours: one agent started with ``RLIMIT_NOFILE`` soft limit 1,024 (the common default; set before
``exec``, like a ``preexec_fn``); after ``initialize`` and 20 warm-up sessions, ``VmRSS`` and the
open descriptors are read, ``N`` more sessions are created (``session/new``, pipelined 50 at a
time), and both are read again. ``N`` is ten times the size's ``idle_sessions`` (10,000 full,
2,000 quick): far more than the ~500 sessions that fit when each held two descriptors, so a
regression fails the run with a refused ``session/new``. The state dir is on tmpfs
(``/dev/shm``) when there is one: 10,000 ``session/new`` cost minutes of fsyncs on a disk, and
neither the memory nor the descriptors depend on it (tmpfs pages are not the agent's RSS). Baseline: ``bench/idle_tasks.py`` parks
``N`` anyio tasks on events and reports its own ``VmRSS`` before and after.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench import idle_tasks
from bench.lab import PROTOCOL, Lab, Sizes, ours_command, start_ours
from bench.stats import Better, Figure, Target
from bench.wire import WireClient, fd_count, result_of

WARM = 20
BATCH = 50
SCALE = 10
"""Sessions created: ``SCALE`` times ``Sizes.idle_sessions``."""
FD_LIMIT = 1024

LIMITED = (
    "import os, resource, sys; "
    "resource.setrlimit(resource.RLIMIT_NOFILE, "
    "(int(sys.argv[1]), resource.getrlimit(resource.RLIMIT_NOFILE)[1])); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


@contextmanager
def tmpfs_dir() -> Iterator[Path]:
    """A scratch state dir on ``/dev/shm`` when it is writable, else in the temp dir."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="acp-bench-memory-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def limited(argv: list[str], nofile: int) -> list[str]:
    """``argv`` run with the soft descriptor limit ``nofile`` (the hard limit unchanged)."""
    return [sys.executable, "-c", LIMITED, str(nofile), *argv]


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
    n = sizes.idle_sessions * SCALE
    with tmpfs_dir() as state:
        return await measure(lab, n, state)


async def measure(lab: Lab, n: int, state: Path) -> list[Figure]:
    argv = limited(ours_command(name="memory"), FD_LIMIT)
    client = await start_ours(lab, "memory", argv=argv, env={"ACP_AGENT_STATE_DIR": str(state)})
    try:
        await client.request("initialize", PROTOCOL)
        await create_sessions(client, lab, WARM, "warm")
        await asyncio.sleep(0.3)
        rss, fds = client.rss_kib(), fd_count(client.pid)
        await create_sessions(client, lab, n, "idle")
        await asyncio.sleep(0.3)
        per_session = (client.rss_kib() - rss) / n
        fds_after = fd_count(client.pid)
        fds_per_session = (fds_after - fds) / n
    finally:
        await client.close(grace=60)
    per_task = await bare_tasks(n)
    return [
        Figure(
            key="idle_session_memory",
            title=f"memory per idle session ({n:,} sessions, {FD_LIMIT:,} descriptor limit)",
            unit="KiB",
            ours=per_session,
            baseline=per_task,
            baseline_label=f"one bare anyio task parked on an Event ({n:,} tasks)",
            better=Better.LOWER,
            target=Target(64.0, on_ratio=False, text="<= 64 KiB"),
            samples=1,
            note=(
                f"{fds_per_session:.3f} open file descriptors per session, {fds_after} open in all"
            ),
            extra={"fds_per_session": fds_per_session, "fds_open": float(fds_after)},
        )
    ]
