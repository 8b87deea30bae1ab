"""What an "Always allow" answer remembers for a call, and how the question names it.

- a single command (no operator, no redirection): ``run_command(PROGRAM *)``, "`PROGRAM`
  commands";
- a compound command the parser saw completely: each simple command's words as written
  (``run_command(cd src)``, ``run_command(make)``: prefixes, as every such pattern), "the
  command `…`"; a command the parser
  could not see whole gets no "Always" option (it could never match an allow rule);
- a file edit: ``edit(**)``, every edit under the cwd; a read: ``read(PATH)``, that one file;
- a fetch: ``web_fetch(HOST)``; an MCP tool: ``mcp(SERVER/TOOL)``.
"""

from __future__ import annotations

import os
import shlex

from acp_agent.permissions.patterns import ANY_ARGS, Pattern, Target
from acp_agent.permissions.rules import Subject


def remembered(subject: Subject) -> tuple[Pattern, ...]:
    match subject.target:
        case Target.RUN_COMMAND:
            return _commands(subject.value)
        case Target.EDIT:
            return (Pattern(Target.EDIT, "**"),)
        case Target.READ:
            relative = os.path.relpath(subject.value, subject.cwd)
            inside = not (relative == ".." or relative.startswith("../"))
            return (Pattern(Target.READ, relative if inside else subject.value),)
        case Target.WEB_FETCH | Target.MCP:
            return (Pattern(subject.target, subject.value),)


def command_label(command: str) -> str:
    """How a question names a command's "Always allow" (see the module docstring)."""
    patterns = _commands(command)
    if len(patterns) == 1 and patterns[0].body.endswith(f" {ANY_ARGS}"):
        return f"`{patterns[0].body.removesuffix(f' {ANY_ARGS}')}` commands"
    return f"the command `{command.strip()}`"


def _commands(command: str) -> tuple[Pattern, ...]:
    from acp_agent.permissions.shell import analyse

    analysis = analyse(command)
    if not analysis.complete or not analysis.commands:
        return ()
    if len(analysis.commands) == 1 and not analysis.writes and _plain(command):
        program = analysis.commands[0][0]
        return (Pattern(Target.RUN_COMMAND, f"{shlex.quote(program)} {ANY_ARGS}"),)
    if any(ANY_ARGS in words for words in analysis.commands):
        return ()  # a literal `*` word would read back as "any arguments"
    exact = dict.fromkeys(shlex.join(words) for words in analysis.commands)
    return tuple(Pattern(Target.RUN_COMMAND, body) for body in exact)


def _plain(command: str) -> bool:
    """No shell syntax beyond words and quotes: one program and its arguments."""
    return not any(ch in ";&|<>()$`\n" for ch in command)
