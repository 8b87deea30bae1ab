"""``acp-agent replay record``: write a new fixture by driving a session against any provider.

    acp-agent replay record DIR --model SPEC [--config FILE] [--env NAME=VALUE]... [--files DIR]
                            [--force] (--steps FILE | -- STEP...)

1. DIR receives the inputs: ``client.jsonl`` (the steps, from ``--steps FILE``, ``-`` for stdin,
   or one JSON step per argument after ``--``), ``config.toml``, ``env.json`` and ``files/``.
2. The steps run against the real server whose provider (``--model SPEC``) is wrapped in a
   ``RecordingProvider``; what it streamed becomes ``model.jsonl`` (script lines, one per
   request, in order across every run of the fixture).
3. The fixture is replayed through ``script:`` to write its expected files, then replayed again
   and compared: a recording that does not replay identically is reported (exit 1).

The live run's normalized outputs are compared with the replay's too; a difference is only a
note (a stream the script format cannot express exactly, such as thought deltas after text).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from acp_agent.replay.driver import SERVER, drive
from acp_agent.replay.fixture import (
    CLIENT,
    CONFIG,
    ENV,
    FILES,
    MODEL,
    REQUESTS,
    Fixture,
    FixtureError,
    Places,
)
from acp_agent.replay.outputs import Mismatch, compare, render
from acp_agent.replay.recording import PROVIDER_ENV
from acp_agent.replay.runner import Result, replay
from acp_agent.replay.server import ReplayError
from acp_agent.replay.steps import Json, StepError, parse_step

if TYPE_CHECKING:
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]

RECORD_SERVER = [SERVER[0], "-m", "acp_agent.replay.record_server"]
PYTHON_SPEC = "python:"


@dataclass
class RecordLauncher:
    """The recording server: the real one, its provider wrapped; one script file per run.

    ``python:MODULE:FACTORY`` goes to the server as ``ACP_AGENT_RECORD_PROVIDER`` with a script
    spec of no lines (never asked: the factory's provider answers instead).
    """

    spec: str

    def argv(self, run: int, places: Places, config: Path) -> list[str]:
        record_to = places.tmp / f"recorded.run{run}.jsonl"
        spec = self.spec
        if spec.startswith(PYTHON_SPEC):
            unused = places.tmp / "unused-script.jsonl"
            unused.touch()
            spec = f"script:{unused}"
        return [
            *RECORD_SERVER,
            "--record-to",
            str(record_to),
            "--model",
            spec,
            "--state-dir",
            str(places.state),
            "--config",
            str(config),
        ]

    def env(self, places: Places) -> dict[str, str]:
        if self.spec.startswith(PYTHON_SPEC):
            return {PROVIDER_ENV: self.spec.removeprefix(PYTHON_SPEC)}
        return {}


@dataclass
class Recording:
    model_lines: int = 0
    replays: list[Result] = field(default_factory=list)
    live_differs: list[Mismatch] = field(default_factory=list)
    """How the replay's frames and journals differ from the live run's (a note, not a failure:
    the model's requests are logged by the script model only)."""

    @property
    def ok(self) -> bool:
        return all(result.ok for result in self.replays)


def write_inputs(
    directory: Path,
    steps: Sequence[Json],
    config: Path | None = None,
    env: Mapping[str, str] | None = None,
    files: Path | None = None,
) -> None:
    for number, step in enumerate(steps, start=1):
        parse_step(step, f"step {number}")  # refuse a bad script before writing anything
    directory.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(step, ensure_ascii=False) + "\n" for step in steps)
    (directory / CLIENT).write_text(text, encoding="utf-8")
    if config is not None:
        shutil.copyfile(config, directory / CONFIG)
    if env:
        (directory / ENV).write_text(json.dumps(dict(env), indent=2) + "\n", encoding="utf-8")
    if files is not None:
        shutil.copytree(files, directory / FILES, dirs_exist_ok=True)


async def record(
    directory: Path, spec: str, extra_env: Mapping[str, str] | None = None
) -> Recording:
    """Record ``model.jsonl`` and the expected files of the fixture whose inputs are in
    ``directory``, driving its steps against ``spec``; then verify the replay."""
    fixture = Fixture.load(directory)
    recording = Recording()
    with tempfile.TemporaryDirectory(prefix=f"record-{directory.name}-") as scratch:
        live = await drive(fixture, Path(scratch), RecordLauncher(spec), extra_env)
        live_files = render(live)
        recording.model_lines = _save_model(Path(scratch), fixture.path / MODEL)
    first = await replay(fixture.path, update=True)
    recording.replays = [first, await replay(fixture.path)]
    if first.ok:
        replayed = {name: text for name, text in first.files.items() if name != REQUESTS}
        recording.live_differs = compare(live_files, replayed)
    return recording


def _save_model(scratch: Path, model: Path) -> int:
    """Concatenate the runs' recorded lines into ``model``; return how many there are."""
    runs = sorted(scratch.glob("recorded.run*.jsonl"), key=_run_number)
    lines = [line for run in runs for line in run.read_bytes().splitlines() if line.strip()]
    model.write_bytes(b"".join(line + b"\n" for line in lines))
    return len(lines)


def _run_number(path: Path) -> int:
    return int(path.name.removeprefix("recorded.run").removesuffix(".jsonl"))


# --- the command line -------------------------------------------------------------------------


def run_record_command(args: argparse.Namespace) -> int:
    try:
        steps = _steps(args.steps, args.step)
        env = dict(_pair(item) for item in args.env)
        if (args.dir / CLIENT).exists() and not args.force:
            raise FixtureError(f"{args.dir} already holds a fixture (--force to overwrite)")
        write_inputs(args.dir, steps, args.config, env, args.files)
        recording = asyncio.run(record(args.dir, _absolute(args.model)))
    except (FixtureError, StepError, ReplayError, OSError) as exc:
        print(f"acp-agent replay record: {exc}", file=sys.stderr)
        return 2 if not isinstance(exc, ReplayError) else 1
    for result in recording.replays:
        if not result.ok:
            print(f"=== {result.name}: the recording does not replay\n{result.report()}")
    for note in recording.live_differs:
        print(f"note: the replay's {note.name} differs from the live run's:\n{note.diff}")
    verdict = "replays identically" if recording.ok else "does NOT replay identically"
    print(f"recorded {args.dir}: {recording.model_lines} model answers; {verdict}")
    return 0 if recording.ok else 1


def _steps(path: str | None, inline: list[str]) -> list[Json]:
    if (path is None) == (not inline):
        raise FixtureError("give the client steps either with --steps FILE or after --")
    if path is not None:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        raw = [line for line in text.split("\n") if line.strip()]
    else:
        raw = inline
    try:
        return [json.loads(item) for item in raw]
    except ValueError as exc:
        raise FixtureError(f"a client step is not JSON: {exc}") from None


def _absolute(spec: str) -> str:
    """``script:PATH`` with PATH made absolute (the server runs in a scratch directory)."""
    scheme, sep, rest = spec.partition(":")
    return f"script:{Path(rest).resolve()}" if scheme == "script" and sep and rest else spec


def _pair(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise FixtureError(f"--env takes NAME=VALUE, got {item!r}")
    return name, value
