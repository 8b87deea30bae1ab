"""The state directory: where it is, whether it exists, is private (0700), writable, and has room.

Nothing is created or changed, except that writability is tested by creating and removing one
empty temporary file (``os.access`` says yes to root on a read-only file system).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from acp_agent.doctor.report import Finding, Section, Status

STATE_ENV = "ACP_AGENT_STATE_DIR"
LOW_SPACE_BYTES = 100 * 1024 * 1024


def state_section(state_dir: Path, flag: str | None, env: Mapping[str, str]) -> Section:
    if flag is None:
        source = "the default"
    else:
        source = STATE_ENV if env.get(STATE_ENV) == flag else "--state-dir"
    where = Finding(Status.OK, "state.location", f"{state_dir} (from {source})")
    if not state_dir.exists():
        message = "does not exist yet: the first session creates it (mode 0700)"
        return Section("state", "state dir", [where, Finding(Status.NOTE, "state.exists", message)])
    if not state_dir.is_dir():
        problem = Finding(Status.PROBLEM, "state.exists", "exists but is not a directory")
        return Section("state", "state dir", [where, problem])
    findings = [where, _permissions(state_dir), _writable(state_dir), _space(state_dir)]
    return Section("state", "state dir", findings)


def _permissions(state_dir: Path) -> Finding:
    info = state_dir.stat()
    mode = stat.S_IMODE(info.st_mode)
    owner = "" if info.st_uid == os.getuid() else f", owned by uid {info.st_uid}, not you"
    if mode & 0o077 or owner:
        message = f"mode {mode:04o}{owner}: expected 0700 (chmod 700 {state_dir})"
        return Finding(Status.PROBLEM, "state.permissions", message)
    return Finding(Status.OK, "state.permissions", f"mode {mode:04o}")


def _writable(state_dir: Path) -> Finding:
    try:
        fd, name = tempfile.mkstemp(prefix=".doctor-", dir=state_dir)
    except OSError as exc:
        return Finding(Status.PROBLEM, "state.writable", f"not writable: {exc.strerror or exc}")
    os.close(fd)
    os.unlink(name)
    return Finding(Status.OK, "state.writable", "writable")


def _space(state_dir: Path) -> Finding:
    free = shutil.disk_usage(state_dir).free
    if free < LOW_SPACE_BYTES:
        message = f"only {human_bytes(free)} free: journal flushes fail when the disk is full"
        return Finding(Status.PROBLEM, "state.space", message)
    return Finding(Status.OK, "state.space", f"{human_bytes(free)} free")


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
