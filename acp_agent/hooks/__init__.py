"""Extension points: prompt admission and tool hooks, in-process and as commands.

- ``decisions``: what a listener answers (``PromptAllow``/``PromptBlock``, ``ToolAllow``/
  ``ToolBlock``; contexts are ``AdditionalContext``).
- ``waterfall``: listener chains with ``next()`` and their semantics.
- ``protocol`` / ``command``: the command-hook bridge (docs/contract.md §7).
- ``config``: the ``[hooks]`` tables of the config file.
- ``bridge``: ``HookSet``, what the server holds.
"""

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
