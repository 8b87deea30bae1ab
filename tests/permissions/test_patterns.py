"""Parsing patterns (each bad one a clear error) and matching one simple thing against one."""

from __future__ import annotations

import pytest

from acp_agent.permissions.patterns import (
    PatternError,
    Target,
    command_matches,
    host_matches,
    mcp_matches,
    parse_pattern,
    path_matches,
)


@pytest.mark.parametrize(
    ("text", "target", "body"),
    [
        ("run_command(git *)", Target.RUN_COMMAND, "git *"),
        ("  run_command( npm test ) ", Target.RUN_COMMAND, "npm test"),
        ("run_command(*)", Target.RUN_COMMAND, "*"),
        ("edit(src/**)", Target.EDIT, "src/**"),
        ("read(.env)", Target.READ, ".env"),
        ("web_fetch(*.example.com)", Target.WEB_FETCH, "*.example.com"),
        ("mcp(github/create_issue)", Target.MCP, "github/create_issue"),
        ("mcp(github/*)", Target.MCP, "github/*"),
    ],
)
def test_patterns_parse(text: str, target: Target, body: str) -> None:
    pattern = parse_pattern(text)
    assert (pattern.target, pattern.body) == (target, body)
    assert parse_pattern(pattern.text) == pattern


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("git *", "is not a pattern: expected one of run_command(…)"),
        ("Bash(git *)", "is not a pattern"),
        ("shell(git *)", "unknown kind 'shell'"),
        ("run_command()", "nothing inside the parentheses"),
        ("run_command(git * push)", "`*` may only stand last"),
        ("run_command(echo 'x)", "cannot split the command into words"),
        ("edit(../outside/**)", "`..` is not allowed"),
        ("read(src/../../x)", "`..` is not allowed"),
        ("edit(src/[ab)", "not a valid glob"),
        ("web_fetch(https://example.com)", "expected a host name"),
        ("web_fetch(example.com:8080)", "expected a host name"),
        ("web_fetch(a.*.com)", "expected a host name"),
        ("mcp(github)", "expected SERVER/TOOL"),
        ("mcp(a/b/c)", "expected SERVER/TOOL"),
    ],
)
def test_bad_patterns_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(PatternError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_pattern(text)


@pytest.mark.parametrize(
    ("body", "words", "matches"),
    [
        ("git *", ("git",), True),  # a trailing * also matches no arguments
        ("git *", ("git", "push", "-f"), True),
        ("git *", ("gitk",), False),
        ("git status", ("git", "status"), True),
        ("git status", ("git", "status", "-s"), True),  # words that *start with* PREFIX's
        ("git status", ("git",), False),
        ("git push *", ("git", "push", "origin"), True),
        ("git push *", ("git", "pull"), False),
        ("echo 'a b' *", ("echo", "a b", "c"), True),
        ("echo 'a b' *", ("echo", "a", "b"), False),
        ("*", ("anything", "at", "all"), True),
    ],
)
def test_run_command_prefixes(body: str, words: tuple[str, ...], matches: bool) -> None:
    assert command_matches(body, words) is matches


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("src/**", "/w/src/a/b.py", True),
        ("src/**", "/w/src", True),
        ("src/**", "/w/srcx/a", False),
        ("src/*.py", "/w/src/a.py", True),
        ("src/*.py", "/w/src/sub/a.py", False),  # * stays in one segment
        ("**/*.py", "/w/a.py", True),  # ** spans none too
        ("**/*.py", "/w/x/y/z.py", True),
        ("**", "/elsewhere/a.py", False),  # a relative glob never leaves the cwd
        ("*.py", "/w/../w/a.py", True),  # normalised
        ("./.env", "/w/.env", True),
        ("secret/**", "/w/public/../secret/k", True),
        ("/etc/**", "/etc/passwd", True),
        ("src/?.py", "/w/src/ab.py", False),
        ("src/[ab].py", "/w/src/b.py", True),
        ("src/[!ab].py", "/w/src/b.py", False),
    ],
)
def test_path_globs_relative_to_the_cwd(glob: str, path: str, matches: bool) -> None:
    assert path_matches(glob, path, "/w") is matches


@pytest.mark.parametrize(
    ("body", "host", "matches"),
    [
        ("example.com", "EXAMPLE.com", True),
        ("example.com", "api.example.com", False),
        ("*.example.com", "api.example.com", True),
        ("*.example.com", "a.b.example.com", True),
        ("*.example.com", "example.com", False),
        ("*.example.com", "badexample.com", False),
    ],
)
def test_hosts(body: str, host: str, matches: bool) -> None:
    assert host_matches(body, host) is matches


@pytest.mark.parametrize(
    ("body", "call", "matches"),
    [
        ("github/create_issue", "github/create_issue", True),
        ("github/create_issue", "github/delete_repo", False),
        ("github/*", "github/delete_repo", True),
        ("github/*", "gitlab/x", False),
    ],
)
def test_mcp_tools(body: str, call: str, matches: bool) -> None:
    assert mcp_matches(body, call) is matches
