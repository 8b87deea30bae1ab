"""``acp-agent replay run|record``: replay recorded fixtures, or record a new one.

    acp-agent replay run DIR... [--update]
    acp-agent replay record DIR --model SPEC [--config FILE] [--env NAME=VALUE]... [--files DIR]
                            [--steps FILE | -- STEP...]

``run`` takes fixture directories or directories of fixtures. It prints a unified diff of the
frames and journals of every fixture that does not match and exits 1; otherwise it prints one
summary line and exits 0. ``--update`` rewrites the expected files instead of comparing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp_agent.replay.runner import Result

    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


def add_replay_commands(commands: Subcommands) -> None:
    replay = commands.add_parser("replay", help="replay recorded fixtures, or record one")
    actions = replay.add_subparsers(dest="replay_command", metavar="ACTION", required=True)
    run = actions.add_parser(
        "run", help="replay fixtures and compare", description="replay fixtures and compare"
    )
    run.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="fixture(s) or parent")
    run.add_argument("--update", action="store_true", help="rewrite the expected files")
    add_record_command(actions)


def add_record_command(actions: Subcommands) -> None:
    summary = "drive a session against a provider and write a fixture (model stream included)"
    parser = actions.add_parser("record", help=summary, description=summary)
    parser.add_argument("dir", type=Path, metavar="DIR", help="the fixture directory to write")
    parser.add_argument("--model", required=True, metavar="SPEC", help="provider to record")
    parser.add_argument("--config", type=Path, metavar="FILE", help="config.toml (hooks)")
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="env.json entry"
    )
    parser.add_argument("--files", type=Path, metavar="DIR", help="workspace content (files/)")
    parser.add_argument("--steps", metavar="FILE", help="client steps, JSON lines (- = stdin)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing fixture")
    parser.add_argument("step", nargs="*", metavar="STEP", help="client steps, one JSON each")


def run_replay_command(args: argparse.Namespace) -> int:
    """Imports the replay machinery only now: building the parser must stay cheap, since the
    server's start-up builds it too."""
    if args.replay_command == "record":
        from acp_agent.replay.record import run_record_command

        return run_record_command(args)
    return _run(args.dirs, update=args.update)


def _run(dirs: list[Path], *, update: bool) -> int:
    from acp_agent.progress import progress
    from acp_agent.replay.fixture import FixtureError, find_fixtures
    from acp_agent.replay.runner import replay_sync

    try:
        fixtures = find_fixtures(dirs)
    except FixtureError as exc:
        print(f"acp-agent replay: {exc}", file=sys.stderr)
        return 2
    began = time.monotonic()
    results = []
    with progress("replay", len(fixtures), unit="fixture", long_from=2) as bar:
        for path in fixtures:
            bar.describe(path.name)
            results.append(replay_sync(path, update=update))
            bar.advance()
    failed = [result for result in results if not result.ok]
    for result in failed:
        print(f"=== {result.name}: FAILED ({result.seconds:.1f} s)\n{result.report()}")
    print(_summary(results, failed, update, time.monotonic() - began))
    return 1 if failed else 0


def _summary(results: list[Result], failed: list[Result], update: bool, seconds: float) -> str:
    verb = "updated" if update else "matched"
    done = len(results) - len(failed)
    line = f"replay: {done}/{len(results)} fixtures {verb} in {seconds:.1f} s"
    if failed:
        line += "; failed: " + ", ".join(result.name for result in failed)
    if any(not result.schemas_checked for result in results):
        line += " (schema checks skipped: jsonschema is not installed)"
    return line
