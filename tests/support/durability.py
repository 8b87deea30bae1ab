"""Helpers of the durability suite (``tests/durability``): journals, model requests, golden files.

- ``logged_requests`` reads the ``ACP_AGENT_SCRIPT_REQUESTS`` log of the script model.
- ``history_before`` / ``encoded_history``: the model-visible history the journal holds at the
  moment a request was made (every entry up to that request's ``step/start``), encoded exactly as
  the script model logs it (``msgspec.json.encode`` of ``acp_agent.model.base`` messages). The
  check "model-visible = logged" compares the two.
- ``Normalizer`` replaces what changes from run to run (message ids, the session id, the
  workspace path) with stable placeholders, so replayed frames can be compared with a golden file.
- ``golden`` compares with a file under ``fixtures/golden/``, or (re)writes it when the
  environment says ``UPDATE_GOLDEN=1``.
- ``journal_check_cli`` runs ``python -m acp_agent journal check ID --state-dir DIR``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from acp import PROTOCOL_VERSION

from acp_agent.journal.events import Entry, SessionHeader, StepStart, TurnEnd, TurnStart
from acp_agent.journal.format import encode_header
from acp_agent.journal.invariant import check
from acp_agent.journal.reader import load_journal, parse_journal
from acp_agent.journal.recovery import interrupted_turn_repair
from acp_agent.turn.history import derive_messages
from tests.support.recording import RecordedAgent, recorded_agent
from tests.support.requests import read_requests

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = REPO_ROOT / "fixtures" / "golden"
UPDATE_GOLDEN_ENV = "UPDATE_GOLDEN"

JsonObject = dict[str, Any]
CLI = [sys.executable, "-m", "acp_agent"]


# --- an agent we kill ---------------------------------------------------------------------------


async def sigkill(agent: RecordedAgent) -> None:
    """SIGKILL the agent (if it still runs) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(agent.process.pid, signal.SIGKILL)
    await agent.process.wait()


@asynccontextmanager
async def killable_agent(*args: Any, **kwargs: Any) -> AsyncIterator[RecordedAgent]:
    """``recorded_agent(...)`` for a process the test SIGKILLs.

    When the test killed the agent, the SDK's connection may fail to close (its sender loop
    meets the dead pipe: ``ConnectionResetError``); that is the kill, not a finding, so it is
    ignored then. Pass ``validate=False, expect_exit_code=None`` and check the frames yourself
    (``check_frames_of_killed``): the kill may cut the last line.
    """
    manager = recorded_agent(*args, **kwargs)
    agent = await manager.__aenter__()
    try:
        yield agent
    except BaseException as exc:
        if not await manager.__aexit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        try:
            await manager.__aexit__(None, None, None)
        except (ConnectionResetError, BrokenPipeError):
            if agent.process.returncode != -signal.SIGKILL:
                raise


def check_frames_of_killed(agent: RecordedAgent) -> None:
    """Every complete line is a valid ACP frame; only the last line may be cut by the kill."""
    lines = agent.transcript.agent_lines
    cut = len(lines) if lines and not lines[-1].endswith(b"\n") else None
    problems = [
        problem
        for problem in agent.transcript.problems()
        if cut is None or not problem.startswith(f"agent stdout line {cut}:")
    ]
    assert problems == [], problems[:5]


# --- driving the agent -------------------------------------------------------------------------


def text(value: str) -> list[JsonObject]:
    """A prompt or content of one text block."""
    return [{"type": "text", "text": value}]


async def initialize(agent: RecordedAgent) -> None:
    """``initialize`` only (for a process that loads or resumes instead of creating)."""
    await agent.conn.initialize(
        protocol_version=PROTOCOL_VERSION, client_capabilities=agent.client.capabilities()
    )


async def inject(agent: RecordedAgent, sid: str, content: Any, **extra: Any) -> JsonObject:
    """``_acp_agent/inject``; returns ``{messageId, placement}``."""
    return await agent.conn.ext_method(
        "acp_agent/inject", {"sessionId": sid, "content": content, **extra}
    )


