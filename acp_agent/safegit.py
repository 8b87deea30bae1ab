"""Every git command the agent runs itself, built so that no repository can make it run a program.

Theory of operation
-------------------
A repository's configuration (``.git/config``, and what it includes) and its attributes
(``.gitattributes``, ``.git/info/attributes``) can name programs git runs on its own: the
fsmonitor hook (``core.fsmonitor``), an external diff (``diff.external``,
``diff.<driver>.command``), textconv drivers, filter drivers (``filter.<driver>.clean`` /
``smudge`` / ``process``, run whenever git hashes a work-tree file whose stat changed, which
``status`` and ``diff`` do), the pager, and hooks (``post-index-change`` runs when ``status``
refreshes the index). The agent runs git in workspaces it did not choose (``/review``, the
checkpoints), so each of these is switched off here, in one place:

- ``core.fsmonitor=false``, ``core.hooksPath=/dev/null``, ``diff.external=``, ``core.pager=cat``
  and ``core.attributesFile=/dev/null`` are given as command-line configuration (through
  ``GIT_CONFIG_COUNT`` / ``GIT_CONFIG_KEY_n`` / ``GIT_CONFIG_VALUE_n``: no quoting, a key may hold
  any character), which overrides every file; ``--no-pager`` too.
- Filter drivers cannot be switched off as a class (there is no ``filter.*`` setting, and an
  attribute from ``.git/info/attributes`` outranks anything the command line can say), but a
  driver is only a driver if some configuration defines it. So ``user_git`` first lists every
  ``filter.<name>.*`` key the configuration defines (``git config --get-regexp``, which follows
  includes and runs nothing) and sets each such driver's ``clean``, ``smudge`` and ``process`` to
  the empty string (git runs no command for an empty one) and ``required`` to false.
- ``diff`` callers pass ``--no-ext-diff --no-textconv``; ``--ignore-submodules=all`` keeps git
  from running itself in a submodule (whose configuration is the submodule's).
- ``GIT_OPTIONAL_LOCKS=0`` keeps ``status`` from writing the index (which would also run
  ``post-index-change``): the user's ``.git`` is read, never written.
- Every ``GIT_*`` variable of the agent's own environment is dropped (``GIT_DIR``,
  ``GIT_CONFIG_PARAMETERS`` ... would redirect or reconfigure git), and the system
  configuration is not read (``GIT_CONFIG_NOSYSTEM``).

The checkpoints' shadow repository (``checkpoints/shadow.py``) adds its own ``GIT_DIR``, index and
configuration (the global one is not read either), so no configuration of the user's defines any
driver there; its ``info/attributes`` unsets ``filter``, ``diff`` and ``text`` for every path.

``tests/test_safegit.py`` runs each vector against a real hostile repository.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final

SAFE_CONFIG: Final[tuple[tuple[str, str], ...]] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("diff.external", ""),
    ("core.pager", "cat"),
    ("core.attributesFile", os.devnull),
    ("core.sshCommand", "false"),
    ("gpg.program", "false"),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
)
"""Set on every git the agent runs: the settings a repository could point at a program."""

FILTER_KEYS: Final = ("clean", "smudge", "process")


class GitUnavailable(Exception):
    """git could not be started, or did not finish in time; the message says which."""


def git_env(
    extra: Iterable[tuple[str, str]] = (),
    *,
    base: Mapping[str, str] | None = None,
    variables: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a git the agent runs: ``base`` (default ``os.environ``) without any
    ``GIT_*`` variable, the system configuration off, and ``SAFE_CONFIG`` plus ``extra`` as
    command-line configuration; then ``variables`` (``GIT_DIR`` ... of the shadow repository)."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    settings = [*SAFE_CONFIG, *extra]
    env["GIT_CONFIG_COUNT"] = str(len(settings))
    for n, (key, value) in enumerate(settings):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    env.update(variables or {})
    return env


def run_git(
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: str | Path | None = None,
    timeout: float,
    input_bytes: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``git --no-pager ARGS`` with ``env`` (from ``git_env``), output as bytes."""
    command = ["git", "--no-pager", *args]
    try:
        return subprocess.run(
            command,
            cwd=cwd,
            env=dict(env),
            input=input_bytes,
            stdin=None if input_bytes is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitUnavailable(f"git {args[0] if args else ''} failed: {exc}") from exc


def defined_filters(cwd: str | Path, timeout: float) -> list[str]:
    """The filter drivers the configuration seen from ``cwd`` defines (their subsections)."""
    listed = run_git(
        ["config", "-z", "--name-only", "--get-regexp", r"^filter\."],
        git_env(),
        cwd=cwd,
        timeout=timeout,
    )
    names: set[str] = set()
    for key in listed.stdout.decode("utf-8", "surrogateescape").split("\0"):
        section, dot, rest = key.partition(".")
        driver, dot2, _ = rest.rpartition(".")
        if section == "filter" and dot and dot2:
            names.add(driver)
    return sorted(names)


def filters_off(drivers: Iterable[str]) -> list[tuple[str, str]]:
    """Command-line settings that leave each of ``drivers`` without a program to run."""
    settings: list[tuple[str, str]] = []
    for driver in drivers:
        settings += [(f"filter.{driver}.{key}", "") for key in FILTER_KEYS]
        settings.append((f"filter.{driver}.required", "false"))
    return settings


def user_git(
    cwd: str | Path, args: Sequence[str], *, timeout: float
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git ARGS`` in the user's repository at ``cwd``, reading only: no program its
    configuration names runs and its ``.git`` is not written (see the module docstring)."""
    env = git_env(filters_off(defined_filters(cwd, timeout)))
    return run_git(args, env, cwd=cwd, timeout=timeout)
