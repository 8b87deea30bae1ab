"""A local ``run_command``'s output reaches the call's card while it runs (``process.py``'s
live output): the first output before the command ends, bounded to the tail from a line start,
throttled, and nothing after the result. The commands wait for a file the test creates, so the
order is forced, never timed. Expectations: docs/tools.md (``run_command``, live output)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from acp_agent.tools import process
from acp_agent.tools.permissions import CallInfo
from acp_agent.tools.run_command import RunCommand
from tests.integration.support import wait_until
from tests.tools.support import RecordingProgress, context

GATED = "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second"


async def test_the_first_output_is_shown_before_the_command_ends(workspace: Path) -> None:
    progress = RecordingProgress()
    ctx = replace(
        context(workspace), progress=progress, call=CallInfo("c1", "Run", "execute", [], {})
    )
    results = []

    async def run() -> None:
        results.append(await RunCommand().run({"command": GATED}, ctx))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await wait_until(lambda: bool(progress.outputs), "the first live output")
        assert progress.outputs[0] == ("c1", f"$ {GATED}\nfirst")
        assert results == [], "still running: the command waits for `go`"
        (workspace / "go").touch()
    (output,) = results
    assert output.content[0].text.endswith("first\nsecond\n[exit code 0]")  # type: ignore[union-attr]
    count = len(progress.outputs)
    await anyio.lowlevel.checkpoint()
    assert len(progress.outputs) == count, "nothing shown after the result"
    assert all(text.startswith(f"$ {GATED}\nfirst") for _, text in progress.outputs)


async def test_updates_are_throttled(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With an interval longer than the command, output after the first update is not shown
    live (the result has it)."""
    monkeypatch.setattr(process, "LIVE_INTERVAL_S", 60.0)
    progress = RecordingProgress()
    ctx = replace(
        context(workspace), progress=progress, call=CallInfo("c1", "Run", "execute", [], {})
    )
    async with anyio.create_task_group() as tg:
        args: dict[str, object] = {"command": GATED}
        tg.start_soon(RunCommand().run, args, ctx)
        await wait_until(lambda: bool(progress.outputs), "the first live output")
        (workspace / "go").touch()
    assert progress.outputs == [("c1", f"$ {GATED}\nfirst")]


async def test_the_live_tail_is_bounded_from_a_line_start(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "LIVE_BYTES", 20)
    progress = RecordingProgress()
    ctx = replace(
        context(workspace), progress=progress, call=CallInfo("c1", "Run", "execute", [], {})
    )
    command = "printf 'line one\\nline two\\nline three\\n'; while [ ! -e go ]; do sleep 0.02; done"
    async with anyio.create_task_group() as tg:
        args: dict[str, object] = {"command": command}
        tg.start_soon(RunCommand().run, args, ctx)
        await wait_until(lambda: bool(progress.outputs), "the first live output")
        (workspace / "go").touch()
    assert progress.outputs[0] == ("c1", f"$ {command}\nline two\nline three")
    # 15 bytes cut inside "line two": the tail starts at "line three"
    tail = process._Tail(1000)
    tail.data += b"line one\nline two\nline three\n"
    assert tail.text(15) == "line three\n"


async def test_without_progress_the_command_runs_as_before(workspace: Path) -> None:
    output = await RunCommand().run({"command": "echo hi"}, context(workspace))
    assert output.content[0].text == "sandbox: off\n$ echo hi\nhi\n[exit code 0]"  # type: ignore[union-attr]


class BrokenProgress(RecordingProgress):
    async def output(self, call_id: str, text: str) -> None:
        raise RuntimeError("the card is gone")


async def test_a_failing_display_does_not_fail_the_command(workspace: Path) -> None:
    ctx = replace(
        context(workspace), progress=BrokenProgress(), call=CallInfo("c1", "Run", "execute", [], {})
    )
    output = await RunCommand().run({"command": "echo one; echo two"}, ctx)
    assert not output.is_error and output.content[0].text.endswith("one\ntwo\n[exit code 0]")  # type: ignore[union-attr]
