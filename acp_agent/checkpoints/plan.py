"""Which files a restore puts back, and to what: derived from the journal alone (pure).

A ``tool/result``'s ``checkpoints`` say which files the call changed, with the trees holding them
before and after. Walking the journal in order gives, for every file:

- its state *before turn T*: the ``before`` tree of the first checkpoint of turn T or later that
  names it (a file no checkpoint of those turns names is not restored);
- its *expected* state now: the ``after`` tree of the last checkpoint that names it — what the
  agent last wrote — or, once an ``/undo`` reverted the turn that last changed it (an out-of-turn
  ``user/message`` with source ``{"kind": "agent", "name": "undo", "turn": K}``), its state before
  turn K. A file whose content on disk is not its expected state was changed by someone else, and
  a restore does not overwrite it unless forced (``restore.py``).

``/undo`` reverts the last turn that changed files and that no ``/undo`` reverted yet; a second
``/undo`` goes one turn further back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from acp_agent.journal.events import (
    Entry,
    Source,
    SourceKind,
    ToolResult,
    UserMessage,
    source,
    source_kind,
)

UNDO: Final = "undo"


def undo_source(turn: int) -> Source:
    return source(SourceKind.AGENT, name=UNDO, turn=turn)


def undone_turn(src: Source) -> int | None:
    """The turn an ``/undo`` message reverted, or ``None`` if ``src`` is not an undo's."""
    if source_kind(src) != SourceKind.AGENT or src.get("name") != UNDO:
        return None
    turn = src.get("turn")
    return turn if isinstance(turn, int) and not isinstance(turn, bool) else None


FileKey = tuple[str, str]
"""``(root, path relative to root)``."""


@dataclass(frozen=True, slots=True)
class Target:
    """A file to restore: ``path`` (relative to ``root``) as tree ``before`` holds it, provided
    it is now as tree ``expected`` holds it."""

    root: str
    path: str
    before: str
    expected: str


@dataclass
class Changes:
    """The journal's file changes, per turn, in order."""

    first_before: dict[int, dict[FileKey, str]] = field(default_factory=dict)
    """Per turn, each file it changed and the tree holding it before that turn."""
    expected: dict[FileKey, str] = field(default_factory=dict)
    undone: set[int] = field(default_factory=set)

    def add_result(self, result: ToolResult) -> None:
        turn = self.first_before.setdefault(result.turn, {})
        for checkpoint in result.checkpoints:
            for path in checkpoint.files:
                key = (checkpoint.root, path)
                turn.setdefault(key, checkpoint.before)
                self.expected[key] = checkpoint.after

    def add_undo(self, turn: int) -> None:
        self.undone.add(turn)
        self.expected.update(self.first_before.get(turn, {}))

    def targets(self, turns: Iterable[int]) -> list[Target]:
        before: dict[FileKey, str] = {}
        for turn in sorted(turns):
            for key, tree in self.first_before.get(turn, {}).items():
                before.setdefault(key, tree)
        return [
            Target(root, path, tree, self.expected[(root, path)])
            for (root, path), tree in sorted(before.items())
        ]


def changes(entries: Sequence[Entry]) -> Changes:
    found = Changes()
    for entry in entries:
        event = entry.event
        if isinstance(event, ToolResult) and event.checkpoints:
            found.add_result(event)
        elif isinstance(event, UserMessage) and (turn := undone_turn(event.source)) is not None:
            found.add_undo(turn)
    return found


def rewind_targets(entries: Sequence[Entry], from_turn: int) -> list[Target]:
    """Every file turns ``from_turn`` on changed, to restore as it was before ``from_turn``."""
    found = changes(entries)
    return found.targets(t for t in found.first_before if t >= from_turn)


def undo_turn(entries: Sequence[Entry]) -> int | None:
    """The last turn that changed files and was not undone yet (``None``: there is none)."""
    found = changes(entries)
    turns = [t for t, files in found.first_before.items() if files and t not in found.undone]
    return max(turns, default=None)


def undo_targets(entries: Sequence[Entry], turn: int) -> list[Target]:
    return changes(entries).targets([turn])
