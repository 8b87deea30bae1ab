"""A real git repository whose configuration points every program git may run at a marker.

Each vector (fsmonitor, external diff, a diff driver's command and textconv, filter drivers'
clean / smudge / process, the pager, hooks, ``core.sshCommand``, a gpg program) is a shell
command that creates ``markers/<name>``; ``markers()`` lists the ones that ran. The repository
has a commit, then ``.gitattributes`` routing every file through the drivers, and modified,
touched and untracked files, so ``status`` and ``diff`` meet every code path that could run one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

HOOKS = ("pre-commit", "post-checkout", "post-index-change", "post-commit", "pre-auto-gc")


def need_git() -> str:
    found = shutil.which("git")
    if found is None:
        pytest.skip("git is not installed (apt-get install git)")
    return found


@dataclass(frozen=True)
class HostileRepo:
    root: Path
    marker_dir: Path

    def markers(self) -> list[str]:
        return sorted(p.name for p in self.marker_dir.iterdir())

    def git_dir_digest(self) -> dict[str, str]:
        """Every file under ``.git`` and its SHA-256: compared before and after, byte for byte."""
        digests: dict[str, str] = {}
        for path in sorted((self.root / ".git").rglob("*")):
            if path.is_file() and not path.is_symlink():
                rel = path.relative_to(self.root).as_posix()
                digests[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        return digests


def _touch(marker_dir: Path, name: str) -> str:
    return f"touch {marker_dir / name}"


def _git(root: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@e",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@e",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
    )
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def make_hostile_repo(base: Path) -> HostileRepo:
    need_git()
    root, markers, hooks = base / "repo", base / "markers", base / "hooks"
    for directory in (root, markers, hooks):
        directory.mkdir(parents=True)
    _git(root, "init", "-q", ".")
    (root / "a.txt").write_text("alpha\n")
    (root / "b.dat").write_text("beta\n")
    (root / "c.md").write_text("gamma\n")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "first")
    for hook in HOOKS:
        script = hooks / hook
        script.write_text(f"#!/bin/sh\n{_touch(markers, 'hook-' + hook)}\n")
        script.chmod(0o755)

    def t(name: str) -> str:
        return _touch(markers, name)

    config = f"""[core]
\tfsmonitor = "{t("fsmonitor")}; false"
\tpager = "{t("pager")}; cat"
\thooksPath = {hooks}
\tsshCommand = "{t("ssh")}"
[diff]
\texternal = "{t("diff-external")}"
[diff "evil"]
\ttextconv = "{t("textconv")}; cat"
\tcommand = "{t("diff-command")}"
[filter "evil"]
\tclean = "{t("filter-clean")}; cat"
\tsmudge = "{t("filter-smudge")}; cat"
\trequired = true
[filter "proc"]
\tprocess = "{t("filter-process")}"
[gpg]
\tprogram = "{t("gpg")}"
[log]
\tshowSignature = true
[pager]
\tdiff = "{t("pager-diff")}; cat"
\tstatus = "{t("pager-status")}; cat"
"""
    with (root / ".git" / "config").open("a") as out:
        out.write(config)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("*.md filter=proc diff=evil\n")
    (root / ".gitattributes").write_text("*.txt filter=evil diff=evil\n*.dat filter=proc\n")
    (root / "a.txt").write_text("alpha\nchanged\n")
    (root / "b.dat").write_text("beta\nchanged\n")
    os.utime(root / "c.md", (1, 1))  # stat changed, content not: git must re-hash it
    (root / "new.txt").write_text("untracked\n")
    return HostileRepo(root, markers)
