"""The session invariant (``docs/contract.md`` §2 and the design note), as a checker.

Theory of operation
-------------------
``check`` replays the entries through a small state (the open turn, its open step, the step's
tool batch) and collects every violation instead of stopping at the first. Each entry is
checked in two stages:

1. *placement*, from the ``SCOPES`` table: where an event type may appear at all —
   anywhere, between turns, in a turn, in a turn but outside a step, or in a step;
2. the event's own rule from ``RULES`` in ``rules.py`` (one small function per type):
   coordinates match the open turn/step, numbering is contiguous, tool results follow their
   calls in call order.

An entry that fails its placement is reported and skipped, so one misplaced event does not
cascade into a page of follow-on errors.

The rules:

- seqs are 1, 2, 3 … ; turns are 1, 2, 3 … per session; steps are 1, 2, … per turn;
- outside a turn only ``user/message`` and the types in ``STANDALONE_TYPES`` (session metadata
  declared standalone: ``session/compaction``) may appear; unknown types count as extension
  events and need a turn. A standalone type with its own entry in ``SCOPES`` keeps that scope
  (``session/compaction`` is *between turns* only); one without may appear anywhere;
- a ``session/compaction`` cuts the history between turns: ``keptFromSeq = throughSeq + 1``,
  no turn spans the cut, the cut is not after the compaction itself and moves forward from one
  compaction to the next;
- every ``turn/start`` has exactly one ``turn/end``; a final open turn is a violation unless
  ``allow_open_tail`` (a live or not yet repaired session);
- a turn asks the model at least once: it has a ``step/start`` before its ``turn/end`` —
  except a turn ended ``interrupted``, which a crash may have cut before its first step;
- ``assistant/message``, ``tool/call``, ``tool/result`` only inside an open step, with that
  step's ``turn``/``step``; ``steering/message`` inside a turn, outside a step; ``agent/error``
  inside a turn, naming a step the turn has had;
- a tool batch is the step's tool calls (announced by the assistant message's tool-call parts
  and recorded by ``tool/call``); a ``tool/result`` follows its own ``tool/call``, at most once,
  in call order; by ``step/end`` every ``tool/call`` has its result;
- a ``user/message`` may not land inside an unfinished batch: contexts drain after the whole
  batch's results.

The turn grammar itself (open turns, spans, stable boundaries, cuts) lives in ``turns.py``;
``SCOPES`` is its placement table and must agree with it.

If you add an event type: give it a scope in ``SCOPES`` and, if it has coordinates or pairing
rules, a function in ``RULES`` (``rules.py``), plus a passing and a failing test in
``tests/journal/test_invariant.py``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Final

import msgspec

from acp_agent.journal.errors import JournalCorrupt
from acp_agent.journal.events import Entry, EventType, SessionHeader, event_type
from acp_agent.journal.paths import JOURNAL_NAME, SESSION_ID_RE
from acp_agent.journal.reader import parse_journal
from acp_agent.journal.rules import RULES, ReplayState

STANDALONE_TYPES: Final[frozenset[str]] = frozenset({EventType.COMPACTION})
"""Session metadata event types allowed outside a turn (e.g. a future ``session/title``)."""


class Violation(msgspec.Struct, frozen=True):
    seq: int | None
    """The offending entry's seq (``None``: the header or the file as a whole)."""
    message: str

    def __str__(self) -> str:
        return self.message if self.seq is None else f"seq {self.seq}: {self.message}"


class Scope(Enum):
    ANYWHERE = "anywhere"
    BETWEEN_TURNS = "between turns"
    TURN = "in a turn"
    TURN_OUTSIDE_STEP = "in a turn, outside a step"
    STEP = "in a step"


