"""The agent child process: spawned with the test's environment, stdout pumped, stderr drained."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tests.support.transcript import Transcript, tail

READ_CHUNK = 64 * 1024
EnvOverrides = Mapping[str, str | None]
LineSink = Callable[[bytes, list[bytes], bool], None]  # (raw chunk, completed lines, at EOF)


def python_output(code: str) -> str:
    """The stripped stdout of ``code`` run in a fresh interpreter (this one); fails the test on a
    non-zero exit, with its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def agent_command(*args: str) -> list[str]:
    """The argv of the real agent, run with the current interpreter."""
    return [sys.executable, "-m", "acp_agent", *args]


def child_env(overrides: EnvOverrides | None = None) -> dict[str, str]:
    """``os.environ`` with ``overrides`` applied (a ``None`` value removes the variable)."""
    env = dict(os.environ)
    for name, value in (overrides or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


class AgentExitedError(AssertionError):
    """The agent closed its stdout while a frame was still expected."""


class AgentTimeoutError(AssertionError):
    """The agent did not produce what was awaited in time."""


class AgentProcess:
    """The agent child: its pipes pumped into a ``Transcript``; stderr drained into memory."""

    def __init__(self, process: asyncio.subprocess.Process, on_lines: LineSink) -> None:
        assert process.stdin and process.stdout and process.stderr
        self.process = process
        self.stdin: asyncio.StreamWriter = process.stdin
        self.transcript = Transcript()
        self.stderr = bytearray()
        self.killed = False
        self._pumps = [
            asyncio.create_task(self._pump_stdout(process.stdout, on_lines)),
            asyncio.create_task(self._drain_stderr(process.stderr)),
        ]

    @classmethod
    async def spawn(
        cls,
        command: Sequence[str],
        on_lines: LineSink,
        env: EnvOverrides | None,
        cwd: str | Path | None,
    ) -> AgentProcess:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=child_env(env),
            cwd=cwd,
        )
        return cls(process, on_lines)

    async def _pump_stdout(self, stdout: asyncio.StreamReader, on_lines: LineSink) -> None:
        while chunk := await stdout.read(READ_CHUNK):
            on_lines(chunk, self.transcript.feed_agent_output(chunk), False)
        tail = self.transcript.end_agent_output()
        on_lines(b"", [tail] if tail is not None else [], True)

    async def _drain_stderr(self, stderr: asyncio.StreamReader) -> None:
        while chunk := await stderr.read(READ_CHUNK):
            self.stderr += chunk

    async def write(self, data: bytes) -> None:
        self.stdin.write(data)
        await self.stdin.drain()

    async def close_stdin(self) -> None:
        if not self.stdin.is_closing():
            self.stdin.close()
        with contextlib.suppress(OSError):
            await self.stdin.wait_closed()

    async def stop(self, grace: float) -> int:
        """Close stdin, give the agent ``grace`` seconds to exit, then terminate / kill it."""
        await self.close_stdin()
        try:
            await asyncio.wait_for(self.process.wait(), grace)
        except TimeoutError:
            self.killed = True
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), 2.0)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        _, pending = await asyncio.wait(self._pumps, timeout=grace)
        for task in pending:  # a grandchild still holds the pipe open
            task.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        return self.process.returncode if self.process.returncode is not None else -1

    def exit_problem(self, expect_exit_code: int | None) -> str | None:
        if expect_exit_code is None:
            return None
        if self.killed:
            return "the agent did not exit after its stdin was closed; it was killed"
        code = self.process.returncode
        return None if code == expect_exit_code else f"agent exited {code}, not {expect_exit_code}"

    def check_after_run(self, validate: bool, expect_exit_code: int | None) -> None:
        problem = self.exit_problem(expect_exit_code)
        if problem is not None:
            raise AssertionError(f"{problem}\nagent stderr (tail):\n{tail(self.stderr)}")
        if validate:
            self.transcript.validate()
