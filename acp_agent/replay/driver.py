"""Carry out a fixture's client script against real server processes.

``drive`` prepares a scratch directory (workspace with ``files/``, state dir, config), starts
the server, executes the steps in order and returns everything the runs produced, raw: the
frames of each run, the journals of the state dir and the model-request log. Comparison and
normalization happen elsewhere (``outputs``).

The script model consumes its lines per process, so a ``restart`` would start the model over.
``ScriptLauncher`` hides that: before each run it writes the lines the earlier runs have not
consumed (counted from the request log, ``ACP_AGENT_SCRIPT_REQUESTS``) to a fresh script file,
so ``model.jsonl`` reads as one stream of answers across the whole fixture.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from acp_agent.replay.fixture import Fixture, Places, read_jsonl
from acp_agent.replay.server import ReplayError, RunRecord, Server
from acp_agent.replay.steps import Json, Kill, Respond, Restart, Send, Sleep, Wait

SERVER = [sys.executable, "-m", "acp_agent", "serve"]
REQUEST_LOG = "requests.log.jsonl"


class Launcher(Protocol):
    """How each server run of a fixture is started."""

    def argv(self, run: int, places: Places, config: Path) -> list[str]: ...

    def env(self, places: Places) -> dict[str, str]: ...


@dataclass
class ScriptLauncher:
    """The real server with the script model answering from the fixture's ``model.jsonl``."""

    lines: list[Json]

    def argv(self, run: int, places: Places, config: Path) -> list[str]:
        consumed = len(_request_log(places))
        script = places.tmp / f"model.run{run}.jsonl"
        remaining = [places.fill(line) for line in self.lines[consumed:]]
        script.write_text("".join(json.dumps(line) + "\n" for line in remaining), "utf-8")
        return [*SERVER, "--model", f"script:{script}", *_common_args(places, config)]

    def env(self, places: Places) -> dict[str, str]:
        return {"ACP_AGENT_SCRIPT_REQUESTS": str(places.tmp / REQUEST_LOG)}


def _common_args(places: Places, config: Path) -> list[str]:
    return ["--state-dir", str(places.state), "--config", str(config)]


@dataclass
class Outcome:
    """Everything a replay produced, not yet normalized."""

    places: Places
    runs: list[RunRecord] = field(default_factory=list)
    journals: dict[str, bytes] = field(default_factory=dict)
    """Session directory name -> the bytes of its ``journal.jsonl``."""
    requests: list[Json] = field(default_factory=list)


def prepare(fixture: Fixture, scratch: Path) -> tuple[Places, Path]:
    """Create the workspace, state dir and config under ``scratch``; return them."""
    scratch = scratch.resolve()
    places = Places(scratch / "workspace", scratch / "state", fixture.path, scratch)
    if fixture.files is not None:
        shutil.copytree(fixture.files, places.cwd)
    else:
        places.cwd.mkdir(parents=True)
    places.state.mkdir(parents=True)
    config = scratch / "config.toml"
    config.write_text(_config_text(places.fill_text(fixture.config or "")), encoding="utf-8")
    return places, config


UNSANDBOXED = '\n[sandbox]\nmode = "off"\n'
"""Appended to a fixture's config without a ``[sandbox]`` table: the default policy depends on
the machine (whether a sandbox starts there), the frames of a replay must not."""


def _config_text(text: str) -> str:
    import tomllib

    return text if "sandbox" in tomllib.loads(text) else text + UNSANDBOXED


def server_env(places: Places, fixture: Fixture, launcher: Launcher) -> dict[str, str]:
    """The inherited environment without any ``ACP_AGENT_*`` setting, plus the fixture's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_AGENT_")}
    env["ACP_AGENT_LOG_LEVEL"] = "warning"
    env.update(launcher.env(places))
    env.update({name: places.fill_text(value) for name, value in fixture.env.items()})
    return env


async def drive(
    fixture: Fixture,
    scratch: Path,
    launcher: Launcher | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> Outcome:
    launcher = launcher or ScriptLauncher(fixture.model_lines)
    places, config = prepare(fixture, scratch)
    env = {**server_env(places, fixture, launcher), **(extra_env or {})}
    outcome = Outcome(places)

    async def start() -> Server:
        argv = launcher.argv(len(outcome.runs) + 1, places, config)
        return await Server.start(argv, env, places.tmp)

    server: Server | None = await start()
    try:
        for step in fixture.steps:
            if isinstance(step, Restart):
                if server is not None:
                    outcome.runs.append(await server.close())
                server = await start()
            elif isinstance(step, Sleep):
                await asyncio.sleep(step.ms / 1000)
            elif server is None:
                raise ReplayError(f"{step} after a kill: add a restart step first")
            elif isinstance(step, Kill):
                outcome.runs.append(await server.kill())
                server = None
            else:
                await _talk(server, step, places)
        if server is not None:
            outcome.runs.append(await server.close())
    except BaseException:
        if server is not None and server.process.returncode is None:
            await server.kill()
        raise
    outcome.journals = _journals(places.state)
    outcome.requests = _request_log(places)
    return outcome


async def _talk(server: Server, step: Send | Wait | Respond, places: Places) -> None:
    match step:
        case Send(frame):
            await server.send(places.fill(frame))
        case Wait():
            await server.wait(step)
        case Respond(reply):
            await server.respond(places.fill(reply))


def _request_log(places: Places) -> list[Json]:
    path = places.tmp / REQUEST_LOG
    return [line for _, line in read_jsonl(path)] if path.is_file() else []


def _journals(state: Path) -> dict[str, bytes]:
    sessions = state / "sessions"
    if not sessions.is_dir():
        return {}
    return {
        directory.name: (directory / "journal.jsonl").read_bytes()
        for directory in sorted(sessions.iterdir())
        if (directory / "journal.jsonl").is_file()
    }
