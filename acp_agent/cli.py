"""``acp-agent``: serve ACP over stdio (the default), or inspect journals.

acp-agent [serve] [--model SPEC] [--state-dir DIR] [--config FILE] [--log-level L] [--log-file F]
acp-agent journal check <sessionId> [--state-dir DIR]
acp-agent --version
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from acp_agent import __version__
from acp_agent.options import add_server_options, options_from

COMMANDS = ("serve", "journal")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-agent", description="An ACP agent server over stdio."
    )
    parser.add_argument("--version", action="version", version=f"acp-agent {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="speak ACP over stdin/stdout (the default)")
    add_server_options(serve)
    journal = commands.add_parser("journal", help="inspect session journals")
    journal_commands = journal.add_subparsers(
        dest="journal_command", metavar="ACTION", required=True
    )
    check = journal_commands.add_parser(
        "check", help="check a session journal against the invariant"
    )
    check.add_argument("session_id")
    add_server_options(check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0] not in (*COMMANDS, "-h", "--help", "--version"):
        args_list.insert(0, "serve")
    args = build_parser().parse_args(args_list)
    options = options_from(args)
    if args.command == "journal":
        from acp_agent.journal_cli import run_journal_command

        return int(run_journal_command(args, options))
    from acp_agent.app import run_server

    return int(run_server(options))


if __name__ == "__main__":
    raise SystemExit(main())
