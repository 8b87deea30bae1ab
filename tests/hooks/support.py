"""Helpers for hook tests: write hook scripts, and look for live members of a process group."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import anyio

from acp_agent.hooks import CommandHook, FailPolicy, HookKind


def script(tmp_path: Path, body: str, name: str = "hook.py") -> tuple[str, ...]:
    """Write a Python hook script; its argv runs it with this interpreter."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return (sys.executable, str(path))


def hook(
    tmp_path: Path,
    body: str,
    kind: HookKind = HookKind.PROMPT_SUBMIT,
    *,
    name: str = "hook.py",
    timeout_ms: int = 5000,
    fail: FailPolicy = FailPolicy.OPEN,
) -> CommandHook:
    return CommandHook(kind, script(tmp_path, body, name), timeout_ms, fail)


def live_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are not zombies (our container's init may not reap)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, _ppid, pgrp = stat[stat.rindex(")") + 2 :].split()[:3]
        if int(pgrp) == pgid and state not in ("Z", "X"):
            members.append(int(entry.name))
    return members


async def wait_group_gone(pgid: int, attempts: int = 200) -> list[int]:
    """SIGKILL is delivered asynchronously: give the group a moment, return who is left."""
    for _ in range(attempts):
        if not (left := live_members(pgid)):
            return left
        await anyio.sleep(0.01)
    return live_members(pgid)


async def wait_for_file(path: Path, attempts: int = 500) -> str:
    target = anyio.Path(path)
    for _ in range(attempts):
        if await target.exists() and (text := await target.read_text()).endswith("\n"):
            return text
        await anyio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")
