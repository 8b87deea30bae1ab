"""``/permissions`` and ``/permissions remove N``: the rules in force, door-neutral.

``permissions_command(rules, rest)`` is the whole command over a session's ``SessionRules``
(``Session.rules``), run by ``dispatch.py`` for every door: an ``Answer`` (not journaled, like
``/status``: rules are live state, not history). The list numbers every rule in force, config first,
then the project's, then the session's, each with its effect and source::

    Permission rules (deny, then ask, then allow, then the mode decides):
    1. deny run_command(rm *) [config]
    2. allow run_command(git *) [project]
    3. allow edit(**) [session]

``remove N`` removes rule N when it is a project or session rule and answers which; a config
rule, or a number that is no rule, is answered with why not (the rules stay as they were).
Anything else after the command is ``PermissionsMisuse`` (``CommandRefused``: over ACP -32602).
"""

from __future__ import annotations

from typing import Final

from acp_agent.permissions.book import RemoveRefused, SessionRules
from acp_agent.permissions.rules import Rule

USAGE: Final = "usage: /permissions (list the rules) or /permissions remove N"
HEADING: Final = "Permission rules (deny, then ask, then allow, then the mode decides):"


class PermissionsMisuse(ValueError):
    """``/permissions`` with arguments it does not take; the message shows the usage."""


def permissions_command(rules: SessionRules, rest: str) -> str:
    words = rest.split()
    if not words:
        return listing(rules)
    if words[0] != "remove" or len(words) != 2 or not words[1].isdigit():
        raise PermissionsMisuse(f"/permissions {rest}: {USAGE}")
    try:
        removed = rules.remove(int(words[1]))
    except RemoveRefused as exc:
        return f"Not removed: {exc}.\n\n{listing(rules)}"
    return f"Removed rule {words[1]}: {_line(removed)}.\n\n{listing(rules)}"


def listing(rules: SessionRules) -> str:
    listed = rules.listed()
    if not listed:
        return "No permission rules: the mode decides every call."
    lines = [f"{number}. {_line(rule)}" for number, rule in enumerate(listed, 1)]
    return "\n".join([HEADING, *lines])


def _line(rule: Rule) -> str:
    return f"{rule.effect} {rule.pattern.text} [{rule.source}]"
