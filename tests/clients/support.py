"""Running third-party ACP clients (acpx, the TypeScript SDK) against the real agent.

The clients are installed by ``make install`` into ``.cache/acp-sdk`` (Makefile, one stamp);
a test fails, never skips, when one is missing. Every client run gets its own ``HOME`` (and XDG
dirs) inside the test's tmp dir, so no client state escapes it, and ``lingering(home)`` finds
any process still running with that ``HOME``: the client, its background queue owner, the agent
they spawned. ``check_stream`` takes a stream of JSON-RPC frames in both directions (what
``acpx --format json`` prints), tells agent frames from client frames, validates each agent
frame against the official ACP v1 schema and checks the ordering rules of ``acp-notes.md``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.integration.support import TURN_UPDATE_KINDS
from tests.support.acp_schema import REPO_ROOT, AcpSchema, JsonObject
from tests.support.process import agent_command

NPM_PREFIX = REPO_ROOT / ".cache" / "acp-sdk"
ACPX_CLI = NPM_PREFIX / "node_modules" / "acpx" / "dist" / "cli.js"
ACPX_VERSION = "0.19.1"  # keep in step with ACPX_VERSION in the Makefile
TS_SDK_VERSION = "2.4.0"  # ACP_SDK_VERSION in the Makefile
TAP = Path(__file__).with_name("acp_tap.py")


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not on PATH; the client tests need Node.js (npm)", pytrace=False)
    return found


def require(path: Path) -> Path:
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make install`", pytrace=False)
    return path


def client_env(home: Path, state_dir: Path, **extra: str) -> dict[str, str]:
    """``os.environ`` with HOME, the XDG dirs and the agent's state dir inside the test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "ACP_AGENT_"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        ACP_AGENT_STATE_DIR=str(state_dir),
        NPM_CONFIG_UPDATE_NOTIFIER="false",
        NO_COLOR="1",
    )
    env.update(extra)
    return env


def script_agent(script: Path, *, tap: Sequence[str] = ()) -> str:
    """The agent's command line as one string (acpx's ``--agent`` takes a string)."""
    argv = agent_command("--model", f"script:{script}")
    if tap:
        argv = [agent_command()[0], str(TAP), *tap, "--", *argv]
    assert not any(" " in part for part in argv), f"acpx splits --agent at spaces: {argv}"
    return " ".join(argv)


# --- processes ---------------------------------------------------------------------------------


def lingering(home: Path) -> list[tuple[int, str]]:
    """(pid, command line) of every process whose environment has ``HOME=home``."""
    marker = b"HOME=" + os.fsencode(home) + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker in environ or environ.startswith(marker[:-1] + b"\0"):
            found.append((int(entry.name), cmdline.replace(b"\0", b" ").decode(errors="replace")))
    return found


def wait_no_lingering(home: Path, within: float = 8.0) -> None:
    """Wait until no process runs with ``HOME=home``; kill the rest and fail if some do."""
    deadline = time.monotonic() + within
    while (alive := lingering(home)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive:
        for pid, _ in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shown = "\n".join(f"  {pid}: {cmd}" for pid, cmd in alive)
        raise AssertionError(f"processes still running {within}s after the client:\n{shown}")


# --- acpx ----------------------------------------------------------------------------------------


@dataclass
class Acpx:
    """acpx against one agent command, with a private HOME; ``run`` one acpx command."""

    agent: str
    home: Path
    cwd: Path
    env: dict[str, str]
    timeout: float = 30.0
    ttl: int = 1
    """acpx's ``--ttl``: seconds its queue owner (and the agent) lives on after a prompt."""
    runs: list[subprocess.CompletedProcess[str]] = field(default_factory=list)

    def argv(self, *args: str, json_format: bool = False) -> list[str]:
        fmt = ["--format", "json"] if json_format else []
        return [
            node(),
            str(require(ACPX_CLI)),
            "--agent",
            self.agent,
            "--ttl",
            str(self.ttl),
            *fmt,
            *args,
        ]

    def run(self, *args: str, json_format: bool = False) -> subprocess.CompletedProcess[str]:
        completed = subprocess.run(
            self.argv(*args, json_format=json_format),
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
        )
        self.runs.append(completed)
        assert completed.returncode == 0, describe(completed)
        return completed

    def start(self, *args: str, json_format: bool = False) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*args, json_format=json_format),
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def describe(completed: subprocess.CompletedProcess[str]) -> str:
    return (
        f"{completed.args[3:]} exited {completed.returncode}\n"
        f"stdout:\n{completed.stdout[-3000:]}\nstderr:\n{completed.stderr[-3000:]}"
    )


def json_lines(text: str) -> list[JsonObject]:
    """The JSON objects of ``--format json`` output, one per line; anything else fails."""
    frames = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            frame = json.loads(line)
        except ValueError:
            raise AssertionError(
                f"line {number} of acpx's JSON output is not JSON: {line!r}"
            ) from None
        assert isinstance(frame, dict), f"line {number} is not an object: {line!r}"
        frames.append(frame)
    return frames


# --- a frame stream in both directions -----------------------------------------------------------


@dataclass
class Frame:
    direction: str  # "agent" (agent -> client) or "client"
    frame: JsonObject
    answers: str | None = None  # for a response: the method of the request it answers


