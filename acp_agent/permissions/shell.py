"""A command line as its simple commands, with a real shell parser (tree-sitter's bash grammar,
imported lazily at the first command decision).

Theory of operation
-------------------
``analyse`` walks the syntax tree and collects every simple command (its words after quote
removal, leading ``NAME=value`` assignments left out) wherever it stands: in a list (``;``,
``&&``, ``||``, ``&``), a pipeline, a subshell or ``{ …; }`` group, ``if``/``for``/``while``/
``case`` bodies, a function body, ``$(…)``, backticks, ``<(…)``, ``${X:-$(…)}``, a
here-document, an assignment's value, and, parsed again, the script of ``sh -c``/``bash -c``
and the words of ``eval``. A ``deny`` or ``ask`` rule also sees each command without the
wrappers that run the rest of it (``unwrapped``: ``sudo``, ``env``, ``time``, ``xargs`` …); an
``allow`` rule sees the words as written. It also collects the files written by redirections
(``>``, ``>>``, ``&>``, ``&>>``, ``>|``, ``<>``, ``>&``), which ``rules`` weighs against the roots.

A word is its value when the shell's value is known before running (plain, ``'…'``, ``"…"``
without expansions, and concatenations of those); otherwise it is compared as written
(``$HOME``). ``complete`` is ``False`` when the parser could not see everything the shell
would run: the line has a syntax error (an unbalanced quote), or a command's program or a
redirection's file is itself an expansion (``$CMD x``, ``> $OUT``). An incomplete line never
matches an ``allow`` rule; for ``deny`` and ``ask``, ``fallback_commands`` then also splits the
text at the shell's operators (crudely, but only ever to find *more* to refuse).

Rejected: matching the command text with a regex (``a && rm x`` would hide ``rm``); ``shlex``
alone (it knows quoting, not ``;``, ``|``, ``$(…)`` or redirections); bashlex (pure Python, but
it builds its LALR tables at every import: about a second before the first command, and it
refuses ``case`` and ``time``).
"""

from __future__ import annotations

import functools
import re
import shlex
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from tree_sitter import Language, Node

WRITES = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
WRAPPERS = frozenset(
    {"time", "command", "builtin", "exec", "nohup", "nice", "env", "sudo", "xargs"}
)
_OPERATORS = re.compile(r"\|\||&&|[;|&\n()`]|\$\(")
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
MAX_DEPTH = 4


class Analysis(msgspec.Struct, frozen=True):
    commands: tuple[tuple[str, ...], ...]
    writes: tuple[str, ...]
    complete: bool


@functools.cache
def _language() -> Language:
    import tree_sitter_bash
    from tree_sitter import Language

    return Language(tree_sitter_bash.language())


class _Walk:
    def __init__(self) -> None:
        self.commands: list[tuple[str, ...]] = []
        self.writes: list[str] = []
        self.complete = True

    def line(self, text: str, depth: int) -> None:
        from tree_sitter import Parser

        if depth > MAX_DEPTH:
            self.complete = False
            return
        root = Parser(_language()).parse(text.encode("utf-8", "surrogateescape")).root_node
        if root.has_error:
            self.complete = False
        self.node(root, depth)

    def node(self, node: Node, depth: int) -> None:
        if node.type == "command":
            self.command(node, depth)
        elif node.type == "file_redirect":
            self.redirect(node)
        for child in node.children:
            self.node(child, depth)

    def command(self, node: Node, depth: int) -> None:
        name = node.child_by_field_name("name")
        if name is None:
            return
        program = _value(name.children[0]) if name.children else None
        if program is None:
            self.complete = False  # the program is an expansion: unknown
        words = [program or _text(name), *map(_word, node.children_by_field_name("argument"))]
        self.commands.append(tuple(words))
        self.nested(words, depth)

    def nested(self, words: list[str], depth: int) -> None:
        """The script of ``sh -c SCRIPT`` and the words of ``eval``, parsed again."""
        program = words[0].rsplit("/", 1)[-1]
        if program in SHELLS and "-c" in words[1:-1]:
            self.line(words[words.index("-c", 1) + 1], depth + 1)
        elif program == "eval" and len(words) > 1:
            self.line(" ".join(words[1:]), depth + 1)

    def redirect(self, node: Node) -> None:
        operator = next((c.type for c in node.children if c.type in WRITES), None)
        target = node.child_by_field_name("destination")
        if operator is None or target is None or target.type == "number":
            return
        written = _value(target)
        if written is None:
            self.complete = False  # the file is an expansion: unknown
        self.writes.append(written or _text(target))


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


def _word(node: Node) -> str:
    """An argument's value when it is known, else as written."""
    value = _value(node)
    return _text(node) if value is None else value


def _value(node: Node) -> str | None:
    """What the shell makes of a word, when that is known without running anything."""
    match node.type:
        case "word" | "number":
            return _ESCAPE.sub(r"\1", _text(node))
        case "raw_string":
            return _text(node)[1:-1]
        case "string":
            parts = [c for c in node.children if c.type != '"']
            if all(c.type == "string_content" for c in parts):
                return "".join(_text(c) for c in parts)
            return None
        case "concatenation":
            values = [_value(c) for c in node.children]
            return None if None in values else "".join(v for v in values if v is not None)
    return None


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
