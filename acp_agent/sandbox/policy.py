"""The sandbox policies: which paths a command may write and whether it may reach the network.

| policy | writable | network |
|---|---|---|
| ``read-only`` | a private ``/tmp`` | none (loopback included) |
| ``workspace-write`` | the session's roots and a private ``/tmp`` | none (loopback included) |
| ``workspace-write-network`` | the session's roots and a private ``/tmp`` | yes |
| ``off`` | what the user may write | yes |

Under every policy but ``off`` the agent's state directory is neither readable nor writable
and every other path is read-only; see ``argv.py`` for how, ``docs/security.md`` for why.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec


class SandboxPolicy(StrEnum):
    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    WORKSPACE_WRITE_NETWORK = "workspace-write-network"
    OFF = "off"

    @property
    def confined(self) -> bool:
        """Whether a command under this policy runs inside the sandbox."""
        return self is not SandboxPolicy.OFF

    @property
    def writes_roots(self) -> bool:
        return self in (SandboxPolicy.WORKSPACE_WRITE, SandboxPolicy.WORKSPACE_WRITE_NETWORK)

    @property
    def network(self) -> bool:
        return self in (SandboxPolicy.WORKSPACE_WRITE_NETWORK, SandboxPolicy.OFF)


class PolicyInfo(msgspec.Struct, frozen=True):
    id: SandboxPolicy
    name: str
    description: str


POLICIES: tuple[PolicyInfo, ...] = (
    PolicyInfo(
        SandboxPolicy.READ_ONLY,
        "Read only",
        "Commands write nothing but a private /tmp; no network",
    ),
    PolicyInfo(
        SandboxPolicy.WORKSPACE_WRITE,
        "Workspace write",
        "Commands write the workspace and a private /tmp; no network",
    ),
    PolicyInfo(
        SandboxPolicy.WORKSPACE_WRITE_NETWORK,
        "Workspace write + network",
        "Commands write the workspace and a private /tmp, and reach the network",
    ),
    PolicyInfo(SandboxPolicy.OFF, "Off", "Commands run with the user's full rights"),
)


def parse_policy(value: object) -> SandboxPolicy | None:
    if not isinstance(value, str):
        return None
    try:
        return SandboxPolicy(value)
    except ValueError:
        return None


def known_policies() -> str:
    return ", ".join(str(info.id) for info in POLICIES)
