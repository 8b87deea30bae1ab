"""In-process extension points: listener chains with ``next()`` (middleware style).

Theory of operation
-------------------
A chain is a list of listeners for one extension point. Listener *i* gets the event and a
``next`` that runs listeners *i+1…*; the end of the chain allows unchanged. So the chain's
answer is whatever the *first* listener returns, and each listener decides how much of the
rest it lets through:

- returning ``await next(event)`` unchanged keeps downstream's prompt and contexts;
- returning something else is a deliberate replacement (``PromptAllow(content=None)`` means
  "the prompt I was given", so a listener that never calls ``next`` simply allows unchanged);
- a block is final: once any ``next()`` answered a block, the chain blocks even if an upstream
  listener returns an allow (an upstream listener cannot un-block a guard below it), and a
  block carries no contexts, so nothing the chain produced survives it.

``next`` results are normalized: a ``PromptAllow`` coming back from ``next`` always carries the
concrete content, never ``None``, so passing it upward unchanged is always exact.

A listener that raises (or returns something that is not a decision, or calls ``next`` twice)
has *failed*, and its ``fail`` policy decides (``kinds.FailPolicy``): ``open`` behaves as if the
listener were absent — downstream's answer if ``next`` already ran, otherwise the rest of the
chain runs now — and logs ``hook_failed``; ``closed`` blocks with a reason naming the listener
and the failure. Cancellation (``BaseException``) is never a failure: it propagates.

Rejected: letting listeners call ``inject()`` themselves — an upstream listener could then
commit context before a downstream one blocks (the design note's last alternative).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import msgspec

from acp_agent.content import ContentBlock
from acp_agent.hooks.decisions import (
    PromptAllow,
    PromptBlock,
    PromptDecision,
    ToolAllow,
    ToolBlock,
)
from acp_agent.hooks.kinds import FailPolicy, HookKind
from acp_agent.journal.events import ToolCallPart
from acp_agent.logs import get_logger
from acp_agent.turn.admission import Allow, Block

log = get_logger("acp_agent.hooks")


class PromptEvent(msgspec.Struct, frozen=True):
    """A direct prompt about to be admitted (``content`` as replaced so far)."""

    session_id: str
    cwd: str
    content: list[ContentBlock]


class ToolResultView(msgspec.Struct, frozen=True):
    """A finished tool's result, as ``post_tool`` listeners see it."""

    content: list[ContentBlock]
    is_error: bool


class ToolEvent(msgspec.Struct, frozen=True):
    """A tool call: before it runs (``result is None``) or after (``post_tool``)."""

    session_id: str
    cwd: str
    call: ToolCallPart
    result: ToolResultView | None = None


ToolDecision = ToolAllow | ToolBlock
PromptNext = Callable[[PromptEvent], Awaitable[PromptDecision]]
PromptListener = Callable[[PromptEvent, PromptNext], Awaitable[PromptDecision]]
ToolNext = Callable[[ToolEvent], Awaitable[ToolDecision]]
ToolListener = Callable[[ToolEvent, ToolNext], Awaitable[ToolDecision]]

L = TypeVar("L")
E = TypeVar("E")
D = TypeVar("D")


class HookFailure(Exception):
    """Raised by a listener to fail with a clean message (logged without a traceback)."""


class Registration(msgspec.Struct, Generic[L], frozen=True):
    """A listener with the name used in logs and reasons, and its failure policy."""

    listener: L
    name: str
    fail: FailPolicy = FailPolicy.OPEN


def register(
    listener: L, name: str | None = None, fail: FailPolicy = FailPolicy.OPEN
) -> Registration[L]:
    label = name or getattr(listener, "__qualname__", None) or repr(listener)
    return Registration(listener, label, fail)


async def run_prompt_chain(
    listeners: Sequence[PromptListener | Registration[PromptListener]], event: PromptEvent
) -> Allow | Block:
    """Run a prompt chain; the result is what prompt admission answers."""
    chain = _Chain(
        HookKind.PROMPT_SUBMIT,
        _registrations(listeners),
        _settle_prompt,
        _allow_prompt,
        PromptBlock,
    )
    match await chain.run(event):
        case PromptAllow(content=content, additional_contexts=contexts):
            return Allow(content if content is not None else event.content, contexts)
        case PromptBlock(reason=reason):
            return Block(reason)