async def when_idle(agent: RecordedAgent, sid: str) -> JsonObject:
    """``_acp_agent/when_idle``: resolves once the session is quiescent and durable."""
    return await agent.conn.ext_method("acp_agent/when_idle", {"sessionId": sid})


async def until(predicate: Callable[[], bool], what: str, within: float = 10.0) -> None:
    """Poll ``predicate`` until it holds; fail after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {within}s waiting for {what}"
        await asyncio.sleep(0.005)


def agent_said(agent: RecordedAgent, sid: str, fragment: str) -> bool:
    """Whether an ``agent_message_chunk`` of the session contained ``fragment`` so far."""
    return any(
        update["sessionUpdate"] == "agent_message_chunk"
        and fragment in update["content"].get("text", "")
        for update in agent.transcript.session_updates(sid)
    )


def updates_before_response(agent: RecordedAgent, start: int, request_id: Any) -> list[JsonObject]:
    """``session/update`` params the agent wrote after frame ``start`` and before the response
    to ``request_id``."""
    out: list[JsonObject] = []
    for frame in agent.transcript.agent_frames[start:]:
        if "method" not in frame and frame.get("id") == request_id:
            return out
        if frame.get("method") == "session/update":
            out.append(frame["params"])
    raise AssertionError(f"no response to request id {request_id!r} in the transcript")


def last_request_id(agent: RecordedAgent, method: str) -> Any:
    """The id of the last ``method`` request the client sent."""
    ids = [m["id"] for m in agent.transcript.client_messages if m.get("method") == method]
    assert ids, f"the client sent no {method}"
    return ids[-1]


# --- the journal and the model requests -------------------------------------------------------


def journal_file(state_dir: Path, session_id: str) -> Path:
    return state_dir / "sessions" / session_id / "journal.jsonl"


def logged_requests(path: Path) -> list[JsonObject]:
    """Every model request the script model logged (``[]`` when none was made)."""
    return read_requests(path)


def history_before(entries: Sequence[Entry], turn: int, step: int) -> list[Entry]:
    """The entries up to and including the ``step/start`` of (``turn``, ``step``).

    A model request is made right after its ``step/start`` is durable, so these are the entries
    the journal held when the request was built.
    """
    for index, entry in enumerate(entries):
        event = entry.event
        if isinstance(event, StepStart) and (event.turn, event.step) == (turn, step):
            return list(entries[: index + 1])
    raise AssertionError(f"the journal has no step/start for turn {turn} step {step}")


def encoded_history(entries: Sequence[Entry]) -> list[JsonObject]:
    """``derive_messages(entries)`` as the JSON the script model logs for a request."""
    decoded: list[JsonObject] = json.loads(msgspec.json.encode(derive_messages(entries)))
    return decoded


def journal_history_for(state_dir: Path, session_id: str, request: JsonObject) -> list[JsonObject]:
    """What the journal says the model should have seen for the logged ``request``."""
    entries = load_journal(journal_file(state_dir, session_id)).entries
    return encoded_history(history_before(entries, request["turn"], request["step"]))


# --- damaged journals and what a load must make of them ---------------------------------------


def clone_session(state_dir: Path, source_id: str, new_id: str, body: bytes) -> Path:
    """A session ``new_id`` whose journal is ``source_id``'s header (re-sealed for the new id)
    followed by ``body``: the event lines, damaged as the test likes. Returns the journal path."""
    header = load_journal(journal_file(state_dir, source_id)).header
    directory = state_dir / "sessions" / new_id
    directory.mkdir(mode=0o700)
    path = directory / "journal.jsonl"
    clone = SessionHeader(id=new_id, created_at=header.created_at, cwd=header.cwd)
    path.write_bytes(encode_header(clone) + body)
    path.chmod(0o600)
    return path


def header_and_body(path: Path) -> tuple[bytes, bytes]:
    data = path.read_bytes()
    end = data.index(b"\n") + 1
    return data[:end], data[end:]


def side_files(directory: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(directory.glob("journal.tail.*"))]


def has_open_turn(entries: Sequence[Entry]) -> bool:
    for entry in reversed(entries):
        if isinstance(entry.event, TurnEnd):
            return False
        if isinstance(entry.event, TurnStart):
            return True
    return False


@dataclass(frozen=True)
class LoadOutcome:
    entries: list[Entry]
    """The journal's entries after the load."""
    kept: int
    """How many of them are the old valid prefix."""
    repaired: int
    """How many the load appended (the interrupted-turn repair)."""


