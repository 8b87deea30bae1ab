"""The real agent, with every ``fsync``/``fdatasync`` it makes recorded, and optionally slowed.

``ACP_AGENT_TEST_SYNC_LOG`` names the record: one JSON line per call, ``{"call", "path",
"size"}`` — the file the descriptor points at (from ``/proc/self/fd``) and its size when the
call was made. A test maps a journal's size to the last complete line in it, so it can tell
exactly which events each sync made durable.

``ACP_AGENT_TEST_SYNC_DELAY_MS``, if set, makes each call sleep that long first: a slow disk,
which widens the window in which a journal barrier is in progress.

Run as a script (``python bench/sync_counting_agent.py --model ...``), like
``tests/support/fake_agent.py``. It lives in ``bench/`` because the benchmarks use it too, and
bench does not import ``tests/``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_agent import cli

PATH = Path(__file__).resolve()
ENV = "ACP_AGENT_TEST_SYNC_LOG"
DELAY_ENV = "ACP_AGENT_TEST_SYNC_DELAY_MS"


def _recording(
    call: str, sync: Callable[[Any], None], log_fd: int, delay: float
) -> Callable[[Any], None]:
    def recorded(target: Any) -> None:
        time.sleep(delay)
        sync(target)
        fd = target if isinstance(target, int) else target.fileno()
        record = {
            "call": call,
            "path": os.readlink(f"/proc/self/fd/{fd}"),
            "size": os.fstat(fd).st_size,
        }
        os.write(log_fd, json.dumps(record).encode() + b"\n")

    return recorded


def command(*args: str) -> list[str]:
    """The argv that runs this agent with the current interpreter."""
    return [sys.executable, str(PATH), *args]


if __name__ == "__main__":
    log_fd = os.open(os.environ[ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    delay = int(os.environ.get(DELAY_ENV, "0")) / 1000
    os.fdatasync = _recording("fdatasync", os.fdatasync, log_fd, delay)  # type: ignore[assignment]
    os.fsync = _recording("fsync", os.fsync, log_fd, delay)  # type: ignore[assignment]
    sys.exit(cli.main())
