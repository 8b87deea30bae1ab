"""Non-regular files for the file tools' tests, and a watchdog for a tool stuck on a named pipe.

The three kinds are made without privileges: ``mkfifo`` for a named pipe, ``mknod`` with
``S_IFSOCK`` for a socket (a socket inode nobody listens on: opening it fails ``ENXIO``, and no
108-byte ``sun_path`` limit applies), and for a device a symbolic link in the workspace to
``/dev/null``, with ``/dev`` as an extra session root (``DEVICE_ROOT``). Without that root the
link is refused earlier, by ``confine`` (it resolves outside the roots), which is tested too;
``mknod`` of a real device would need root.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path
from types import TracebackType

KINDS = ("fifo", "socket", "device")
DEVICE_ROOT = Path("/dev")
WORDS = {"fifo": "named pipe", "socket": "socket", "device": "character device"}
"""How the refusal names each kind: ``<path> is a <words>, not a regular file: refused``."""


def make_special(path: Path, kind: str, device: str = "/dev/null") -> Path:
    """Create ``path`` as a non-regular file of ``kind``; the path a tool then reports (a device
    link resolves to the device)."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        os.mknod(path, 0o600 | stat.S_IFSOCK)
    else:
        path.symlink_to(device)
        return Path(device)
    return path


def refusal(kind: str) -> str:
    """The regex a refusal of ``kind`` matches."""
    return f"is a {WORDS[kind]}, not a regular file: refused"


class Unblocker:
    """From ``after`` seconds on, opens the other side of ``fifo`` every ``every`` seconds
    (``O_RDWR | O_NONBLOCK`` never blocks and counts as reader and writer), so a tool stuck
    opening it comes back, and the test ends instead of hanging. ``fired`` counts the rescues;
    a tool that never opens the pipe in a blocking way needs none."""

    def __init__(self, fifo: Path, after: float = 3.0, every: float = 0.2) -> None:
        self.fifo, self.after, self.every = fifo, after, every
        self.fired = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        if self._stop.wait(self.after):
            return
        while not self._stop.is_set():
            with contextlib.suppress(OSError):  # gone or replaced: nothing to unblock
                if stat.S_ISFIFO(os.lstat(self.fifo).st_mode):
                    os.close(os.open(self.fifo, os.O_RDWR | os.O_NONBLOCK))
                    self.fired += 1
            self._stop.wait(self.every)

    def __enter__(self) -> Unblocker:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
