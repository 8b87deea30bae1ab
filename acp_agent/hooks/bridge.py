"""``HookSet``: the hooks a server runs, as chains — in-process listeners first, then the
config's command hooks in file order.

A command hook becomes one chain listener: it runs; on a block it answers that block; on an
allow it calls ``next()`` with the prompt as it replaced it (if it did) and answers downstream's
result with its own contexts *before* downstream's. A tool hook whose matcher does not match the
tool name passes straight to ``next()`` without running.

``HookSet.admission_for(cwd)`` is the session actor's ``Admission``: the actor knows only
``admit(session_id, content)``, so each session gets one bound to its cwd.

Every server holds a ``HookSet``, most of them an empty one: this module imports the command
hooks (``command``, ``protocol``) and the ``[hooks]`` table's reader (``config``) only to build
listeners from a config that has hooks (``hooks_from``), not at a process's first
``session/new`` (``tests/integration/test_startup.py``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from acp_agent.content import ContentBlock
from acp_agent.hooks.decisions import (
    PostToolDecision,
    PreToolDecision,
    PromptAllow,
    PromptBlock,
    PromptDecision,
    ToolAllow,
    ToolBlock,
)
from acp_agent.hooks.waterfall import (
    PromptEvent,
    PromptListener,
    PromptNext,
    Registration,
    ToolDecision,
    ToolEvent,
    ToolListener,
    ToolNext,
    ToolResultView,
    run_post_tool_chain,
    run_pre_tool_chain,
    run_prompt_chain,
)
from acp_agent.journal.events import ToolCallPart
from acp_agent.tools.base import ToolOutput
from acp_agent.turn.admission import Admission, Allow, Block
from acp_agent.turn.toolrun import ToolVerdict

if TYPE_CHECKING:
    from acp_agent.hooks.command import CommandHook
    from acp_agent.hooks.config import HooksConfig

PromptHooks = Sequence[PromptListener | Registration[PromptListener]]
ToolHooks = Sequence[ToolListener | Registration[ToolListener]]


def hooks_from(config: dict[str, Any], path: Path | None) -> HookSet:
    """The hooks of the decoded config file at ``path``: none without a ``[hooks]`` table (what
    ``config.config_from`` would find then, without importing it); ``ConfigError``."""
    if path is None or "hooks" not in config:
        return HookSet()
    from acp_agent.hooks.config import config_from

    return HookSet.from_config(config_from(config, path).hooks)


def prompt_listener(hook: CommandHook) -> Registration[PromptListener]:
    from acp_agent.hooks.command import run_prompt_hook  # with a hook only: see the top

    async def listener(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        mine = await run_prompt_hook(hook, event)
        if isinstance(mine, PromptBlock):
            return mine
        if mine.content is not None:
            event = msgspec.structs.replace(event, content=mine.content)
        downstream = await next_(event)
        if isinstance(downstream, PromptBlock):
            return downstream
        contexts = (*mine.additional_contexts, *downstream.additional_contexts)
        return PromptAllow(downstream.content, contexts)

    return Registration(listener, hook.name, hook.fail)


def tool_listener(hook: CommandHook) -> Registration[ToolListener]:
    from acp_agent.hooks.command import run_tool_hook  # with a hook only: see the top

    async def listener(event: ToolEvent, next_: ToolNext) -> ToolDecision:
        if not hook.matches(event.call.name):
            return await next_(event)
        mine = await run_tool_hook(hook, event)
        if isinstance(mine, ToolBlock):
            return mine
        downstream = await next_(event)
        if isinstance(downstream, ToolBlock):
            return downstream
        return ToolAllow((*mine.additional_contexts, *downstream.additional_contexts))

    return Registration(listener, hook.name, hook.fail)


class HookSet:
    """Every hook of a server. Empty by default (then ``admit`` allows unchanged)."""

    def __init__(
        self,
        prompt_listeners: PromptHooks = (),
        pre_tool_listeners: ToolHooks = (),
        post_tool_listeners: ToolHooks = (),
    ) -> None:
        self.prompt_listeners = tuple(prompt_listeners)
        self.pre_tool_listeners = tuple(pre_tool_listeners)
        self.post_tool_listeners = tuple(post_tool_listeners)

    @classmethod
    def from_config(
        cls,
        config: HooksConfig,
        *,
        prompt_listeners: PromptHooks = (),
        pre_tool_listeners: ToolHooks = (),
        post_tool_listeners: ToolHooks = (),
    ) -> HookSet:
        """In-process listeners first, then the config's command hooks in file order."""
        return cls(
            (*prompt_listeners, *map(prompt_listener, config.prompt_submit)),
            (*pre_tool_listeners, *map(tool_listener, config.pre_tool)),
            (*post_tool_listeners, *map(tool_listener, config.post_tool)),
        )

    async def admit(
        self, session_id: str, cwd: str | os.PathLike[str], content: list[ContentBlock]
    ) -> Allow | Block:
        if not self.prompt_listeners:
            return Allow(content)
        event = PromptEvent(session_id, os.fspath(cwd), content)
        return await run_prompt_chain(self.prompt_listeners, event)

    def admission_for(self, cwd: str | os.PathLike[str]) -> Admission:
        return _BoundAdmission(self, os.fspath(cwd))

    async def pre_tool(
        self, session_id: str, cwd: str | os.PathLike[str], call: ToolCallPart
    ) -> PreToolDecision:
        if not self.pre_tool_listeners:
            return ToolAllow()
        event = ToolEvent(session_id, os.fspath(cwd), call)
        return await run_pre_tool_chain(self.pre_tool_listeners, event)

    async def post_tool(
        self,
        session_id: str,
        cwd: str | os.PathLike[str],
        call: ToolCallPart,
        result: ToolResultView,
    ) -> PostToolDecision:
        if not self.post_tool_listeners:
            return ToolAllow()
        event = ToolEvent(session_id, os.fspath(cwd), call, result)
        return await run_post_tool_chain(self.post_tool_listeners, event)


class _BoundAdmission:
    """``HookSet.admit`` for one session's cwd, in the actor's ``Admission`` shape."""

    def __init__(self, hooks: HookSet, cwd: str) -> None:
        self.hooks = hooks
        self.cwd = cwd

    async def admit(self, session_id: str, content: list[ContentBlock]) -> Allow | Block:
        return await self.hooks.admit(session_id, self.cwd, content)


def _verdict(decision: ToolDecision) -> ToolVerdict:
    if isinstance(decision, ToolBlock):
        return ToolVerdict(reason=decision.reason)
    return ToolVerdict(additional_contexts=decision.additional_contexts)


class SessionToolHooks:
    """``HookSet``'s tool chains in the shape ``ToolRunner`` calls (``session.toolrun``)."""

    def __init__(self, hooks: HookSet) -> None:
        self.hooks = hooks

    async def before(self, session_id: str, cwd: str, call: ToolCallPart) -> ToolVerdict:
        return _verdict(await self.hooks.pre_tool(session_id, cwd, call))

    async def after(
        self, session_id: str, cwd: str, call: ToolCallPart, output: ToolOutput
    ) -> ToolVerdict:
        view = ToolResultView(output.content, output.is_error)
        return _verdict(await self.hooks.post_tool(session_id, cwd, call, view))
