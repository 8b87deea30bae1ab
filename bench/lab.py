"""The scratch space of a run, the sizes of each case, and how each agent is started."""

from __future__ import annotations

import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.wire import WireClient

PROFILE_DIR: Path | None = None
"""Set by ``--profile``: our agent then runs under ``cProfile``, one ``.prof`` file per process."""
_profiles = itertools.count(1)

PROTOCOL = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False}}}


@dataclass(frozen=True)
class Sizes:
    """How much each case measures; ``QUICK`` keeps a whole run under a minute."""

    inject_rounds: int
    inject_warmup: int
    stream_chunks: int
    stream_rounds: int
    replay_small: int
    replay_large: int
    replay_rounds_small: int
    replay_rounds_large: int
    idle_sessions: int
    cancel_rounds: int
    startup_rounds: int
    prompt_batch: int
    prompt_rounds: int
    sync_chunks: int
    first_token_rounds: int
    search_files: int
    search_rounds: int


FULL = Sizes(
    inject_rounds=1000,
    inject_warmup=50,
    stream_chunks=20_000,
    stream_rounds=5,
    replay_small=10_000,
    replay_large=100_000,
    replay_rounds_small=5,
    replay_rounds_large=3,
    idle_sessions=1000,
    cancel_rounds=40,
    startup_rounds=10,
    prompt_batch=200,
    prompt_rounds=5,
    sync_chunks=10_000,
    first_token_rounds=10,
    search_files=100_000,
    search_rounds=5,
)

QUICK = Sizes(
    inject_rounds=150,
    inject_warmup=20,
    stream_chunks=4_000,
    stream_rounds=3,
    replay_small=2_000,
    replay_large=20_000,
    replay_rounds_small=3,
    replay_rounds_large=1,
    idle_sessions=200,
    cancel_rounds=10,
    startup_rounds=4,
    prompt_batch=50,
    prompt_rounds=3,
    sync_chunks=2_000,
    first_token_rounds=4,
    search_files=10_000,
    search_rounds=2,
)


@dataclass(frozen=True)
class Lab:
    """A directory for one run: state dirs, scripts, the session cwd, the children's stderr."""

    root: Path

    @property
    def cwd(self) -> Path:
        path = self.root / "workspace"
        path.mkdir(exist_ok=True)
        return path

    def state_dir(self, name: str) -> Path:
        path = self.root / "state" / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def script(self, name: str, lines: list[dict[str, Any]]) -> Path:
        path = self.root / f"{name}.script.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        return path

    def stderr(self, name: str) -> Path:
        return self.root / f"{name}.stderr.log"


def ours_command(
    script: Path | None = None, *extra: str, name: str = "agent", python: Path | None = None
) -> list[str]:
    model = ["--model", f"script:{script}"] if script is not None else []
    runner = ["-m"]
    if PROFILE_DIR is not None:
        runner = ["-m", "cProfile", "-o", str(PROFILE_DIR / f"{name}-{next(_profiles)}.prof"), "-m"]
    return [str(python or sys.executable), *runner, "acp_agent", *model, *extra]


async def start_ours(
    lab: Lab,
    name: str,
    script: Path | None = None,
    *extra: str,
    argv: list[str] | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    python: Path | None = None,
) -> WireClient:
    """Our agent with its own state dir under the lab (and its stderr in the lab); ``python``:
    the interpreter it runs on (this one's by default)."""
    return await WireClient.spawn(
        argv or ours_command(script, *extra, name=name, python=python),
        env={"ACP_AGENT_STATE_DIR": str(lab.state_dir(name)), **(env or {})},
        stderr=lab.stderr(name),
        cwd=cwd,
    )


OPENAI_MODEL = "openai:gpt-test"


async def start_openai(lab: Lab, name: str, base_url: str) -> WireClient:
    """Our agent on the real OpenAI-compatible provider, pointed at a loopback ``base_url``.

    A fresh ``--state-dir`` and an empty ``--config`` (so a user's own config file changes
    nothing); the key is a dummy, the loopback server does not check it.
    """
    empty = lab.root / "empty-config.toml"
    empty.touch()
    extra = ["--model", OPENAI_MODEL, "--state-dir", str(lab.state_dir(name))]
    return await start_ours(
        lab,
        name,
        None,
        *extra,
        "--config",
        str(empty),
        env={"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "k"},
    )


async def handshake(client: WireClient, cwd: Path, session_id: str | None = None) -> str:
    """``initialize`` then ``session/new`` (asking for ``session_id`` when given)."""
    await client.request("initialize", PROTOCOL)
    params: dict[str, Any] = {"cwd": str(cwd), "mcpServers": []}
    if session_id is not None:
        params["_meta"] = {"acp_agent": {"sessionId": session_id}}
    created = await client.request("session/new", params)
    return str(created["sessionId"])


def text_prompt(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
