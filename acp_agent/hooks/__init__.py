"""Extension points: prompt admission and tool hooks, in-process and as commands.

- ``decisions``: what a listener answers (``PromptAllow``/``PromptBlock``, ``ToolAllow``/
  ``ToolBlock``; contexts are ``AdditionalContext``).
- ``waterfall``: listener chains with ``next()`` and their semantics.
- ``protocol`` / ``command``: the command-hook bridge (docs/contract.md §7).
- ``config``: the ``[hooks]`` tables of the config file.
- ``bridge``: ``HookSet``, what the server holds.

These names are imported from their module at first use (PEP 562): importing
``acp_agent.hooks.bridge``, which every server does for its (most often empty) ``HookSet``, runs
this file first, and must not import the command hooks and the config reader with it
(``bridge.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp_agent.config_file import ConfigError
    from acp_agent.hooks.bridge import HookSet, prompt_listener, tool_listener
    from acp_agent.hooks.command import CommandHook
    from acp_agent.hooks.config import Config, HooksConfig, load_config
    from acp_agent.hooks.decisions import (
        AdditionalContext,
        PostToolDecision,
        PreToolDecision,
        PromptAllow,
        PromptBlock,
        PromptDecision,
        ToolAllow,
        ToolBlock,
    )
    from acp_agent.hooks.kinds import FailPolicy, HookKind
    from acp_agent.hooks.waterfall import (
        HookFailure,
        PromptEvent,
        PromptListener,
        PromptNext,
        Registration,
        ToolEvent,
        ToolListener,
        ToolNext,
        ToolResultView,
        register,
        run_post_tool_chain,
        run_pre_tool_chain,
        run_prompt_chain,
    )

_HOME = {
    "AdditionalContext": "acp_agent.hooks.decisions",
    "CommandHook": "acp_agent.hooks.command",
    "Config": "acp_agent.hooks.config",
    "ConfigError": "acp_agent.config_file",
    "FailPolicy": "acp_agent.hooks.kinds",
    "HookFailure": "acp_agent.hooks.waterfall",
    "HookKind": "acp_agent.hooks.kinds",
    "HookSet": "acp_agent.hooks.bridge",
    "HooksConfig": "acp_agent.hooks.config",
    "PostToolDecision": "acp_agent.hooks.decisions",
    "PreToolDecision": "acp_agent.hooks.decisions",
    "PromptAllow": "acp_agent.hooks.decisions",
    "PromptBlock": "acp_agent.hooks.decisions",
    "PromptDecision": "acp_agent.hooks.decisions",
    "PromptEvent": "acp_agent.hooks.waterfall",
    "PromptListener": "acp_agent.hooks.waterfall",
    "PromptNext": "acp_agent.hooks.waterfall",
    "Registration": "acp_agent.hooks.waterfall",
    "ToolAllow": "acp_agent.hooks.decisions",
    "ToolBlock": "acp_agent.hooks.decisions",
    "ToolEvent": "acp_agent.hooks.waterfall",
    "ToolListener": "acp_agent.hooks.waterfall",
    "ToolNext": "acp_agent.hooks.waterfall",
    "ToolResultView": "acp_agent.hooks.waterfall",
    "load_config": "acp_agent.hooks.config",
    "prompt_listener": "acp_agent.hooks.bridge",
    "register": "acp_agent.hooks.waterfall",
    "run_post_tool_chain": "acp_agent.hooks.waterfall",
    "run_pre_tool_chain": "acp_agent.hooks.waterfall",
    "run_prompt_chain": "acp_agent.hooks.waterfall",
    "tool_listener": "acp_agent.hooks.bridge",
}
"""Each name's module."""


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "AdditionalContext",
    "CommandHook",
    "Config",
    "ConfigError",
    "FailPolicy",
    "HookFailure",
    "HookKind",
    "HookSet",
    "HooksConfig",
    "PostToolDecision",
    "PreToolDecision",
    "PromptAllow",
    "PromptBlock",
    "PromptDecision",
    "PromptEvent",
    "PromptListener",
    "PromptNext",
    "Registration",
    "ToolAllow",
    "ToolBlock",
    "ToolEvent",
    "ToolListener",
    "ToolNext",
    "ToolResultView",
    "load_config",
    "prompt_listener",
    "register",
    "run_post_tool_chain",
    "run_pre_tool_chain",
    "run_prompt_chain",
    "tool_listener",
]
