"""What ``/review`` reviews: the working tree's uncommitted changes, read by the agent itself.

The agent runs ``git status --short`` and ``git diff-index -p HEAD`` (what ``git diff HEAD``
shows: staged and unstaged changes against the last commit; in a repository with no commit yet,
the index against the empty tree and ``git diff-files -p``) in the session's cwd, bounded in time and size, and hands the output to the turn
as context (source ``{"kind": "plugin", "name": "review"}``). Rejected: letting the model run
``git diff`` itself — the review turn is read-only, and a read-only mode refuses commands, so
the model could not; and a diff it asks for would cost a step. Untracked files are listed by
the status; the model may read them with ``read_file``.

Local on purpose: ``git`` runs where the agent runs, like a local ``run_command``. It runs through
``safegit``: no program the repository's configuration names (fsmonitor, external diff, textconv,
filters, pager, hooks) runs, and the repository's ``.git`` is only read.
"""

from __future__ import annotations

import subprocess
from typing import Final

import msgspec

from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import Source, SourceKind, source
from acp_agent.safegit import GitUnavailable, defined_filters, filters_off, git_env, run_git

EMPTY_TREE: Final = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
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
    git = _Git(cwd)
    inside = git("rev-parse", "--is-inside-work-tree")
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        raise NothingToReview(f"Nothing to review: {cwd} is not inside a git working tree.")
    status = git("status", "--short", "--ignore-submodules=all").stdout
    if git("rev-parse", "--verify", "--quiet", "HEAD").returncode == 0:
        diff = git("diff-index", "-p", "HEAD").stdout
    else:
        diff = (
            git("diff-index", "-p", "--cached", EMPTY_TREE).stdout + git("diff-files", "-p").stdout
        )
    if not status.strip() and not diff.strip():
        raise NothingToReview("Nothing to review: the working tree has no uncommitted changes.")
    return Changes(status, diff)


class _Git:
    """git in the user's repository at ``cwd``, through ``safegit``: no program its configuration
    names runs, its ``.git`` is not written. The diffs are plumbing (``diff-index``,
    ``diff-files``): ``git diff`` would rewrite the index to refresh it."""

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        try:
            self.env = git_env(filters_off(defined_filters(cwd, GIT_TIMEOUT_S)))
        except GitUnavailable as exc:
            raise NothingToReview(f"Cannot review: git failed in {cwd}: {exc}") from exc

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = ["-c", "core.quotepath=off", *args]
        if args[0].startswith("diff"):
            command += ["--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all"]
        try:
            done = run_git(command, self.env, cwd=self.cwd, timeout=GIT_TIMEOUT_S)
        except GitUnavailable as exc:
            raise NothingToReview(f"Cannot review: git failed in {self.cwd}: {exc}") from exc
        out, err = (part.decode("utf-8", "replace") for part in (done.stdout, done.stderr))
        return subprocess.CompletedProcess(done.args, done.returncode, out, err)
