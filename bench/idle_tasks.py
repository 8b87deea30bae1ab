"""The idle-session baseline: N bare anyio tasks, each parked on its own ``anyio.Event``.

Prints one JSON object, ``{"before": KiB, "after": KiB}``: the process's ``VmRSS`` before the
tasks start and once they all wait. The floor under any per-session actor built on anyio.

Run as a script (``python bench/idle_tasks.py N``).
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import anyio
from anyio.abc import TaskStatus

PATH = Path(__file__).resolve()


def command(count: int) -> list[str]:
    return [sys.executable, str(PATH), str(count)]


def rss_kib() -> int:
    for text in Path("/proc/self/status").read_text().splitlines():
        if text.startswith("VmRSS:"):
            return int(text.split()[1])
    raise RuntimeError("no VmRSS")


async def park(event: anyio.Event, *, task_status: TaskStatus[None]) -> None:
    task_status.started()
    await event.wait()


async def main(count: int) -> None:
    gc.collect()
    await anyio.sleep(0.05)
    before = rss_kib()
    events = [anyio.Event() for _ in range(count)]
    async with anyio.create_task_group() as tg:
        for event in events:
            await tg.start(park, event)
        gc.collect()
        await anyio.sleep(0.05)
        after = rss_kib()
        print(json.dumps({"before": before, "after": after}), flush=True)
        for event in events:
            event.set()


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]))