SCOPES: Final[dict[str, Scope]] = {
    EventType.USER_MESSAGE: Scope.ANYWHERE,
    EventType.TURN_START: Scope.BETWEEN_TURNS,
    EventType.TURN_END: Scope.TURN,
    EventType.STEP_START: Scope.TURN_OUTSIDE_STEP,
    EventType.STEP_END: Scope.STEP,
    EventType.STEERING_MESSAGE: Scope.TURN_OUTSIDE_STEP,
    EventType.ASSISTANT_MESSAGE: Scope.STEP,
    EventType.TOOL_CALL: Scope.STEP,
    EventType.TOOL_RESULT: Scope.STEP,
    EventType.AGENT_ERROR: Scope.TURN,
    EventType.COMPACTION: Scope.BETWEEN_TURNS,
}


def scope_of(type_: str) -> Scope:
    if type_ in STANDALONE_TYPES:
        return SCOPES.get(type_, Scope.ANYWHERE)
    return SCOPES.get(type_, Scope.TURN)


# -- checking ---------------------------------------------------------------------------------


def check(
    header: SessionHeader, entries: Sequence[Entry], *, allow_open_tail: bool = False
) -> list[Violation]:
    violations = [Violation(None, message) for message in _header_problems(header)]
    state = ReplayState()
    for expected, entry in enumerate(entries, start=1):
        problems = [] if entry.seq == expected else [f"expected seq {expected}"]
        problems += _entry_problems(state, entry)
        violations += [Violation(entry.seq, message) for message in problems]
    if state.turn is not None and not allow_open_tail:
        violations.append(
            Violation(state.turn.start_seq, f"turn {state.turn.number} is open (no turn/end)")
        )
    return violations


def check_file(path: Path, *, allow_open_tail: bool = False) -> list[Violation]:
    """Load the journal at ``path`` (a ``journal.jsonl`` or its session directory) and check it.

    Load problems are violations too: a corrupt file, and a damaged tail that the next open
    would move aside. Nothing is written.
    """
    if path.is_dir():
        path = path / JOURNAL_NAME
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [Violation(None, f"cannot read journal: {exc}")]
    return check_journal(data, path, allow_open_tail=allow_open_tail)


def check_journal(
    data: bytes, path: Path | None = None, *, allow_open_tail: bool = False
) -> list[Violation]:
    """``check_file`` of a journal's bytes, from any store (``store.py``: ``read``)."""
    try:
        parsed = parse_journal(data, path=path)
    except JournalCorrupt as exc:
        return [Violation(exc.seq, f"journal corrupt at byte {exc.offset}: {exc.reason}")]
    violations = check(parsed.header, parsed.entries, allow_open_tail=allow_open_tail)
    if parsed.tail is not None:
        tail = parsed.tail
        message = f"damaged tail at byte {tail.offset} ({tail.length} bytes): {tail.reason}"
        violations.append(Violation(tail.seq, message))
    return violations


def _header_problems(header: SessionHeader) -> list[str]:
    problems = []
    if header.type != "session":
        problems.append(f"header: type is {header.type!r}, expected 'session'")
    if header.version != 1:
        problems.append(f"header: unsupported version {header.version}")
    if not SESSION_ID_RE.fullmatch(header.id):
        problems.append(f"header: invalid session id {header.id!r}")
    if not os.path.isabs(header.cwd):
        problems.append(f"header: cwd {header.cwd!r} is not absolute")
    return problems


def _entry_problems(state: ReplayState, entry: Entry) -> list[str]:
    type_ = event_type(entry.event)
    misplaced = _placement_problem(state, type_, scope_of(type_))
    if misplaced is not None:
        return [misplaced]
    rule = RULES.get(type(entry.event))
    return rule(state, entry) if rule is not None else []


def _placement_problem(state: ReplayState, type_: str, scope: Scope) -> str | None:
    turn = state.turn
    if scope is Scope.ANYWHERE:
        return None
    if scope is Scope.BETWEEN_TURNS:
        return None if turn is None else f"{type_} while turn {turn.number} is open"
    if turn is None:
        return f"{type_} outside a turn"
    if scope is Scope.STEP and turn.step is None:
        return f"{type_} outside a step"
    if scope is Scope.TURN_OUTSIDE_STEP and turn.step is not None:
        return f"{type_} inside step {turn.step.number} of turn {turn.number}"
    return None