def assert_loaded_from(before: bytes, prefix_len: int, path: Path) -> LoadOutcome:
    """``path`` was ``before`` (damaged or not) and has since been opened once by the agent.

    The longest valid prefix is ``before[:prefix_len]`` (the caller knows it independently of
    the project's reader). Afterwards the journal must be that prefix byte for byte, followed by
    exactly the interrupted-turn repair of its entries (nothing when it ended between turns);
    the removed bytes, if any, must sit in a ``journal.tail.*`` side file; seqs are contiguous
    and the invariant holds.
    """
    prefix, tail = before[:prefix_len], before[prefix_len:]
    after = path.read_bytes()
    assert after.startswith(prefix), "the load changed the valid prefix"
    old = parse_journal(prefix)
    assert old.tail is None, f"the expected prefix is itself damaged: {old.tail}"
    loaded = load_journal(path)
    assert loaded.tail is None, f"a damaged tail survived the load: {loaded.tail}"
    entries = loaded.entries
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1)), "seqs not contiguous"
    kept = len(old.entries)
    encode = msgspec.json.encode
    assert [encode(e.event) for e in entries[:kept]] == [encode(e.event) for e in old.entries]
    repair = interrupted_turn_repair(old.entries)
    assert [encode(e.event) for e in entries[kept:]] == [encode(e) for e in repair], (
        "the load appended something other than the interrupted-turn repair"
    )
    if has_open_turn(old.entries):
        last = entries[-1].event
        assert isinstance(last, TurnEnd) and last.reason.kind == "interrupted", last
    if tail:
        assert tail in side_files(path.parent), "the removed bytes are in no journal.tail.* file"
    violations = check(loaded.header, entries)
    assert violations == [], [str(v) for v in violations]
    return LoadOutcome(entries, kept, len(repair))


# --- normalizing frames -----------------------------------------------------------------------


@dataclass
class Normalizer:
    """Stable placeholders for run-dependent values in JSON (``<msg-1>``, ``<session>``, ...)."""

    session_id: str
    cwd: Path
    ids: dict[str, str] = field(default_factory=dict)

    def message_id(self, value: str) -> str:
        if value not in self.ids:
            self.ids[value] = f"<msg-{len(self.ids) + 1}>"
        return self.ids[value]

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self(item) for item in value]
        if isinstance(value, str):
            if key == "messageId":
                return self.message_id(value)
            if key == "sessionId" and value == self.session_id:
                return "<session>"
            return value.replace(str(self.cwd), "<cwd>")
        return value


# --- golden files -----------------------------------------------------------------------------


def golden(name: str, actual: Any) -> None:
    """Compare ``actual`` with ``fixtures/golden/<name>``; rewrite it when ``UPDATE_GOLDEN=1``."""
    path = GOLDEN_DIR / name
    text = json.dumps(actual, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if os.environ.get(UPDATE_GOLDEN_ENV) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.is_file(), f"no golden file {path}: run once with {UPDATE_GOLDEN_ENV}=1"
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert actual == expected, (
        f"differs from the golden file {path} (rerun with {UPDATE_GOLDEN_ENV}=1 if the change is"
        f" intended)\nactual:\n{text}"
    )


# --- the journal CLI --------------------------------------------------------------------------


def journal_check_cli(state_dir: Path, session_id: str) -> subprocess.CompletedProcess[str]:
    """``python -m acp_agent journal check ID --state-dir DIR`` (run, not asserted)."""
    return subprocess.run(
        [*CLI, "journal", "check", session_id, "--state-dir", str(state_dir)],
        capture_output=True,
        text=True,
        timeout=30,
    )
