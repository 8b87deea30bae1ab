"""One permission pattern: ``run_command(PREFIX)``, ``edit(GLOB)``, ``read(GLOB)``,
``web_fetch(HOST)``, ``mcp(SERVER/TOOL)``; parsed once (``parse_pattern``, ``PatternError``
naming what is wrong) and matched against one thing a call does.

- ``run_command(PREFIX)``: PREFIX is split into words as a shell would (quotes honoured). A
  command matches when its words start with PREFIX's words (docs/contract.md §11): both
  ``run_command(git status)`` and ``run_command(git status *)`` match ``git status`` and
  ``git status -s``; a last word ``*`` says "any arguments" out loud, none included
  (``run_command(git *)`` matches ``git`` too). ``*`` elsewhere is an error: the words are
  compared literally, never as globs.
- ``edit(GLOB)`` / ``read(GLOB)``: GLOB is relative to the session's cwd (or absolute); ``*``
  and ``?`` stay inside one path segment, ``**`` spans any number of them (none included), and
  ``[…]`` is a character class. A path is matched after it was resolved (``..`` and symlinks
  gone), so no spelling of a path reaches around a rule; ``..`` in a GLOB is an error.
- ``web_fetch(HOST)``: a host name, case-insensitive; ``*.example.com`` matches every host
  below example.com (not example.com itself).
- ``mcp(SERVER/TOOL)``: a configured MCP server's name and one of its tools; TOOL ``*`` means
  every tool of that server.
"""

from __future__ import annotations

import os
import re
import shlex
from enum import StrEnum

import msgspec

ANY_ARGS = "*"
_SHAPE = re.compile(r"^(?P<target>[a-z_]+)\((?P<body>.*)\)$", re.DOTALL)
_HOST = re.compile(
    r"^(\*\.)?([a-z0-9_]([a-z0-9_-]*[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$"
)
_NAME = re.compile(r"^[^/\s]+$")


class PatternError(ValueError):
    """A pattern that cannot be used; the message says why and quotes it."""


class Target(StrEnum):
    RUN_COMMAND = "run_command"
    EDIT = "edit"
    READ = "read"
    WEB_FETCH = "web_fetch"
    MCP = "mcp"


class Pattern(msgspec.Struct, frozen=True):
    """``text`` as written (``run_command(git *)``); ``body`` what is inside the parentheses."""

    target: Target
    body: str

    @property
    def text(self) -> str:
        return f"{self.target}({self.body})"


def parse_pattern(text: str) -> Pattern:
    """The pattern ``text`` spells; ``PatternError`` when it is not one."""
    shape = _SHAPE.match(text.strip())
    targets = ", ".join(f"{t}(…)" for t in Target)
    if shape is None:
        raise PatternError(f"{text!r} is not a pattern: expected one of {targets}")
    try:
        target = Target(shape["target"])
    except ValueError:
        raise PatternError(
            f"{text!r}: unknown kind {shape['target']!r}: expected one of {targets}"
        ) from None
    body = shape["body"].strip()
    if not body:
        raise PatternError(f"{text!r}: nothing inside the parentheses")
    _CHECKS[target](body, text)
    return Pattern(target, body)


def _check_command(body: str, text: str) -> None:
    words = prefix_words(body, text)
    if ANY_ARGS in words[:-1]:
        raise PatternError(f"{text!r}: `*` may only stand last (meaning any arguments)")


def prefix_words(body: str, text: str | None = None) -> list[str]:
    try:
        return shlex.split(body)
    except ValueError as exc:
        raise PatternError(f"{text or body!r}: cannot split the command into words: {exc}") from exc


def _check_glob(body: str, text: str) -> None:
    if ".." in body.split("/"):
        raise PatternError(f"{text!r}: `..` is not allowed in a path pattern")
    try:
        glob_regex(body)
    except re.error as exc:
        raise PatternError(f"{text!r}: not a valid glob: {exc}") from exc


def _check_host(body: str, text: str) -> None:
    if not _HOST.match(body.lower()):
        raise PatternError(
            f"{text!r}: expected a host name such as example.com or *.example.com "
            "(no scheme, port or path)"
        )


def _check_mcp(body: str, text: str) -> None:
    server, sep, tool = body.partition("/")
    if not sep or not _NAME.match(server) or not _NAME.match(tool):
        raise PatternError(f"{text!r}: expected SERVER/TOOL (TOOL may be `*`)")


_CHECKS = {
    Target.RUN_COMMAND: _check_command,
    Target.EDIT: _check_glob,
    Target.READ: _check_glob,
    Target.WEB_FETCH: _check_host,
    Target.MCP: _check_mcp,
}


def command_matches(body: str, words: tuple[str, ...]) -> bool:
    """Do a simple command's ``words`` match ``run_command(body)``?"""
    prefix = prefix_words(body)
    head = prefix[:-1] if prefix and prefix[-1] == ANY_ARGS else prefix
    return tuple(words[: len(head)]) == tuple(head)


def glob_regex(glob: str) -> re.Pattern[str]:
    """``glob`` (``/``-separated, relative or absolute) as a regex over a normalised path."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("(?:/.*)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[":
            end = glob.find("]", i + 2)
            if end < 0:
                raise re.error(f"unclosed [ at {i}")
            inner = glob[i + 1 : end]
            out.append("[^" + re.escape(inner[1:]) + "]" if inner[0] == "!" else f"[{inner}]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def path_matches(body: str, path: str, cwd: str) -> bool:
    """Does the resolved absolute ``path`` match the GLOB ``body`` (relative to ``cwd``)?"""
    glob = body.rstrip("/") or "/"
    if glob.startswith("/"):
        return glob_regex(glob).match(os.path.normpath(path)) is not None
    relative = os.path.relpath(os.path.normpath(path), os.path.normpath(cwd))
    if relative == ".." or relative.startswith("../"):
        return False
    return glob_regex(glob.removeprefix("./")).match(relative) is not None


def host_matches(body: str, host: str) -> bool:
    body, host = body.lower(), host.lower().rstrip(".")
    if body.startswith("*."):
        return host.endswith(body[1:])
    return host == body


def mcp_matches(body: str, server_tool: str) -> bool:
    server, _, tool = body.partition("/")
    their_server, _, their_tool = server_tool.partition("/")
    return server == their_server and tool in (ANY_ARGS, their_tool)
