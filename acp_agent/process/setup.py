"""The configuration a process serves with, checked once before anything is served.

Both front doors (stdio's ``launch.run_server`` and ``remote/run.run_listen``) call
``checked_setup`` before they read a byte or bind a socket: a bad config file or model spec is
``ConfigError`` / ``BadModelSpec`` here, reported on stderr with exit status 2. Kept light
(no anyio, no structlog): ``launch.py`` imports it before the first ``initialize`` is answered.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from acp_agent.config_file import read_config_file
from acp_agent.journal.store_choice import choose_store
from acp_agent.model.config import providers_from
from acp_agent.model.registry import ModelCatalog
from acp_agent.options import Options
from acp_agent.session.system_prompt import PromptConfig, prompt_config_from
from acp_agent.tools.web_settings import WebFetchSettings, web_fetch_settings_from

if TYPE_CHECKING:
    from acp_agent.hooks.bridge import HookSet
    from acp_agent.permissions.rules import Rule
    from acp_agent.sandbox.guard import Sandbox


class Setup(msgspec.Struct, frozen=True):
    """The checked configuration: what the server is built from."""

    config: dict[str, Any]
    models: ModelCatalog
    prompt: PromptConfig
    web_fetch: WebFetchSettings = msgspec.field(default_factory=WebFetchSettings)
    """The ``[web_fetch]`` table."""

    def hooks(self, options: Options) -> HookSet:
        """The configured hooks (none without a ``[hooks]`` table; checked already)."""
        from acp_agent.hooks.bridge import hooks_from

        return hooks_from(self.config, options.config)

    def rules(self, options: Options) -> tuple[Rule, ...]:
        """The ``[permissions]`` rules (none without the table; checked already)."""
        from acp_agent.permissions.config import rules_from

        return rules_from(self.config, options.config)

    def sandbox(self, options: Options, hidden: tuple[Path, ...] = ()) -> Sandbox:
        """The process's sandbox around commands (``[sandbox]`` checked already); ``hidden``:
        more files no command may read (``--token-file``)."""
        return command_sandbox(options, self.models, self.config, hidden)


def checked_setup(options: Options) -> Setup:
    """Read and check the config file once (``ConfigError``) and the model spec
    (``BadModelSpec``), and choose the journal store (``journal/store_choice.py``: a bad URL or a
    missing driver is a ``ConfigError``); the ``[hooks]``, ``[permissions]`` and ``[sandbox]``
    tables only when there is one."""
    config = read_config_file(options.config)  # once, for every table
    providers = providers_from(config, options.config)
    window = options.context_window if options.context_window_set else None
    models = ModelCatalog(options.model, providers, context_window=window)
    prompt = prompt_config_from(config, options.config)
    web_fetch = web_fetch_settings_from(config, options.config)
    choose_store(options.state_dir, options.journal_store, config, options.config)
    if options.config is not None and "hooks" in config:
        from acp_agent.hooks.config import config_from

        config_from(config, options.config)
    if "permissions" in config:
        from acp_agent.permissions.config import rules_from

        rules_from(config, options.config)
    if options.config is not None and "sandbox" in config:
        from acp_agent.sandbox.config import sandbox_config_from

        sandbox_config_from(config, options.config)
    return Setup(config, models, prompt, web_fetch)


def command_sandbox(
    options: Options,
    models: ModelCatalog,
    config: dict[str, Any] | None = None,
    hidden: tuple[Path, ...] = (),
) -> Sandbox:
    """The process's sandbox: the config file's ``[sandbox] mode``, the state directory, the
    config file and ``hidden`` out of reach, the providers' keys dropped from commands'
    environment."""
    from acp_agent.sandbox.config import sandbox_config_from
    from acp_agent.sandbox.guard import Sandbox

    return Sandbox(
        options.state_dir,
        configured=sandbox_config_from(config or {}, options.config).mode,
        key_names=models.key_names(),
        hidden_files=(options.config, *hidden),
    )
