"""The session's sandbox policy on the wire: the ``configOptions`` entry ``sandbox``.

Its values are the policies (``sandbox/policy.py``); its current value is the policy the
session's commands run under now: the one it chose, else the config file's ``[sandbox] mode``,
else the machine's default. ``session/set_config_option`` sets it (``Session.set_sandbox``,
kept in the session's settings like the mode, so load, resume and fork keep it) from the next
command on, and the server announces it with ``config_option_update``. An unknown value is
-32602 naming ``$.value``.
"""

from __future__ import annotations

from typing import Final

from acp_agent.acp.schema import SessionConfigSelect, SessionConfigSelectOption
from acp_agent.errors import InvalidParams
from acp_agent.sandbox.policy import POLICIES, SandboxPolicy, known_policies, parse_policy

SANDBOX_OPTION: Final = "sandbox"


def sandbox_option(policy: SandboxPolicy) -> SessionConfigSelect:
    return SessionConfigSelect(
        id=SANDBOX_OPTION,
        name="Sandbox",
        current_value=str(policy),
        options=[SessionConfigSelectOption(p.id, p.name, p.description) for p in POLICIES],
        description="What commands may write and reach: the OS sandbox around run_command",
    )


def choose_sandbox(value: object, path: str) -> SandboxPolicy:
    """The policy a client asked for; -32602 naming ``path`` if there is no such policy."""
    policy = parse_policy(value)
    if policy is None:
        raise InvalidParams(
            f"unknown sandbox policy {value!r}; one of {known_policies()}", {"path": path}
        )
    return policy
