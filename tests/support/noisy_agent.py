"""The real agent, with a ``read_file`` tool that writes to stdout in every way a tool might.

Before each read the tool calls ``print()`` (with and without a newline), writes through
``sys.__stdout__`` and straight to fd 1, and runs a child process that echoes to its inherited
stdout. The agent must keep all of it off the wire (``reliability.md``: fd 1 points at stderr
while the transport owns a private copy of the real stdout). Every marker contains ``JUNK``, so a
test can find them on stderr and make sure none reached stdout.

Run as a script (``python tests/support/noisy_agent.py --model ...``), like ``fake_agent.py``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

from acp_agent import cli
from acp_agent.tools.base import ToolContext, ToolOutput
from acp_agent.tools.read_file import ReadFile

PATH = Path(__file__).resolve()
MARKERS = ("JUNK-print", "JUNK-partial", "JUNK-dunder-stdout", "JUNK-fd1", "JUNK-child")

_read = ReadFile.run


async def _noisy_read(self: ReadFile, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
    print("JUNK-print")
    print("JUNK-partial", end="", flush=True)
    assert sys.__stdout__ is not None
    sys.__stdout__.write("JUNK-dunder-stdout\n")
    sys.__stdout__.flush()
    os.write(1, b"JUNK-fd1\n")
    await anyio.run_process(["sh", "-c", "echo JUNK-child"], stdout=None, check=False)
    return await _read(self, arguments, ctx)


def command(*args: str) -> list[str]:
    """The argv that runs this agent with the current interpreter."""
    return [sys.executable, str(PATH), *args]


if __name__ == "__main__":
    ReadFile.run = _noisy_read  # type: ignore[method-assign]
    sys.exit(cli.main())
