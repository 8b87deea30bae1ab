"""The child of ``test_ten_thousand_sessions.py``: 10,000 sessions of the Python API in one
process, then descriptor exhaustion on purpose (every free descriptor taken by ``/dev/null``).
Prints one JSON report on stdout.

Run as ``python -m tests.durability.ten_thousand STATE_DIR CWD COUNT`` under the descriptor
limit the test sets (``preexec_fn``).
"""

from __future__ import annotations

import errno
import gc
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec

from acp_agent import logs
from acp_agent.api import Agent, Finished, SessionUnavailable
from acp_agent.content import TextContent
from acp_agent.journal.descriptors import DESCRIPTORS
from acp_agent.journal.events import AssistantMessage, Entry, TextPart, UserMessage
from acp_agent.model.script import ScriptLine, ScriptModel

OLDEST = 3
BATCH = 50


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def texts(entries: list[Entry]) -> list[str]:
    """The user and assistant texts of a history, in order."""
    found: list[str] = []
    for entry in entries:
        event = entry.event
        if isinstance(event, UserMessage):
            found += [block.text for block in event.content if isinstance(block, TextContent)]
        elif isinstance(event, AssistantMessage):
            found += [part.text for part in event.content if isinstance(part, TextPart)]
    return found


def fill_descriptors() -> list[int]:
    """Open /dev/null until the process has no descriptor left."""
    fillers = []
    while True:
        try:
            fillers.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
        except OSError as exc:
            assert exc.errno == errno.EMFILE, exc
            return fillers


async def prompt(agent: Agent, session_id: str, text: str) -> str:
    session = await agent.open_session(session_id)
    outcome = await (await session.send(text)).outcome()
    return outcome.stop.value if isinstance(outcome, Finished) else repr(outcome)


async def main(state_dir: Path, cwd: str, count: int) -> dict[str, Any]:
    answers = [ScriptLine(text=f"answer {n}") for n in range(OLDEST + 2)]
    report: dict[str, Any] = {"limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0]}
    async with Agent.open(state_dir, ScriptModel.from_lines(answers)) as agent:
        await agent.new_session(cwd, "warm")
        gc.collect()
        rss, fds = rss_kib(), open_fds()
        ids = [f"s{index:05d}" for index in range(count)]
        started = time.monotonic()
        for start in range(0, count, BATCH):  # concurrently, as a client pipelining session/new
            async with anyio.create_task_group() as tg:
                for session_id in ids[start : start + BATCH]:
                    tg.start_soon(agent.new_session, cwd, session_id)
        print(f"created {count} in {time.monotonic() - started:.1f}s", file=sys.stderr)
        gc.collect()
        report["kib_per_session"] = (rss_kib() - rss) / count
        report["fds_before"], report["fds_after"] = fds, open_fds()
        report["stops"] = [await prompt(agent, ids[n], f"question {n}") for n in range(OLDEST)]
        reopened = []
        for session_id in ids[:OLDEST]:  # close, then open again from disk: history intact
            await (await agent.open_session(session_id)).dispose()
            reopened.append(texts((await agent.open_session(session_id)).entries))
        report["reopened"] = reopened
        report["fds_prompted"] = open_fds()

        # out of descriptors, but idle journals hold some: opening a session takes them back
        fillers = fill_descriptors()
        report["rescued"] = (await agent.new_session(cwd, "rescued")).id
        DESCRIPTORS.release_idle()
        fillers += fill_descriptors()  # now nothing is left to give back
        try:
            await agent.new_session(cwd, "one-too-many")
            report["refused"] = None
        except SessionUnavailable as exc:
            report["refused"] = {"reason": exc.reason, "message": str(exc)}
        middle = await agent.open_session(ids[count // 2])
        report["exhausted_prompt"] = await prompt(agent, middle.id, "while exhausted")
        report["exhausted_health"] = msgspec.to_builtins(middle.actor.writer.health)
        for fd in fillers:
            os.close(fd)
        report["healed"] = msgspec.to_builtins(await middle.when_idle())  # the flush retried
        report["after_exhaustion"] = (await agent.new_session(cwd, "one-too-many")).id
        await middle.dispose()
        report["middle"] = texts((await agent.open_session(middle.id)).entries)
    return report


if __name__ == "__main__":
    state, cwd, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    logs.configure("warning", stream=sys.stderr)
    print(json.dumps(anyio.run(main, state, cwd, count)), flush=True)