async def run_pre_tool_chain(
    listeners: Sequence[ToolListener | Registration[ToolListener]], event: ToolEvent
) -> ToolDecision:
    return await _run_tool_chain(HookKind.PRE_TOOL, listeners, event)


async def run_post_tool_chain(
    listeners: Sequence[ToolListener | Registration[ToolListener]], event: ToolEvent
) -> ToolDecision:
    return await _run_tool_chain(HookKind.POST_TOOL, listeners, event)


async def _run_tool_chain(
    kind: HookKind,
    listeners: Sequence[ToolListener | Registration[ToolListener]],
    event: ToolEvent,
) -> ToolDecision:
    chain = _Chain(kind, _registrations(listeners), _settle_tool, _allow_tool, ToolBlock)
    return await chain.run(event)


def _registrations(listeners: Sequence[L | Registration[L]]) -> list[Registration[L]]:
    return [item if isinstance(item, Registration) else register(item) for item in listeners]


def _allow_prompt(event: PromptEvent) -> PromptDecision:
    return PromptAllow(event.content)


def _allow_tool(event: ToolEvent) -> ToolDecision:
    return ToolAllow()


def _settle_prompt(decision: object, event: PromptEvent) -> PromptDecision:
    match decision:
        case PromptAllow(content=None, additional_contexts=contexts):
            return PromptAllow(event.content, contexts)
        case PromptAllow() | PromptBlock():
            return decision
    raise TypeError(f"a prompt listener must return PromptAllow or PromptBlock, got {decision!r}")


def _settle_tool(decision: object, event: ToolEvent) -> ToolDecision:
    if isinstance(decision, ToolAllow | ToolBlock):
        return decision
    raise TypeError(f"a tool listener must return ToolAllow or ToolBlock, got {decision!r}")


class _Chain(Generic[E, D]):
    """One run of one chain. ``allow`` is both the chain's end and "allow unchanged"."""

    def __init__(
        self,
        kind: HookKind,
        registrations: Sequence[
            Registration[Callable[[E, Callable[[E], Awaitable[D]]], Awaitable[D]]]
        ],
        settle: Callable[[object, E], D],
        allow: Callable[[E], D],
        block: Callable[[str], D],
    ) -> None:
        self.kind = kind
        self.registrations = registrations
        self.settle = settle
        self.allow = allow
        self.block = block

    async def run(self, event: E) -> D:
        async def step(index: int, current: E) -> D:
            if index == len(self.registrations):
                return self.allow(current)
            return await self._guarded(index, current, lambda e: step(index + 1, e))

        return await step(0, event)

    async def _guarded(self, index: int, event: E, downstream: Callable[[E], Awaitable[D]]) -> D:
        registration = self.registrations[index]
        seen: list[D] = []  # downstream's answer, once `next` has run
        called = False

        async def next_(current: E) -> D:
            nonlocal called
            if called:
                raise RuntimeError("next() called more than once")
            called = True
            seen.append(await downstream(current))
            return seen[0]

        try:
            decision = self.settle(await registration.listener(event, next_), event)
        except Exception as exc:
            self._log_failure(registration.name, registration.fail, exc)
            if registration.fail is FailPolicy.CLOSED:
                return self.block(f"{self.kind} hook {registration.name!r} failed: {_why(exc)}")
            if seen:
                return seen[0]
            # next() never ran: skip this listener and run the rest. If it started but never
            # finished (the listener ran it in a task of its own), there is nothing to keep.
            return self.allow(event) if called else await downstream(event)
        if seen and _is_block(seen[0]) and not _is_block(decision):
            return seen[0]
        return decision

    def _log_failure(self, name: str, fail: FailPolicy, exc: Exception) -> None:
        log.warning(
            "hook_failed",
            hook=str(self.kind),
            name=name,
            fail=str(fail),
            error=_why(exc),
            exc_info=not isinstance(exc, HookFailure),
        )


def _why(exc: Exception) -> str:
    if isinstance(exc, HookFailure):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _is_block(decision: object) -> bool:
    return isinstance(decision, PromptBlock | ToolBlock)
