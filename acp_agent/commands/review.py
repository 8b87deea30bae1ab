"""What ``/review`` reviews: the working tree's uncommitted changes, read by the agent itself.

The agent runs ``git status --short`` and ``git diff HEAD`` (staged and unstaged changes
against the last commit; in a repository with no commit yet, ``git diff --cached`` and
``git diff``) in the session's cwd, bounded in time and size, and hands the output to the turn
as context (source ``{"kind": "plugin", "name": "review"}``). Rejected: letting the model run
``git diff`` itself — the review turn is read-only, and a read-only mode refuses commands, so
the model could not; and a diff it asks for would cost a step. Untracked files are listed by
the status; the model may read them with ``read_file``.

Local on purpose: ``git`` runs where the agent runs, like a local ``run_command``.
"""

from __future__ import annotations

import subprocess
from typing import Final

import msgspec

from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import Source, SourceKind, source

GIT_TIMEOUT_S: Final = 5.0
"""Per git call; it runs before the prompt is queued (so prompts stay FIFO), on the reader."""
MAX_DIFF_CHARS: Final = 200_000
REVIEW_SOURCE: Final[Source] = source(SourceKind.PLUGIN, name="review")


class NothingToReview(Exception):
    """No diff to review, or none could be read; the message says which, for the user."""


class Changes(msgspec.Struct, frozen=True):
    status: str
    diff: str

    def context(self) -> list[ContentBlock]:
        diff = self.diff
        if len(diff) > MAX_DIFF_CHARS:
            cut = len(diff) - MAX_DIFF_CHARS
            diff = f"{diff[:MAX_DIFF_CHARS]}\n[... {cut} more characters of the diff not shown]"
        text = f"$ git status --short\n{self.status}\n$ git diff HEAD\n{diff or '(empty)'}"
        return [TextContent(text=text)]


def working_tree_changes(cwd: str) -> Changes:
    """The changes to review (blocking: run it in a worker thread); ``NothingToReview``."""
    inside = _git(cwd, "rev-parse", "--is-inside-work-tree")
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        raise NothingToReview(f"Nothing to review: {cwd} is not inside a git working tree.")
    status = _git(cwd, "status", "--short").stdout
    if _git(cwd, "rev-parse", "--verify", "--quiet", "HEAD").returncode == 0:
        diff = _git(cwd, "diff", "HEAD").stdout
    else:
        diff = _git(cwd, "diff", "--cached").stdout + _git(cwd, "diff").stdout
    if not status.strip() and not diff.strip():
        raise NothingToReview("Nothing to review: the working tree has no uncommitted changes.")
    return Changes(status, diff)


def _git(cwd: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = ["git", "--no-pager", "-C", cwd, *args]
    if args[0] == "diff":
        command[4:4] = ["-c", "core.quotepath=off"]
        command += ["--no-color", "--no-ext-diff"]
    try:
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NothingToReview(f"Cannot review: git failed in {cwd}: {exc}") from exc