@dataclass
class Stream:
    frames: list[Frame]

    def agent(self) -> list[JsonObject]:
        return [f.frame for f in self.frames if f.direction == "agent"]

    def client_methods(self) -> list[str]:
        return [f.frame["method"] for f in self.frames if f.direction == "client" and _call(f)]

    def updates(self, session_id: str | None = None) -> list[JsonObject]:
        return [
            f.frame["params"]["update"]
            for f in self.frames
            if f.direction == "agent"
            and f.frame.get("method") == "session/update"
            and (session_id is None or f.frame["params"]["sessionId"] == session_id)
        ]

    def results(self, method: str) -> list[JsonObject]:
        return [
            f.frame["result"]
            for f in self.frames
            if f.direction == "agent" and f.answers == method and "result" in f.frame
        ]

    def agent_text(self, session_id: str | None = None) -> str:
        return "".join(
            u["content"]["text"]
            for u in self.updates(session_id)
            if u["sessionUpdate"] == "agent_message_chunk" and u["content"]["type"] == "text"
        )


def _call(item: Frame) -> bool:
    return "method" in item.frame


def check_stream(
    frames: Sequence[JsonObject], schema: AcpSchema, open_sessions: Iterable[str] = ()
) -> Stream:
    """Sort ``frames`` (both directions, wire order) by direction, validate, check ordering.

    A call is the agent's when its method is one the schema lists for an agent to send (or an
    ``_acp_agent/journal_error``); a response is the agent's when it answers an open client
    request. Every agent frame must pass ``schema``; every client request must get exactly one
    answer; a session's updates must not precede its ``session/new`` / ``session/resume``
    answer; a turn's updates and the agent's requests must fall between its ``session/prompt``
    and the answer to it. ``open_sessions`` were set up before ``frames`` start (acpx prints
    only the frames of its own command when it joins a running queue owner).
    """
    agent_calls = set(schema.methods.requests) | set(schema.methods.notifications)
    open_client: dict[Any, str] = {}
    open_agent: dict[Any, str] = {}
    out: list[Frame] = []
    for frame in frames:
        if "method" in frame:
            method = frame["method"]
            mine = method in agent_calls or method == "_acp_agent/journal_error"
            direction = "agent" if mine else "client"
            if "id" in frame:
                table = open_agent if direction == "agent" else open_client
                assert frame["id"] not in table, f"id {frame['id']!r} reused while open: {frame}"
                table[frame["id"]] = method
            out.append(Frame(direction, frame))
            continue
        request_id = frame.get("id")
        in_client, in_agent = request_id in open_client, request_id in open_agent
        assert in_client or in_agent, f"response to no open request: {frame}"
        if in_client and in_agent:  # both sides use small integer ids; tell them apart
            result = frame.get("result")
            in_agent = not (isinstance(result, dict) and "stopReason" in result)
            in_client = not in_agent
        if in_client:
            out.append(Frame("agent", frame, open_client.pop(request_id)))
        else:
            out.append(Frame("client", frame, open_agent.pop(request_id)))
    assert not open_client, f"client requests the agent never answered: {open_client}"
    stream = Stream(out)
    for item in out:
        if item.direction == "agent":
            schema.validate_agent_frame(item.frame, item.answers)
    _check_order(stream, set(open_sessions))
    return stream


def _check_order(stream: Stream, set_up: set[str]) -> None:
    # set_up: sessions whose new/resume/load answer went out
    loading: set[str] = set()  # sessions with a session/load in flight (replay allowed)
    turns: dict[Any, str] = {}  # open prompt id -> session
    pending_setup: dict[Any, tuple[str, str | None]] = {}
    for index, item in enumerate(stream.frames):
        frame = item.frame
        where = f"frame {index}: {json.dumps(frame)[:300]}"
        if item.direction == "client" and "method" in frame and "id" in frame:
            method, params = frame["method"], frame.get("params") or {}
            if method in ("session/new", "session/resume", "session/load"):
                pending_setup[frame["id"]] = (method, params.get("sessionId"))
                if method == "session/load":
                    loading.add(params["sessionId"])
            elif method == "session/prompt":
                turns[frame["id"]] = params["sessionId"]
        elif item.direction == "agent" and item.answers is not None:
            if frame["id"] in pending_setup:
                method, session_id = pending_setup.pop(frame["id"])
                if "result" in frame:
                    session_id = session_id or frame["result"]["sessionId"]
                    set_up.add(session_id)
                    loading.discard(session_id)
            elif item.answers == "session/prompt":
                turns.pop(frame["id"], None)
                if "result" in frame:
                    assert "stopReason" in frame["result"], where
        elif item.direction == "agent" and "method" in frame:
            session_id = (frame.get("params") or {}).get("sessionId")
            if frame["method"] == "session/update" and session_id not in loading:
                assert session_id in set_up, f"update before the session's setup answer: {where}"
                kind = frame["params"]["update"]["sessionUpdate"]
                if kind in TURN_UPDATE_KINDS:
                    assert session_id in turns.values(), f"turn update outside a turn: {where}"
            elif "id" in frame and session_id is not None:
                assert session_id in turns.values(), f"agent request outside a turn: {where}"


def read_recorded(directory: Path, who: str) -> dict[int, list[JsonObject]]:
    """What ``acp_tap.py --record`` wrote: pid -> the frames ``who`` sent, in order."""
    out: dict[int, list[JsonObject]] = {}
    for path in sorted(directory.glob(f"{who}-*.jsonl")):
        pid = int(path.stem.split("-", 1)[1])
        out[pid] = [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]
    return out


READ_THEN_WRITE: tuple[dict[str, Any], ...] = (
    {
        "toolCalls": [
            {"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}},
            {"id": "w1", "name": "write_file", "arguments": {"path": "out.txt", "content": "x"}},
        ]
    },
    {"chunks": ["The file says: ", "hello from disk"]},
)
"""Script lines: a batch reading ``notes.txt`` and writing ``out.txt``, then the answer."""
