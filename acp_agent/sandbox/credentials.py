"""The environment a command gets: the agent's, less every credential the agent holds.

A credential is a variable whose name ends in ``_API_KEY`` or ``_TOKEN`` (any case),
``ACP_AGENT_TOKEN`` (``serve --listen``'s), and every variable the config file names as a
provider's key (``[providers.NAME] api_key_env``), whatever its name. The rule holds under every
sandbox policy, ``off`` included: a command could print them into the journal, or send them
away. A client's terminal (``terminal/create``) runs in the client's environment, not ours.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

AGENT_TOKEN = "ACP_AGENT_TOKEN"
SUFFIXES = ("_API_KEY", "_TOKEN")


def is_credential(name: str, named: frozenset[str]) -> bool:
    upper = name.upper()
    return upper.endswith(SUFFIXES) or upper == AGENT_TOKEN or name in named


def scrubbed(env: Mapping[str, str], named: frozenset[str]) -> dict[str, str]:
    return {key: value for key, value in env.items() if not is_credential(key, named)}


def key_names(api_key_envs: Iterable[str | None]) -> frozenset[str]:
    """The variables the providers' ``api_key_env`` name (``""`` and unset name none)."""
    return frozenset(name for name in api_key_envs if name)
