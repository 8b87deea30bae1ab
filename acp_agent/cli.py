"""``acp-agent``: serve ACP over stdio (the default), or inspect journals.

acp-agent [serve] [--model SPEC] [--state-dir DIR] [--config FILE] [--log-level L] [--log-file F]
acp-agent serve --listen ws://HOST:PORT|http://HOST:PORT [--token-file F] [--allow-origin O]...
acp-agent journal list [--json] [--state-dir DIR]
acp-agent journal show <sessionId> [--json]
acp-agent journal query <sessionId> [--type T]... [--source-kind K] [--turn N] [--json]
acp-agent journal check [<sessionId>]
acp-agent journal export <sessionId> [--format html|md] [-o FILE]
acp-agent journal fork <sessionId> [--at SEQ]
acp-agent doctor [--json] [--offline] [--timeout S] [--model SPEC] [--state-dir DIR] [--config F]
acp-agent replay run DIR... [--update]
acp-agent replay record DIR --model SPEC [--config FILE] [--steps FILE | -- STEP...]
acp-agent --version
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from acp_agent import __version__
from acp_agent.options import add_server_options, options_from
from acp_agent.remote.flags import add_listen_options

SUBCOMMANDS = ("serve", "journal", "doctor", "replay")

if TYPE_CHECKING:
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp-agent", description="An ACP agent server over stdio (or the network: --listen)."
    )
    parser.add_argument("--version", action="version", version=f"acp-agent {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve", help="speak ACP over stdin/stdout (the default), or over the network (--listen)"
    )
    add_server_options(serve)
    add_listen_options(serve)
    _add_journal_commands(commands)
    _add_doctor_command(commands)
    from acp_agent.replay.cli import add_replay_commands  # here: ``serve`` parses without it

    add_replay_commands(commands)
    return parser


def _add_journal_commands(commands: Subcommands) -> None:
    journal = commands.add_parser("journal", help="inspect, query and fork session journals")
    actions = journal.add_subparsers(dest="journal_command", metavar="ACTION", required=True)
    listing = _journal_action(actions, "list", "one line per session, newest first")
    _json_flag(listing, "one session/list SessionInfo object per line")
    show = _journal_action(actions, "show", "a session's header, then every event", session=True)
    _json_flag(show, "the journal's own lines, as written")
    query = _journal_action(
        actions, "query", "the events that match every filter given", session=True
    )
    query.add_argument(
        "--type",
        action="append",
        metavar="TYPE",
        help="event type, e.g. user/message; repeat for any of several",
    )
    query.add_argument(
        "--source-kind", metavar="KIND", help="source.kind of a user/steering message, e.g. client"
    )
    query.add_argument(
        "--turn", type=int, metavar="N", help="the events of turn N, turn/start to turn/end"
    )
    _json_flag(query, "the matching journal lines, as written")
    check = _journal_action(
        actions, "check", "check a session journal (default: every session) against the invariant"
    )
    check.add_argument(
        "session_id", metavar="SESSION_ID", nargs="?", help="the session (default: every one)"
    )
    export = _journal_action(
        actions,
        "export",
        "write a session as one self-contained HTML page (or Markdown) to -o FILE or stdout",
        session=True,
    )
    export.add_argument(
        "--format", choices=("html", "md"), default="html", help="html (the default) or md"
    )
    export.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="the file to write (default: stdout)"
    )
    fork = _journal_action(
        actions,
        "fork",
        "create a session holding another's history up to a stable boundary; print its id",
        session=True,
    )
    compact = _journal_action(
        actions,
        "compact",
        "summarize a session's older history with its model (--model), as /compact does",
        session=True,
    )
    compact.add_argument("--instructions", metavar="TEXT", help="what the summary should keep")
    fork.add_argument(
        "--at",
        type=int,
        metavar="SEQ",
        help="the last seq to copy: 0, a turn/end or an event between turns (default: the last)",
    )


def _add_doctor_command(commands: Subcommands) -> None:
    summary = (
        "check the installation: config, model and provider, state dir, every journal; "
        "exit 1 when something needs fixing"
    )
    doctor = commands.add_parser("doctor", help=summary, description=summary)
    add_server_options(doctor)
    from acp_agent.doctor.options import add_doctor_options

    add_doctor_options(doctor)
    doctor.set_defaults(log_level=os.environ.get("ACP_AGENT_LOG_LEVEL", "warning"))


def _journal_action(
    actions: Subcommands, name: str, summary: str, *, session: bool = False
) -> argparse.ArgumentParser:
    parser = actions.add_parser(name, help=summary, description=summary)
    if session:
        parser.add_argument("session_id", metavar="SESSION_ID")
    add_server_options(parser)
    parser.set_defaults(log_level=os.environ.get("ACP_AGENT_LOG_LEVEL", "warning"))
    return parser


def _json_flag(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", action="store_true", help=f"print JSON lines: {what}")


class _Formatter(argparse.HelpFormatter):
    """argparse's own, with the width found as ``shutil.get_terminal_size`` finds it (``COLUMNS``,
    else the terminal of stdout, else 80) without importing ``shutil`` (and the compression
    modules it imports): argparse makes a formatter for every ``add_argument``."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position, width or _columns())


def _columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def serve_parser() -> argparse.ArgumentParser:
    """``serve``'s own parser, the same as its subparser in ``build_parser`` (whose ``prog`` is
    ``acp-agent serve`` too): the server parses with it alone, since building all the others
    costs start-up time (argparse's help formatter imports ``shutil`` for the terminal's width)."""
    parser = argparse.ArgumentParser(prog="acp-agent serve", formatter_class=_Formatter)
    add_server_options(parser)
    add_listen_options(parser)
    parser.set_defaults(command="serve")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0] not in (*SUBCOMMANDS, "-h", "--help", "--version"):
        args_list.insert(0, "serve")
    if args_list[0] == "serve":
        args = serve_parser().parse_args(args_list[1:])
    else:
        args = build_parser().parse_args(args_list)
    if args.command == "replay":
        from acp_agent.replay.cli import run_replay_command

        return run_replay_command(args)
    options = options_from(args)
    if args.command == "journal":
        from acp_agent.journal_cli import run_journal_command

        return int(run_journal_command(args, options))
    if args.command == "doctor":
        from acp_agent.doctor.run import run_doctor

        return run_doctor(args, options)
    if args.listen:
        from acp_agent.remote.run import run_listen

        return run_listen(options, args)
    from acp_agent.launch import run_server

    return int(run_server(options))


if __name__ == "__main__":
    raise SystemExit(main())
