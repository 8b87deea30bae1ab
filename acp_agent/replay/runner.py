"""Run a fixture: drive it, check the schemas, compare with (or rewrite) the expected files."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from acp_agent.replay.checks import FrameCheck, SchemaChecks
from acp_agent.replay.driver import Launcher, Outcome, drive
from acp_agent.replay.fixture import Fixture, FixtureError
from acp_agent.replay.outputs import (
    Files,
    Mismatch,
    compare,
    read_expected,
    render,
    write_expected as write_files,
)
from acp_agent.replay.server import ReplayError


@dataclass
class Result:
    name: str
    seconds: float = 0.0
    error: str | None = None
    """The script could not be carried out (or the fixture could not be read)."""
    mismatches: list[Mismatch] = field(default_factory=list)
    schema_problems: list[str] = field(default_factory=list)
    schemas_checked: bool = True
    updated: bool = False
    files: Files = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.mismatches and not self.schema_problems

    def report(self) -> str:
        """A readable account of everything wrong (empty when ``ok``)."""
        parts: list[str] = []
        if self.error is not None:
            parts.append(f"replay failed: {self.error}")
        parts.extend(f"{m.name} differs from the expected file:\n{m.diff}" for m in self.mismatches)
        if self.schema_problems:
            listed = "\n".join(f"  {p}" for p in self.schema_problems[:20])
            parts.append(f"schema problems ({len(self.schema_problems)}):\n{listed}")
        return "\n".join(parts)


async def replay(
    path: Path,
    *,
    update: bool = False,
    frame_check: FrameCheck | None = None,
    launcher: Launcher | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> Result:
    """Replay the fixture at ``path`` once; with ``update`` rewrite its expected files."""
    result = Result(path.name)
    began = time.monotonic()
    try:
        fixture = Fixture.load(path)
        with tempfile.TemporaryDirectory(prefix=f"replay-{path.name}-") as scratch:
            outcome = await drive(fixture, Path(scratch), launcher, extra_env)
            _check(result, outcome, frame_check)
            result.files = render(outcome)
    except (ReplayError, FixtureError) as exc:
        result.error = str(exc)
        return result
    finally:
        result.seconds = time.monotonic() - began
    if update:
        write_files(fixture.path, result.files)
        result.updated = True
    else:
        try:
            result.mismatches = compare(read_expected(fixture.path), result.files)
        except FixtureError as exc:
            result.error = str(exc)
    return result


def _check(result: Result, outcome: Outcome, frame_check: FrameCheck | None) -> None:
    checks = SchemaChecks.load()
    if checks is None:
        result.schemas_checked = False
        return
    result.schema_problems = checks.problems(outcome, frame_check)


def replay_sync(
    path: Path, *, update: bool = False, frame_check: FrameCheck | None = None
) -> Result:
    """``replay`` from synchronous code (the CLI, pytest)."""
    return asyncio.run(replay(path, update=update, frame_check=frame_check))
