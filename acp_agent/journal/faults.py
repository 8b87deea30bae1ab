"""The journal file's fault-injecting twin, and the factory the rest of the code opens files with.

``FaultyJournalFile`` wraps a real file and consults a ``FaultPlan`` before each operation:
the plan counts the calls of each operation (``write``, ``fsync``, ``truncate``) and says
whether this call fails, and how. Tests build plans in code (``FaultPlan([...])`` or
``plan.arm(...)`` for "fail the next N calls"); a process under test gets one from the
environment.

``ACP_AGENT_JOURNAL_FAULTS`` grammar (read by ``file_factory()``)::

    spec  := rule ("," rule)*
    rule  := [session-id "/"] op ":" kind ["@" first] ["x" (count | "*")]
    op    := "write" | "fsync" | "truncate"
    kind  := "eio" | "enospc" | "short"          # short: write only
    first := the 1-based number of the call of `op` on each journal file (default 1)
    count := how many consecutive calls fail from `first` on (default 1); "*" = all of them

Calls are counted per opened journal file, from the moment it is opened. A new journal's
header costs write #1 and fsync #1, so its first flush is write #2 / fsync #2; an existing
journal starts at zero (a tail repair costs truncate #1 and fsync #1). A flush is one write
and one fsync (plus a truncate when it retries a failed one). ``short`` writes half the bytes
and reports it (a partial write, not an error). Examples::

    fsync:eio@2                   the first flush after create fails once; the retry works
    fsync:eio@2x3                 the first three flush attempts fail, the fourth works
    write:short@2,write:enospc@3  half a batch reaches the file, then the disk is full
    s1/fsync:eio@2x*              session s1 never flushes again; other sessions are fine
"""

from __future__ import annotations

import errno
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Final

import msgspec

from acp_agent.journal.files import FileFactory, JournalFile, open_journal_file

FAULTS_ENV: Final = "ACP_AGENT_JOURNAL_FAULTS"


class FaultOp(StrEnum):
    WRITE = "write"
    FSYNC = "fsync"
    TRUNCATE = "truncate"


class FaultKind(StrEnum):
    EIO = "eio"
    ENOSPC = "enospc"
    SHORT = "short"


_ERRNO: Final = {FaultKind.EIO: errno.EIO, FaultKind.ENOSPC: errno.ENOSPC}


class Fault(msgspec.Struct, frozen=True):
    """Calls ``first`` .. ``first + count - 1`` of ``op`` fail with ``kind`` (``count=None``: all)."""

    op: FaultOp
    kind: FaultKind
    first: int = 1
    count: int | None = 1
    session: str | None = None

    def __post_init__(self) -> None:
        if self.kind is FaultKind.SHORT and self.op is not FaultOp.WRITE:
            raise ValueError(f"a short {self.op} makes no sense: short is for writes")
        if self.first < 1 or (self.count is not None and self.count < 1):
            raise ValueError(f"fault call numbers start at 1: {self}")

    def covers(self, call: int) -> bool:
        return call >= self.first and (self.count is None or call < self.first + self.count)


class FaultPlan:
    """The faults of one file, and the count of calls made so far per operation."""

    def __init__(self, faults: Iterable[Fault] = ()) -> None:
        self._faults = list(faults)
        self._calls: Counter[FaultOp] = Counter()

    def calls(self, op: FaultOp) -> int:
        return self._calls[op]

    def arm(self, op: FaultOp, kind: FaultKind, *, times: int | None = 1) -> None:
        """Fail the next ``times`` calls of ``op`` (``None``: every later call).

        Arms queue up: the new fault starts after those still pending for ``op``, so
        ``arm(WRITE, SHORT); arm(WRITE, EIO)`` scripts a torn write (half, then an error).
        """
        first = max([self._calls[op], *self._pending_ends(op)]) + 1
        self._faults.append(Fault(op, kind, first=first, count=times))

    def _pending_ends(self, op: FaultOp) -> list[int]:
        ends = [f.first + f.count - 1 for f in self._faults if f.op is op and f.count is not None]
        return [end for end in ends if end > self._calls[op]]

    def disarm(self) -> None:
        self._faults.clear()

    def next_call(self, op: FaultOp) -> FaultKind | None:
        """Count one call of ``op``; return the fault it meets, if any."""
        self._calls[op] += 1
        call = self._calls[op]
        return next((f.kind for f in self._faults if f.op is op and f.covers(call)), None)


def _injected(kind: FaultKind, op: FaultOp) -> OSError:
    code = _ERRNO[kind]
    return OSError(code, f"{os.strerror(code)} (injected into {op})")


class FaultyJournalFile:
    """A ``JournalFile`` that fails when its plan says so, and otherwise delegates."""

    def __init__(self, inner: JournalFile, plan: FaultPlan | None = None) -> None:
        self.inner = inner
        self.plan = plan if plan is not None else FaultPlan()

    @property
    def size(self) -> int:
        return self.inner.size

    @property
    def writes(self) -> int:
        return self.plan.calls(FaultOp.WRITE)

    @property
    def fdatasyncs(self) -> int:
        return self.plan.calls(FaultOp.FSYNC)

    @property
    def truncates(self) -> int:
        return self.plan.calls(FaultOp.TRUNCATE)

    def write(self, data: bytes) -> int:
        kind = self.plan.next_call(FaultOp.WRITE)
        if kind is FaultKind.SHORT and len(data) > 1:
            return self.inner.write(data[: len(data) // 2])
        if kind is not None and kind is not FaultKind.SHORT:
            raise _injected(kind, FaultOp.WRITE)
        return self.inner.write(data)

    def fdatasync(self) -> None:
        self._maybe_fail(FaultOp.FSYNC)
        self.inner.fdatasync()

    def truncate(self, size: int) -> None:
        self._maybe_fail(FaultOp.TRUNCATE)
        self.inner.truncate(size)

    def close(self) -> None:
        self.inner.close()

    def _maybe_fail(self, op: FaultOp) -> None:
        kind = self.plan.next_call(op)
        if kind is not None:
            raise _injected(kind, op)


# -- the environment hook -----------------------------------------------------------------


def parse_faults(spec: str) -> list[Fault]:
    """Parse the ``ACP_AGENT_JOURNAL_FAULTS`` grammar (module docstring); ValueError if bad."""
    return [_parse_rule(rule.strip()) for rule in spec.split(",") if rule.strip()]


def _parse_rule(rule: str) -> Fault:
    session, _, body = rule.rpartition("/")
    what, at, where = body.partition("@")
    op, _, kind = what.partition(":")
    first, _, count = where.partition("x") if at else ("1", "", "")
    try:
        return Fault(
            op=FaultOp(op.strip()),
            kind=FaultKind(kind.strip()),
            first=int(first),
            count=None if count == "*" else int(count or "1"),
            session=session or None,
        )
    except ValueError as exc:
        raise ValueError(f"bad {FAULTS_ENV} rule {rule!r}: {exc}") from None


def faulty_factory(faults: list[Fault]) -> FileFactory:
    """A factory giving every journal file its own plan (own call counts) of ``faults``."""

    def open_faulty(path: Path, *, create: bool) -> JournalFile:
        session = path.parent.name
        plan = FaultPlan(f for f in faults if f.session in (None, session))
        return FaultyJournalFile(open_journal_file(path, create=create), plan)

    return open_faulty


def file_factory(environ: Mapping[str, str] = os.environ) -> FileFactory:
    """How journal files are opened in this process: real files, unless faults are requested."""
    spec = environ.get(FAULTS_ENV, "")
    return faulty_factory(parse_faults(spec)) if spec.strip() else open_journal_file
