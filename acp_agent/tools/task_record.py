"""What is kept of a session's background tasks (``background.py``), on disk and in words.

The table lives in ``<session dir>/tasks.json`` (``0600``, replaced whole: write a temporary
file, fsync, rename), one ``TaskRecord`` per task the session ever started; each task's output
is ``<session dir>/tasks/<id>.out``. A record is written when its task starts and again when it
ends, so after a crash the table says which tasks were still running: the next open reports
each of them as ended by the restart (``restart_ending``) and kills its group if that very
process is still alive (its pid *and* its kernel start time match: a reused pid is left alone).

``reported`` is set once the session's journal holds the task's ending; an ending not yet
reported (the session closed first) is reported at the next open.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import msgspec

from acp_agent.tools.process import kill_group

TABLE_FILE = "tasks.json"
OUTPUT_DIR = "tasks"
RESTART = "restart"
"""The status of a task that was running when the process died."""
CLOSED = "closed"
"""The status of a task killed because its session was closed."""


class TaskRecord(msgspec.Struct, kw_only=True):
    id: str
    command: str
    cwd: str
    started_ms: int
    pid: int | None = None
    proc_start: str | None = None
    """The kernel's start time of ``pid`` (``/proc/<pid>/stat``), to recognize it later."""
    ended_ms: int | None = None
    status: str | None = None
    """The exit code, the signal name, ``RESTART`` or ``CLOSED``; ``None`` while running."""
    reported: bool = False
    dropped: int = 0
    """Output bytes not kept (the output file is bounded)."""

    @property
    def running(self) -> bool:
        return self.status is None

    def state(self) -> str:
        """``running`` or ``exited <status>`` (contract §12)."""
        return "running" if self.status is None else f"exited {self.status}"


_TABLE = msgspec.json.Decoder(list[TaskRecord])


def output_path(directory: Path, task_id: str) -> Path:
    return directory / OUTPUT_DIR / f"{task_id}.out"


def load_table(directory: Path) -> list[TaskRecord]:
    """The session's task records (none when it never started one, or the file is unreadable)."""
    try:
        return _TABLE.decode((directory / TABLE_FILE).read_bytes())
    except FileNotFoundError:
        return []
    except (OSError, msgspec.DecodeError):
        return []


def save_table(directory: Path, records: list[TaskRecord]) -> None:
    path = directory / TABLE_FILE
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(msgspec.json.encode(records))
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def proc_start(pid: int) -> str | None:
    """The kernel start time of ``pid`` (field 22 of ``/proc/<pid>/stat``), if it can be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def kill_if_same(record: TaskRecord) -> None:
    """Kill the group of a task left running by a dead process, if it is still that process."""
    if record.pid is None or record.proc_start is None:
        return
    if proc_start(record.pid) == record.proc_start:
        kill_group(record.pid)


def last_lines(directory: Path, task_id: str, lines: int = 20, limit: int = 4096) -> str:
    """The last ``lines`` lines of a task's output (its last ``limit`` bytes at most)."""
    path = output_path(directory, task_id)
    with contextlib.suppress(OSError), path.open("rb") as out:
        size = out.seek(0, os.SEEK_END)
        out.seek(max(size - limit, 0))
        text = out.read().decode("utf-8", "replace")
        return "\n".join(text.rstrip("\n").split("\n")[-lines:])
    return ""


def duration(record: TaskRecord, now_ms: int | None = None) -> str:
    """How long it ran, in whole seconds (``under 1 s``): coarse on purpose, so that the
    message a replay records does not change with the machine's load."""
    ended = record.ended_ms if record.ended_ms is not None else (now_ms or record.started_ms)
    seconds = (ended - record.started_ms) // 1000
    return "under 1 s" if seconds < 1 else f"{seconds} s"


def ending_text(record: TaskRecord, tail: str) -> str:
    """What the session is told when a task ended: id, command, status, duration, last lines."""
    if record.status == RESTART:
        how = "ended with the restart of the agent (it was running when the process stopped)"
    elif record.status == CLOSED:
        how = "was killed when its session was closed"
    else:
        how = f"ended: exited {record.status}"
    ran = duration(record)
    lines = [f"Background task {record.id} {how}; it ran {ran}.", f"$ {record.command}"]
    if tail:
        lines += ["Last output lines:", tail]
    else:
        lines.append("It wrote no output.")
    lines.append(f"(task_output {{task: {record.id!r}}} reads all of it.)")
    return "\n".join(lines)
