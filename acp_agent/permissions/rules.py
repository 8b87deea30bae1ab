"""Weighing every rule in force against one thing a call does: deny, then ask, then allow.

``Subject`` is what the call does, as the tool computed it before touching anything: the command
line and the directory it runs in, the resolved path it writes or reads, the host it fetches
from, the MCP ``server/tool`` it calls. ``weigh`` returns the ``Verdict``: the first ``deny`` rule
that matches, else the first ``ask``, else ``allow`` when allow rules cover it, else no rule (the
mode decides). For a command line (``shell.analyse``) a deny or ask rule matches when *any* of its
simple commands matches it; allow rules cover it only when *every* simple command matches one,
the parser saw all of it and no redirection writes outside the roots.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from enum import StrEnum

import msgspec

from acp_agent.permissions.patterns import (
    Pattern,
    Target,
    command_matches,
    host_matches,
    mcp_matches,
    path_matches,
)

HARMLESS_WRITES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


class Effect(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class Source(StrEnum):
    CONFIG = "config"
    PROJECT = "project"
    SESSION = "session"


class Rule(msgspec.Struct, frozen=True):
    effect: Effect
    pattern: Pattern
    source: Source

    def describe(self) -> str:
        """``the rule deny run_command(rm *) (config)``: how a refusal names it."""
        return f"the rule {self.effect} {self.pattern.text} ({self.source})"


class Subject(msgspec.Struct, frozen=True):
    """What one call does. ``value``: the command line, the resolved absolute path, the host,
    or ``server/tool``. ``cwd``: where relative globs and a command's relative paths start;
    ``roots``: the session's roots (a command's redirections outside them are never allowed)."""

    target: Target
    value: str
    cwd: str
    roots: tuple[str, ...] = ()


class Verdict(msgspec.Struct, frozen=True):
    """``effect`` ``None``: no rule speaks, the mode decides. ``rule``: the one that decided
    (``None`` for an allow made of several rules, one per simple command)."""

    effect: Effect | None = None
    rule: Rule | None = None


def weigh(rules: Iterable[Rule], subject: Subject) -> Verdict:
    relevant = [r for r in rules if r.pattern.target is subject.target]
    if subject.target is Target.RUN_COMMAND:
        return _weigh_command(relevant, subject)
    for effect in (Effect.DENY, Effect.ASK, Effect.ALLOW):
        for rule in relevant:
            if rule.effect is effect and _matches(rule.pattern, subject):
                return Verdict(effect, rule)
    return Verdict()


def _matches(pattern: Pattern, subject: Subject) -> bool:
    match subject.target:
        case Target.EDIT | Target.READ:
            return path_matches(pattern.body, subject.value, subject.cwd)
        case Target.WEB_FETCH:
            return host_matches(pattern.body, subject.value)
        case Target.MCP:
            return mcp_matches(pattern.body, subject.value)
        case Target.RUN_COMMAND:  # pragma: no cover - weighed by _weigh_command
            return False


def _weigh_command(rules: list[Rule], subject: Subject) -> Verdict:
    from acp_agent.permissions.shell import analyse, fallback_commands, unwrapped

    analysis = analyse(subject.value)
    seen = (
        analysis.commands
        if analysis.complete
        else analysis.commands + fallback_commands(subject.value)
    )
    commands = [variant for words in seen for variant in unwrapped(words)]
    for effect in (Effect.DENY, Effect.ASK):
        for rule in rules:
            if rule.effect is effect and any(
                command_matches(rule.pattern.body, w) for w in commands
            ):
                return Verdict(effect, rule)
    allows = [r for r in rules if r.effect is Effect.ALLOW]
    if not (analysis.complete and analysis.commands and allows):
        return Verdict()
    if any(_outside(w, subject) for w in analysis.writes):
        return Verdict()
    covering = [_first(allows, words) for words in analysis.commands]
    if any(rule is None for rule in covering):
        return Verdict()
    only = covering[0] if len(set(map(id, covering))) == 1 else None
    return Verdict(Effect.ALLOW, only)


def _first(rules: list[Rule], words: tuple[str, ...]) -> Rule | None:
    return next((r for r in rules if command_matches(r.pattern.body, words)), None)


def _outside(written: str, subject: Subject) -> bool:
    if written in HARMLESS_WRITES:
        return False
    path = os.path.realpath(os.path.join(subject.cwd, os.path.expanduser(written)))
    roots = [os.path.realpath(r) for r in subject.roots or (subject.cwd,)]
    return not any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)
