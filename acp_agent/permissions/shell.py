"""A command line as its simple commands, with a real shell parser (bashlex, imported lazily).

Theory of operation
-------------------
``analyse`` walks bashlex's tree and collects every simple command (its words after the shell's
quote removal, leading ``NAME=value`` assignments left out) wherever it stands: in a list (``;``,
``&&``, ``||``, ``&``), a pipeline, a subshell or ``{ …; }`` group, ``if``/``for``/``while``
bodies, a function body, ``$(…)``, backticks, ``<(…)``, and, parsed again, the script of
``sh -c``/``bash -c`` and the words of ``eval``. A ``deny`` or ``ask`` rule also sees each
command without the wrappers that run the rest of it (``unwrapped``: ``sudo``, ``env``,
``time``, ``xargs`` …); an ``allow`` rule sees the words as written. It also collects the
files written by redirections (``>``, ``>>``, ``&>``, ``>|``, ``<>``), which ``rules`` weighs
against the roots.

``complete`` is ``False`` when the parser could not see everything the shell would run: the
line does not parse (bashlex refuses ``case`` and ``time``, unbalanced quotes), a command's
program is itself an expansion (``$CMD x``), or a command substitution hides inside a
``${…}`` expansion or an unquoted here-document. An incomplete line never matches an ``allow``
rule; for ``deny`` and ``ask``, ``fallback_commands`` then also splits the text at the shell's
operators (crudely, but only ever to find *more* to refuse).

Rejected: matching the command text with a regex (``a && rm x`` would hide ``rm``), and
``shlex`` alone (it knows quoting, not ``;``, ``|``, ``$(…)`` or redirections).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import msgspec

WRITES = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
WRAPPERS = frozenset(
    {"time", "command", "builtin", "exec", "nohup", "nice", "env", "sudo", "xargs"}
)
_HIDDEN = re.compile(r"\$\(|`")
_OPERATORS = re.compile(r"\|\||&&|[;|&\n()`]|\$\(")
MAX_DEPTH = 4


class Analysis(msgspec.Struct, frozen=True):
    commands: tuple[tuple[str, ...], ...]
    writes: tuple[str, ...]
    complete: bool


class _Walk:
    def __init__(self) -> None:
        self.commands: list[tuple[str, ...]] = []
        self.writes: list[str] = []
        self.complete = True

    def line(self, text: str, depth: int) -> None:
        import bashlex  # type: ignore[import-untyped]  # lazily: only a command decision needs it

        if depth > MAX_DEPTH:
            self.complete = False
            return
        try:
            trees = bashlex.parse(text)
        except Exception:  # bashlex raises many kinds (ParsingError, NotImplementedError…)
            self.complete = False
            return
        for tree in trees:
            self.node(tree, depth)

    def node(self, node: Any, depth: int) -> None:
        kind = node.kind
        if kind == "command":
            self.command(node, depth)
        elif kind in ("commandsubstitution", "processsubstitution"):
            self.node(node.command, depth)
        elif kind == "redirect":
            self.redirect(node, depth)
        elif kind in ("parameter", "heredoc") and _HIDDEN.search(node.value):
            self.complete = False  # a substitution bashlex leaves unparsed inside
        for child in _children(node):
            self.node(child, depth)

    def command(self, node: Any, depth: int) -> None:
        words: list[str] = []
        for part in node.parts:
            if part.kind == "word":
                if not words and getattr(part, "parts", None):
                    self.complete = False  # the program is an expansion: unknown
                words.append(part.word)
            elif part.kind == "redirect":
                self.redirect(part, depth)
                continue
            for child in getattr(part, "parts", []) or []:
                self.node(child, depth)
        if words:
            self.commands.append(tuple(words))
            self.nested(words, depth)

    def nested(self, words: list[str], depth: int) -> None:
        """The script of ``sh -c SCRIPT`` and the words of ``eval``, parsed again."""
        program = words[0].rsplit("/", 1)[-1]
        if program in SHELLS and "-c" in words[1:-1]:
            self.line(words[words.index("-c", 1) + 1], depth + 1)
        elif program == "eval" and len(words) > 1:
            self.line(" ".join(words[1:]), depth + 1)

    def redirect(self, node: Any, depth: int) -> None:
        target = getattr(node, "output", None)
        if node.type in WRITES and target is not None and not isinstance(target, int):
            self.writes.append(target.word)
            if getattr(target, "parts", None):
                self.complete = False  # the file is an expansion: unknown
        heredoc = getattr(node, "heredoc", None)
        if heredoc is not None:
            self.node(heredoc, depth)


def _children(node: Any) -> list[Any]:
    if node.kind in ("command", "redirect", "commandsubstitution", "processsubstitution"):
        return []
    found: list[Any] = []
    for name in ("parts", "list"):
        found.extend(getattr(node, name, None) or [])
    found.extend(getattr(node, "redirects", None) or [])
    return found


def analyse(text: str) -> Analysis:
    walk = _Walk()
    walk.line(text, 0)
    return Analysis(tuple(walk.commands), tuple(walk.writes), walk.complete)


def unwrapped(words: tuple[str, ...]) -> list[tuple[str, ...]]:
    """``words`` and, while it starts with a program that runs the rest (``time``, ``env``,
    ``sudo``, ``xargs`` …), the rest without it, its options and ``NAME=value`` words, and a
    program named by its path also by its name: what ``deny`` and ``ask`` rules are also
    matched against (``sudo rm x`` and ``/bin/rm x`` are an ``rm``)."""
    found = [words]
    while words and words[0].rsplit("/", 1)[-1] in WRAPPERS:
        words = words[1:]
        while words and (words[0].startswith("-") or "=" in words[0]):
            words = words[1:]
        if words:
            found.append(words)
    named = [(w[0].rsplit("/", 1)[-1], *w[1:]) for w in found if "/" in w[0]]
    return found + named


def fallback_commands(text: str) -> tuple[tuple[str, ...], ...]:
    """The text cut at every shell operator, each piece split into words where it can be:
    only used to find more commands to refuse or ask about, never to allow one."""
    found = []
    for piece in _OPERATORS.split(text):
        try:
            words = shlex.split(piece)
        except ValueError:
            words = piece.split()
        if words:
            found.append(tuple(words))
    return tuple(found)
