"""Agents under a small descriptor limit, and a state dir on tmpfs (``tests/durability``).

``FD_LIMIT`` is the common soft ``RLIMIT_NOFILE`` default. ``limited(argv)`` runs ``argv`` with
that soft limit, set before ``exec`` exactly as a ``preexec_fn`` would (for harnesses that spawn
with asyncio and take no ``preexec_fn``); ``at_most_fd_limit`` is the ``preexec_fn`` itself.
"""

from __future__ import annotations

import os
import resource
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

FD_LIMIT: Final = 1024

_LIMITED: Final = (
    "import os, resource, sys; "
    "resource.setrlimit(resource.RLIMIT_NOFILE, "
    "(int(sys.argv[1]), resource.getrlimit(resource.RLIMIT_NOFILE)[1])); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


def limited(argv: list[str], nofile: int = FD_LIMIT) -> list[str]:
    """``argv`` under the soft descriptor limit ``nofile`` (the hard limit unchanged)."""
    return [sys.executable, "-c", _LIMITED, str(nofile), *argv]


def at_most_fd_limit() -> None:
    """A ``preexec_fn``: the soft descriptor limit ``FD_LIMIT``, the hard one unchanged."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, hard))


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@contextmanager
def tmpfs_state_dir() -> Iterator[Path]:
    """A fresh state dir on ``/dev/shm`` when it is writable (else the default temp dir)."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    root = Path(tempfile.mkdtemp(prefix="acp-fds-", dir=base))
    try:
        yield root / "state"
    finally:
        shutil.rmtree(root, ignore_errors=True)
