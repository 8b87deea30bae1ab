"""Putting files back as a checkpoint holds them (``/undo``, ``_acp_agent/rewind``).

``prepare`` reads, for each ``plan.Target``, the state to restore and the state the agent last
left, and looks at the file as it is now; nothing is written. A file whose current state is not
the one the agent left was changed by someone else since (``changed_since``): the caller refuses
to restore unless forced, so a user's edit is never overwritten silently. ``apply`` then writes:
a file the checkpoint holds gets its exact bytes and mode back (a symbolic link is re-made), a
file it does not hold (the turn created it) is removed. A file already as it should be is left
alone. Blocking: run it in a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from acp_agent.checkpoints.plan import Target
from acp_agent.checkpoints.shadow import EXECUTABLE, SYMLINK, Blob, Shadow, current

DIFF_LIMIT = 256 << 10
"""A file larger than this (or not UTF-8) is shown by a note, not its text."""


@dataclass(frozen=True, slots=True)
class FileDiff:
    """A restore as the user is shown it: ``old_text`` (the file now; ``None``: missing) to
    ``new_text`` (the file restored; empty: removed)."""

    path: str
    new_text: str
    old_text: str | None


@dataclass(frozen=True, slots=True)
class Step:
    path: Path
    shadow: Shadow
    before: Blob | None
    expected: Blob | None
    now: Blob | None

    @property
    def changed_since(self) -> bool:
        return self.now != self.expected

    @property
    def needed(self) -> bool:
        return self.now != self.before


@dataclass(frozen=True, slots=True)
class Restore:
    steps: tuple[Step, ...]

    @property
    def needed(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.needed)

    def changed_since(self, cwd: Path) -> list[str]:
        """The files someone else changed since the agent wrote them, relative to ``cwd``."""
        return [os.path.relpath(s.path, cwd) for s in self.needed if s.changed_since]

    def apply(self) -> list[Path]:
        """Restore every file that needs it; the paths restored."""
        for step in self.needed:
            _put(step)
        return [s.path for s in self.needed]

    def diffs(self) -> list[FileDiff]:
        """Each needed restore as a diff: the file now (old) to the file restored (new)."""
        return [_diff(step) for step in self.needed]


def prepare(state_dir: Path, session_id: str, targets: Sequence[Target]) -> Restore:
    shadows: dict[str, Shadow] = {}
    steps: list[Step] = []
    for target in targets:
        shadow = shadows.get(target.root)
        if shadow is None:
            shadow = shadows[target.root] = Shadow(state_dir, Path(target.root), session_id)
        before = shadow.files(target.before, [target.path])[target.path]
        expected = shadow.files(target.expected, [target.path])[target.path]
        path = Path(target.root) / target.path
        steps.append(Step(path, shadow, before, expected, current(path)))
    return Restore(tuple(steps))


def _put(step: Step) -> None:
    path = step.path
    if step.now is not None and (step.before is None or path.is_symlink()):
        path.unlink()
    if step.before is None:
        return
    data = step.shadow.blob_bytes(step.before.sha)
    path.parent.mkdir(parents=True, exist_ok=True)
    if step.before.mode == SYMLINK:
        if os.path.lexists(path):
            path.unlink()
        os.symlink(os.fsdecode(data), path)
        return
    path.write_bytes(data)
    mode = path.stat().st_mode
    executable = step.before.mode == EXECUTABLE
    path.chmod(mode | 0o111 if executable else mode & ~0o111)


def _diff(step: Step) -> FileDiff:
    old = None if step.now is None else _shown(step.now, _read(step.path))
    new = (
        "" if step.before is None else _shown(step.before, step.shadow.blob_bytes(step.before.sha))
    )
    return FileDiff(str(step.path), new, old)


def _read(path: Path) -> bytes:
    return os.fsencode(os.readlink(path)) if path.is_symlink() else path.read_bytes()


def _shown(blob: Blob, data: bytes) -> str:
    text = _text(data)
    if blob.mode == SYMLINK:
        return f"(symbolic link to {text})"
    return text if text is not None else f"(binary or large file, {len(data)} bytes)"


def _text(data: bytes) -> str | None:
    if len(data) > DIFF_LIMIT:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
