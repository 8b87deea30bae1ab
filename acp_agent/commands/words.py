r"""Slash commands: the words, and the one parser of a prompt whose text starts with ``/<name>``.

A prompt is a command when all its blocks are text and the text, stripped, starts with
``/<name>`` followed by the end or whitespace; ``REST`` is what follows, stripped. The
vocabulary (``BUILT_IN``, advertised to ACP clients in this order, then the session's skills):

| command | served by | model request |
|---|---|---|
| ``/compact [instructions]`` | a compaction (``turn/compaction.py``), queued like a prompt | the summary |
| ``/init [notes]`` | a normal turn whose prompt is ``INIT_INSTRUCTION`` | yes |
| ``/review [focus]`` | a read-only turn: the working tree's diff as context, then ``REVIEW_INSTRUCTION`` | yes, unless there is nothing to review |
| ``/status`` | the agent, from the session's state (an agent message, not journaled) | no |
| ``/export [html\|md]`` | the agent: the history so far as one file under the state dir (``export.py``); the answer names it | no |
| ``/permissions [remove N]`` | the agent: the rules in force, or one removed (``permissions.py``) | no |
| ``/model NAME``, ``/mode NAME`` | the config options (same effect and notifications) | no |
| ``/undo`` | the agent: restores the last turn's files after asking (``undo.py``); the model is told | no |
| ``/tasks`` | the agent, from the session's task table (``status.tasks_text``; like ``/status``) | no |
| ``/<skill> REST`` | a normal turn: the skill's body as context, then ``REST`` | yes |

A name that is neither a built-in nor a skill is no command: the prompt goes to the model as
typed. What each command does is ``dispatch.py``'s, for every door alike; this module knows the
words only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Final

import msgspec

from acp_agent.commands.skills import Skill
from acp_agent.content import ContentBlock, TextContent


class Command(StrEnum):
    COMPACT = "compact"
    INIT = "init"
    REVIEW = "review"
    STATUS = "status"
    EXPORT = "export"
    MODEL = "model"
    MODE = "mode"
    PERMISSIONS = "permissions"
    UNDO = "undo"
    TASKS = "tasks"


class SlashCommand(msgspec.Struct, frozen=True):
    """A command as a client lists it (ACP ``available_commands_update``)."""

    name: str
    description: str
    hint: str


BUILT_IN: Final = (
    SlashCommand(
        Command.COMPACT,
        "Summarize older history to free context; recent turns are kept verbatim",
        "optional instructions for the summary",
    ),
    SlashCommand(
        Command.INIT,
        "Survey the workspace and write an AGENTS.md for it (edits ask as the mode says)",
        "optional notes on what AGENTS.md should cover",
    ),
    SlashCommand(
        Command.REVIEW,
        "Review the working tree's uncommitted changes (git diff), read-only",
        "optional focus for the review",
    ),
    SlashCommand(
        Command.STATUS,
        "Show the session's model, mode, thinking level, context and token use (no model call)",
        "",
    ),
    SlashCommand(
        Command.EXPORT,
        "Write the session so far as one self-contained HTML page (or Markdown); names the file",
        "html (the default) or md",
    ),
    SlashCommand(Command.MODEL, "Switch the session's model", "model id (empty: list them)"),
    SlashCommand(Command.MODE, "Switch the session's mode", "mode id (empty: list them)"),
    SlashCommand(
        Command.PERMISSIONS,
        "List the permission rules in force with their source, or remove one",
        "empty to list, or remove N",
    ),
    SlashCommand(
        Command.UNDO,
        "Put back the files the last turn changed, as they were before it (shows the diff, asks)",
        "",
    ),
    SlashCommand(Command.TASKS, "List the session's background tasks (no model call)", ""),
)
RESERVED: Final = frozenset(str(c) for c in Command)
_INVOCATION: Final = re.compile(r"/(\S+)(?:\s+(.*))?", re.DOTALL)

INIT_INSTRUCTION: Final = """\
Write an AGENTS.md file at the root of the working directory for coding agents that will work \
in this repository. First survey the workspace: list the top-level files and directories, read \
the README, the build and package files (pyproject.toml, package.json, Makefile, Cargo.toml, \
...), the test setup and any existing AGENTS.md or CLAUDE.md. Then write AGENTS.md with the \
edit tools: what the project is, how it is laid out, how to install, build, run the tests and \
lint, the code conventions you observed, and anything an agent must not do. Keep it short and \
concrete (commands that actually work here, real paths); if an AGENTS.md already exists, \
improve it rather than starting over. Say briefly what you wrote."""

REVIEW_INSTRUCTION: Final = """\
Review the uncommitted changes of the working tree, given above as context (the output of \
git status and git diff). Look for bugs, missing error handling, unclear names, missing \
tests and docs, and anything risky. You may read files for context, but do not change \
anything: this review is read-only. Answer with a short summary, then findings ordered by \
severity, each with the file and line it is about and a suggested fix."""


class Invocation(msgspec.Struct, frozen=True):
    name: str
    rest: str


def parse_invocation(content: Sequence[ContentBlock]) -> Invocation | None:
    """``/<name> REST`` of an all-text prompt (None: not of that shape)."""
    if not content or not all(isinstance(block, TextContent) for block in content):
        return None
    text = "".join(b.text for b in content if isinstance(b, TextContent)).strip()
    match = _INVOCATION.fullmatch(text)
    if match is None:
        return None
    name, rest = match.group(1), match.group(2) or ""
    return Invocation(name, rest.strip())


def compact_instructions(content: Sequence[ContentBlock]) -> str | None:
    """The instructions of a ``/compact`` prompt (``""`` for none); None for any other prompt."""
    invocation = parse_invocation(content)
    return (
        invocation.rest if invocation is not None and invocation.name == Command.COMPACT else None
    )


def with_notes(instruction: str, rest: str) -> list[ContentBlock]:
    """A built-in prompt, with what the user typed after the command."""
    text = f"{instruction}\n\nThe user adds: {rest}" if rest else instruction
    return [TextContent(text=text)]


def skill_prompt(skill: Skill, rest: str) -> list[ContentBlock]:
    """The prompt of ``/<skill> REST``: exactly ``REST``; with nothing typed after the command,
    the command as typed (a turn needs a prompt, and that is what the user said)."""
    return [TextContent(text=rest or f"/{skill.name}")]


def advertised(skills: Sequence[Skill]) -> list[SlashCommand]:
    """The built-in commands, then the skills (their hint: what follows the command)."""
    own = [SlashCommand(s.name, s.description, "what to do with the skill") for s in skills]
    return [*BUILT_IN, *own]
