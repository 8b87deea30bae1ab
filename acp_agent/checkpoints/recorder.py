"""A session's checkpoint recorder: what the edit tools and local commands call around a change.

``before_files`` (the edit tools: the exact files they will write) or ``before_all`` (a local
command: every root's whole tree, cheap after the first time thanks to the session index's stat
cache) records the state first; ``after`` records it again once the change is made and answers
the ``Checkpoint``s that go on the call's ``tool/result`` (one per root where something changed),
after ``keep``ing both trees. git runs in a worker thread.

A recording that fails (no git, a full disk) does not stop the change: it is logged
(``checkpoint_failed``) and the call simply has no checkpoint, which ``/undo`` then says. Rejected:
refusing the edit — a user without git would lose every edit tool for the sake of an undo.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from acp_agent.checkpoints.shadow import Shadow, ShadowError
from acp_agent.journal.events import Checkpoint
from acp_agent.logs import get_logger

log = get_logger("acp_agent.checkpoints")


@dataclass(frozen=True, slots=True)
class Pending:
    """A state recorded before a change: ``tree`` of ``shadow``'s root, of ``paths`` only or
    (``None``) of the whole root."""

    shadow: Shadow
    tree: str
    paths: tuple[str, ...] | None


class Recorder:
    def __init__(self, state_dir: Path, session_id: str) -> None:
        self.state_dir = state_dir
        self.session_id = session_id
        self._shadows: dict[Path, Shadow] = {}
        self._recorded: list[Checkpoint] = []

    def shadow(self, root: Path) -> Shadow:
        found = self._shadows.get(root)
        if found is None:
            found = self._shadows[root] = Shadow(self.state_dir, root, self.session_id)
        return found

    def take(self) -> tuple[Checkpoint, ...]:
        """The checkpoints ``after`` made since the last ``take``: the tool runner takes them
        after each call, so a call cancelled half-way still journals what it changed."""
        taken, self._recorded = tuple(self._recorded), []
        return taken

    @staticmethod
    def locate(path: Path, roots: Sequence[Path]) -> tuple[Path, str] | None:
        """The root holding ``path`` (resolved, the deepest root) and the path relative to it."""
        best: tuple[Path, str] | None = None
        for root in roots:
            real = root.resolve()
            inside = path.is_relative_to(real) and path != real
            if inside and (best is None or len(real.parts) > len(best[0].parts)):
                best = (real, path.relative_to(real).as_posix())
        return best

    async def before_files(self, paths: Sequence[Path], roots: Sequence[Path]) -> list[Pending]:
        """Record ``paths`` (resolved, under ``roots``) as they are, before they are written."""
        grouped: dict[Path, list[str]] = {}
        for path in paths:
            found = self.locate(path, roots)
            if found is not None:
                grouped.setdefault(found[0], []).append(found[1])
        return await self._record(
            [(self.shadow(root), tuple(rel)) for root, rel in grouped.items()]
        )

    async def before_all(self, roots: Sequence[Path]) -> list[Pending]:
        """Record every root's whole tree, before a command runs in it."""
        real = {root.resolve() for root in roots}
        return await self._record([(self.shadow(root), None) for root in sorted(real)])

    async def _record(self, what: list[tuple[Shadow, tuple[str, ...] | None]]) -> list[Pending]:
        def run() -> list[Pending]:
            return [Pending(shadow, shadow.snapshot(paths), paths) for shadow, paths in what]

        try:
            return await anyio.to_thread.run_sync(run)
        except (ShadowError, OSError) as exc:
            log.warning("checkpoint_failed", session_id=self.session_id, error=str(exc))
            return []

    async def after(self, pending: Sequence[Pending]) -> tuple[Checkpoint, ...]:
        """The checkpoints of a change recorded ``pending`` before (none where nothing changed)."""
        if not pending:
            return ()

        def run() -> tuple[Checkpoint, ...]:
            return tuple(c for p in pending if (c := self._after_one(p)) is not None)

        found: tuple[Checkpoint, ...] = ()
        try:
            with anyio.CancelScope(shield=True):  # a cancelled change is recorded as well
                found = await anyio.to_thread.run_sync(run)
        except (ShadowError, OSError) as exc:
            log.warning("checkpoint_failed", session_id=self.session_id, error=str(exc))
        self._recorded += found
        return found

    def _after_one(self, pending: Pending) -> Checkpoint | None:
        shadow = pending.shadow
        after = shadow.snapshot(pending.paths)
        files = shadow.changed(pending.tree, after)  # an ignored path is in neither tree
        if not files:
            return None
        shadow.keep(self.session_id, (pending.tree, after))
        root = os.fspath(shadow.root)
        log.info("checkpoint_recorded", session_id=self.session_id, root=root, files=len(files))
        return Checkpoint(root, pending.tree, after, tuple(files))
