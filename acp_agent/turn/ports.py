"""What a session actor needs from the outside world and reports to it.

``SessionDeps`` (the model, the tools, admission, clock, ids, limits) is what tests swap;
``SessionObserver`` is where the actor reports what happens (the ACP layer projects it onto the
wire, the Python API collects it); ``Reply`` is the one-shot answer a caller of the actor awaits.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Generic, Protocol, TypeVar

import anyio
import msgspec

from acp_agent.journal.events import Entry, ToolCallPart
from acp_agent.model.base import ModelProvider, Usage
from acp_agent.model.window import DEFAULT_CONTEXT_WINDOW
from acp_agent.turn.admission import Admission
from acp_agent.turn.compaction import CompactionProgress
from acp_agent.turn.gauge import Learned
from acp_agent.turn.toolrun import ToolRunner

T = TypeVar("T")


class Reply(Generic[T]):
    """A one-shot value a caller awaits (anyio has no future)."""

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._value: T | None = None

    def set(self, value: T) -> None:
        if not self._event.is_set():
            self._value = value
            self._event.set()

    async def wait(self) -> T:
        await self._event.wait()
        assert self._value is not None
        return self._value


class NoticeKind(StrEnum):
    """What a ``Notice`` is about (``_meta.acp_agent.kind`` of the ACP ``notice`` update)."""

    MODEL_RETRY = "model_retry"
    MODEL_FALLBACK = "model_fallback"
    JOURNAL_ERROR = "journal_error"


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class Notice(msgspec.Struct, frozen=True):
    """Live information for the user that is not history (never journaled)."""

    kind: NoticeKind
    severity: Severity
    title: str
    description: str | None = None


class SessionObserver(Protocol):
    """Where a session reports what happens (the ACP layer projects it onto the wire)."""

    async def appended(self, entry: Entry) -> None: ...

    async def text_delta(self, message_id: str, text: str) -> None: ...

    async def thought_delta(self, message_id: str, text: str) -> None: ...

    async def tool_started(self, call: ToolCallPart) -> None: ...

    async def journal_error(self, error: str, unflushed: int) -> None: ...

    async def titled(self, title: str) -> None: ...

    async def compaction_progress(
        self, compaction_id: str, progress: CompactionProgress, error: str | None
    ) -> None: ...

    async def usage(self, usage: Usage, context_window: int) -> None: ...

    async def note(self, text: str) -> None:
        """Something the user should know that is not history (never journaled)."""
        ...

    async def notice(self, notice: Notice) -> None:
        """A provider retry or a model fallback (the ACP layer sends it as ``notice``)."""
        ...

    async def command_answer(self, text: str, command: str) -> None:
        """A slash command answered by the agent itself (``/status`` …; never journaled)."""
        ...


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_id() -> str:
    return uuid.uuid4().hex


class SessionDeps(msgspec.Struct):
    """What a session needs from the outside world; tests swap any of it."""

    model: ModelProvider
    tools: ToolRunner
    admission: Admission
    clock: Callable[[], int] = now_ms
    ids: Callable[[], str] = new_id
    max_steps: int = 64
    remember_title: Callable[[str], None] | None = None
    """Persists the session title (the first admitted prompt); None: titles are not kept."""
    context_window: int = DEFAULT_CONTEXT_WINDOW
    """The model's context window in tokens: drives automatic compaction (``compaction.py``)."""
    reasoning_effort: str | None = None
    """The session's thinking level, sent with every request (``None``: the model's default)."""
    system_prompt: Callable[[int, bool], str] | None = None
    """The system message for a request whose turn started at this time (ms), compact or not;
    None: none."""
    compact_for: Callable[[int], bool] | None = None
    """Whether a window of this many tokens gets the compact prompt and the core tools with
    short descriptions (``[agent] prompt``); None: never."""
    model_titles: bool = False
    """Ask the model for a title after the first turn (``titles.py``); never a script model's."""
    learned: Learned | None = None
    """What the session learned of its model's window and tokens before (``gauge.py``), as
    saved with its settings; ``None``: nothing yet."""
    remember_learned: Callable[[Learned], Awaitable[None]] | None = None
    """Saves what the session learned (with its settings); ``None``: kept in memory only."""
