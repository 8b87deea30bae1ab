"""The calls of a tool batch that run together: ``agent`` calls (``tools/subagent.py``).

The machine runs a batch one call at a time and records results in call order (``machine.py``:
each result durable before the next call starts). A *concurrent* tool (``ToolRunner.concurrent``)
need not wait its turn: when the batch's first call starts, the actor starts every concurrent
call of the batch here, at most ``LIMIT`` at a time, and when the machine gets to such a call
its worker waits for the outcome already on its way instead of running the tool. So the
batch's other calls keep their order, the concurrent ones overlap them and each other, and
the journal is exactly what a sequential run would have written. The machine stays as it was:
this is how the actor executes ``StartTool``, not a new input.

The runs are started only once the batch's ``tool/call`` events are durable (they start with
the first ``StartTool``, which follows that barrier). ``cancel`` (the turn's ``Abort``) cancels
them all; a cancelled run's outcome is ``None``, its worker reports it cancelled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import anyio

from acp_agent.journal.events import ToolCallPart
from acp_agent.turn.ports import Reply
from acp_agent.turn.toolrun import ToolRunOutcome

LIMIT = 4
"""Concurrent calls of one batch running at once."""

Run = Callable[[ToolCallPart], Awaitable[ToolRunOutcome]]
Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], None]


class _Outcome(Reply[ToolRunOutcome | bool]):
    """The outcome of one early run; ``False`` when it was cancelled."""


class EarlyRuns:
    def __init__(self) -> None:
        self._runs: dict[str, _Outcome] = {}
        self._scopes: list[anyio.CancelScope] = []

    def start(self, calls: Sequence[ToolCallPart], run: Run, spawn: Spawn) -> None:
        """Start ``calls`` (a new batch's concurrent ones), forgetting the last batch's."""
        self._runs, self._scopes = {}, []
        limiter = anyio.Semaphore(LIMIT)
        for call in calls:
            outcome = self._runs[call.id] = _Outcome()
            scope = anyio.CancelScope()
            self._scopes.append(scope)
            spawn(self._runner(call, run, outcome, limiter, scope))

    def has(self, call_id: str) -> bool:
        return call_id in self._runs

    async def take(self, call_id: str) -> ToolRunOutcome | None:
        """The outcome of the early run of ``call_id`` (``None``: it was cancelled)."""
        got = await self._runs.pop(call_id).wait()
        return got if isinstance(got, ToolRunOutcome) else None

    def cancel(self) -> None:
        for scope in self._scopes:
            scope.cancel()

    @staticmethod
    def _runner(
        call: ToolCallPart,
        run: Run,
        outcome: _Outcome,
        limiter: anyio.Semaphore,
        scope: anyio.CancelScope,
    ) -> Callable[[], Coroutine[Any, Any, None]]:
        async def runner() -> None:
            try:
                with scope:
                    async with limiter:
                        outcome.set(await run(call))
            finally:
                outcome.set(False)  # cancelled (a set reply keeps its first value)

        return runner
