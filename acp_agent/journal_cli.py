"""``acp-agent journal ...``: read-only journal tools for people and scripts."""

from __future__ import annotations

import argparse
import sys

from acp_agent.journal.invariant import check_file
from acp_agent.journal.paths import InvalidSessionId, session_dir, validate_session_id
from acp_agent.options import Options


def run_journal_command(args: argparse.Namespace, options: Options) -> int:
    if args.journal_command == "check":
        return _check(args.session_id, options)
    raise AssertionError(args.journal_command)  # argparse keeps us from here


def _check(session_id: str, options: Options) -> int:
    try:
        validate_session_id(session_id)
    except InvalidSessionId as exc:
        print(f"acp-agent: {exc}", file=sys.stderr)
        return 2
    directory = session_dir(options.state_dir, session_id)
    if not directory.is_dir():
        print(f"acp-agent: no session {session_id!r} under {options.state_dir}", file=sys.stderr)
        return 2
    violations = check_file(directory)
    for violation in violations:
        print(f"{session_id}: {violation}")
    if not violations:
        print(f"{session_id}: ok")
    return 1 if violations else 0
