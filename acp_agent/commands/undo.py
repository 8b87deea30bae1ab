"""``/undo``: put back the files the last turn changed, as they were before it, for every door.

The turn is the last one whose tools changed files (its ``tool/result``s' ``checkpoints``) that no
``/undo`` reverted yet (``checkpoints/plan.py``), so a second ``/undo`` goes one turn further
back. ``plan_undo`` says what would change, as diffs (the file now to the file restored), for
the permission request the door sends; nothing is written before the user allows it. Once it
is applied, ``undo_message`` is what the model is told, as an out-of-turn ``user/message`` with
source ``{"kind": "agent", "name": "undo", "turn": N}`` — which is also how a later ``/undo`` or
restore knows those files are back. A file someone changed since the agent wrote it is named
in the request (its change is lost if the user allows).

``undo_last_turn`` is the whole command once the session is idle: plan, ask through the
session's permission asker (the ACP client's ``session/request_permission``: options
``allow_once`` "Undo" and ``reject_once``, the diffs as ``diff`` content, the warning as text),
restore, inject; it answers what the user is told. With no one to ask, nothing is undone. It
waits for the client, so the session runs it in a task of its own (``Session.undo``), never on
the connection's reader.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from acp_agent.checkpoints.plan import undo_source, undo_targets, undo_turn
from acp_agent.checkpoints.restore import Restore, prepare
from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import Entry, Source
from acp_agent.tools.display import DiffView, View
from acp_agent.tools.permissions import (
    AskFailed,
    CallInfo,
    OptionKind,
    PermissionAsker,
    PermissionOption,
    PermissionRequest,
)

Inject = Callable[[list[ContentBlock], Source], Awaitable[object]]
UNDO_OPTIONS = [
    PermissionOption("allow_once", "Undo", OptionKind.ALLOW_ONCE),
    PermissionOption("reject_once", "Keep the files", OptionKind.REJECT_ONCE),
]


class NothingToUndo(Exception):
    """No turn's file changes to undo; the message says why, for the user."""


@dataclass(frozen=True, slots=True)
class UndoPlan:
    turn: int
    restore: Restore
    cwd: Path

    @property
    def source(self) -> Source:
        return undo_source(self.turn)

    @property
    def title(self) -> str:
        return f"Undo the file changes of turn {self.turn}"

    def paths(self) -> list[str]:
        return [os.path.relpath(s.path, self.cwd) for s in self.restore.needed]

    def warning(self) -> str | None:
        changed = self.restore.changed_since(self.cwd)
        if not changed:
            return None
        return "Changed since the agent wrote them (those changes would be lost): " + ", ".join(
            changed
        )


def plan_undo(state_dir: Path, session_id: str, entries: Sequence[Entry], cwd: Path) -> UndoPlan:
    """What ``/undo`` would restore (blocking: run it in a worker thread); ``NothingToUndo``."""
    turn = undo_turn(entries)
    if turn is None:
        raise NothingToUndo("Nothing to undo: no turn of this session changed a file.")
    restore = prepare(state_dir, session_id, undo_targets(entries, turn))
    if not restore.needed:
        raise NothingToUndo(f"Nothing to undo: the files turn {turn} changed are as before it.")
    return UndoPlan(turn, restore, cwd)


def undo_message(plan: UndoPlan, restored: Sequence[Path]) -> list[ContentBlock]:
    """What the model is told once the files are back."""
    lines = [
        f"[/undo] The user reverted the file changes of turn {plan.turn}: these files are back "
        "as they were before that turn (a file that did not exist then is removed):"
    ]
    lines += [f"- {os.path.relpath(path, plan.cwd)}" for path in restored]
    return [TextContent(text="\n".join(lines))]


def undo_answer(plan: UndoPlan, restored: Sequence[Path]) -> str:
    """What the user is told."""
    files = ", ".join(os.path.relpath(p, plan.cwd) for p in restored)
    return f"Undid the file changes of turn {plan.turn}: {files}."


async def undo_last_turn(
    state_dir: Path,
    session_id: str,
    entries: Sequence[Entry],
    cwd: Path,
    asker: PermissionAsker | None,
    inject: Inject,
) -> str:
    """``/undo`` of an idle session (see the module docstring); the answer for the user."""
    try:
        plan = await anyio.to_thread.run_sync(plan_undo, state_dir, session_id, entries, cwd)
    except NothingToUndo as exc:
        return str(exc)
    if asker is None:
        return "Cannot undo: there is no client to ask for permission; nothing changed."
    if not await _allowed(asker, plan):
        return "Undo cancelled: nothing changed."
    restored = await anyio.to_thread.run_sync(plan.restore.apply)
    await inject(undo_message(plan, restored), plan.source)
    return undo_answer(plan, restored)


async def _allowed(asker: PermissionAsker, plan: UndoPlan) -> bool:
    preview: list[View] = [DiffView(d.path, d.new_text, d.old_text) for d in plan.restore.diffs()]
    paths = [str(step.path) for step in plan.restore.needed]
    call = CallInfo(f"undo-turn-{plan.turn}", plan.title, "edit", paths, {"command": "/undo"})
    request = PermissionRequest(call, UNDO_OPTIONS, preview, plan.warning())
    try:
        chosen = await asker.ask(request)
    except AskFailed:
        return False
    return chosen == "allow_once"
