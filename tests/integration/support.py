"""Shared pieces of the integration tests: scripts, session frames, and the journal checks.

Every scenario ends with ``check_journal``: the journal passes the project's invariant checker,
and its bytes match the public format of ``docs/contract.md`` §2 (header line, one envelope per line,
contiguous seqs, the documented ``data`` of each event type) with files ``0600`` in ``0700``
directories. The checks read the raw lines themselves, so they do not depend on the project's own
reader being right.
"""

from __future__ import annotations

import asyncio
import functools
import json
import stat
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_agent.journal.invariant import check_file
from tests.support.acp_schema import AcpSchema, JsonObject
from tests.support.recording import RecordedAgent, Transcript, agent_command, decode_agent_line

JOURNAL = "journal.jsonl"
JOURNAL_SCHEMA = "journal-line.schema.json"
HEADER_KEYS = {"type", "version", "id", "createdAt", "cwd"}
ENVELOPE_KEYS = {"seq", "time", "type", "data"}

# docs/contract.md §2: the data members every consumer may rely on, per event type.
DATA_KEYS: dict[str, set[str]] = {
    "user/message": {"id", "content", "source"},
    "turn/start": {"turn"},
    "turn/end": {"turn", "reason"},
    "step/start": {"turn", "step"},
    "step/end": {"turn", "step"},
    "steering/message": {"turn", "id", "content", "source"},
    "assistant/message": {"turn", "step", "id", "content"},
    "tool/call": {"turn", "step", "callId", "name", "arguments"},
    "tool/result": {"turn", "step", "callId", "content", "isError"},
    "agent/error": {"turn", "error"},
}


# --- scripts and agent command lines ----------------------------------------------------------


def write_script(path: Path, *lines: JsonObject) -> Path:
    """A script model file: one JSON line per model request."""
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[JsonObject]:
    """The objects of a JSON-lines file, split at newline bytes only.

    ``str.splitlines`` would also split at U+2028 and friends, which JSON strings may hold raw.
    """
    return [json.loads(text) for text in path.read_bytes().split(b"\n") if text.strip()]


def read_call(call_id: str, path: str) -> JsonObject:
    return {"id": call_id, "name": "read_file", "arguments": {"path": path}}


def serve_command(script: Path, *args: str) -> list[str]:
    """The real agent with the script model (state dir from the ``agent_env`` fixture)."""
    return agent_command("--model", f"script:{script}", *args)


# --- raw frames a client sends ----------------------------------------------------------------


def request(request_id: int, method: str, params: Any = None) -> JsonObject:
    frame: JsonObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        frame["params"] = params
    return frame


def initialize(request_id: int = 1) -> JsonObject:
    return request(
        request_id,
        "initialize",
        {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False}}},
    )


def new_session(request_id: int, cwd: Path, session_id: str | None = None) -> JsonObject:
    params: JsonObject = {"cwd": str(cwd), "mcpServers": []}
    if session_id is not None:
        params["_meta"] = {"acp_agent": {"sessionId": session_id}}
    return request(request_id, "session/new", params)


def prompt(request_id: int, session_id: str, text: str) -> JsonObject:
    return request(
        request_id,
        "session/prompt",
        {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
    )


def cancel(session_id: str) -> JsonObject:
    return {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}


def line(frame: JsonObject) -> bytes:
    return json.dumps(frame, separators=(",", ":")).encode() + b"\n"


# --- reading what the agent wrote -------------------------------------------------------------


# The updates a turn produces. Others (a session title, available commands, ...) may come and
# go as the server grows; the scenarios here are about these.
TURN_UPDATE_KINDS = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update"}
)


def is_update(frame: JsonObject, session_id: str | None = None) -> bool:
    return (
        frame.get("method") == "session/update"
        and "id" not in frame
        and (session_id is None or frame["params"]["sessionId"] == session_id)
    )


def is_turn_update(frame: JsonObject, session_id: str | None = None) -> bool:
    """A ``session/update`` of one of the ``TURN_UPDATE_KINDS``."""
    return (
        is_update(frame, session_id)
        and frame["params"]["update"]["sessionUpdate"] in TURN_UPDATE_KINDS
    )


def turn_updates_so_far(agent: RecordedAgent, session_id: str) -> list[JsonObject]:
    return [
        update
        for update in agent.transcript.session_updates(session_id)
        if update["sessionUpdate"] in TURN_UPDATE_KINDS
    ]


def response_index(frames: Sequence[JsonObject], request_id: Any) -> int:
    """Index of the one response to ``request_id`` among ``frames``."""
    found = [
        i
        for i, frame in enumerate(frames)
        if "method" not in frame and frame.get("id") == request_id
    ]
    assert len(found) == 1, f"expected one response to id {request_id!r}, found {len(found)}"
    return found[0]


def sent_request_id(transcript: Transcript, method: str, text: str | None = None) -> Any:
    """The id the client used for its ``method`` request (whose prompt text is ``text``)."""
    for message in transcript.client_messages:
        if message.get("method") != method or "id" not in message:
            continue
        if text is None or text in json.dumps(message.get("params")):
            return message["id"]
    raise AssertionError(f"the client sent no {method} request matching {text!r}")


def update_kinds(updates: Iterable[JsonObject]) -> list[str]:
    return [update["sessionUpdate"] for update in updates]


def tool_trace(updates: Iterable[JsonObject]) -> list[tuple[str, str, str]]:
    """(kind, toolCallId, status) of every tool update; a tool_call without status is pending."""
    trace = []
    for update in updates:
        kind = update["sessionUpdate"]
        if kind == "tool_call":
            trace.append((kind, update["toolCallId"], update.get("status", "pending")))
        elif kind == "tool_call_update":
            trace.append((kind, update["toolCallId"], update.get("status", "")))
    return trace


def tool_text(update: JsonObject) -> str:
    return "".join(
        item["content"]["text"]
        for item in update.get("content") or []
        if item.get("type") == "content" and item["content"].get("type") == "text"
    )


def answer_index(agent: RecordedAgent, text: str) -> int:
    """Where, among the agent's frames, the answer to the prompt ``text`` is."""
    request_id = sent_request_id(agent.transcript, "session/prompt", text)
    return response_index(agent.transcript.agent_frames, request_id)


def turn_updates(
    agent: RecordedAgent, session_id: str, text: str, after: int = -1
) -> list[JsonObject]:
    """The session's turn updates between frame ``after`` and the answer to the prompt ``text``."""
    frames = agent.transcript.agent_frames
    answer = answer_index(agent, text)
    return [
        frames[i]["params"]["update"]
        for i in range(after + 1, answer)
        if is_turn_update(frames[i], session_id)
    ]


def assert_nothing_after(agent: RecordedAgent, session_id: str, text: str) -> None:
    """No update of the session was written after the answer to the prompt ``text``."""
    frames = agent.transcript.agent_frames
    answer = answer_index(agent, text)
    late = [f for f in frames[answer + 1 :] if is_turn_update(f, session_id)]
    assert not late, f"updates written after the answer to {text!r}: {late}"


async def wait_until(predicate: Callable[[], bool], what: str, within: float = 10.0) -> None:
    """Poll ``predicate`` until it holds; fail after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(0.01)


# --- the journal ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Journal:
    header: JsonObject
    events: list[JsonObject]

    def types(self) -> list[str]:
        return [event["type"] for event in self.events]

    def of_type(self, type_: str) -> list[JsonObject]:
        return [event["data"] for event in self.events if event["type"] == type_]

    def turns(self) -> list[list[JsonObject]]:
        """The events of each turn, ``turn/start`` to ``turn/end`` inclusive."""
        turns: list[list[JsonObject]] = []
        current: list[JsonObject] | None = None
        for event in self.events:
            if event["type"] == "turn/start":
                current = []
                turns.append(current)
            if current is not None:
                current.append(event)
            if event["type"] == "turn/end":
                current = None
        return turns

    def end_reasons(self) -> list[str]:
        return [data["reason"]["kind"] for data in self.of_type("turn/end")]


def session_path(state_dir: Path, session_id: str) -> Path:
    return state_dir / "sessions" / session_id


@functools.cache
def journal_schema() -> Any:
    """Our generated ``schemas/journal-line.schema.json`` (``make gen``), as a validator."""
    from jsonschema import Draft202012Validator

    root = Path(__file__).resolve().parents[2]
    return Draft202012Validator(json.loads((root / "schemas" / JOURNAL_SCHEMA).read_text()))


def check_journal(state_dir: Path, session_id: str, cwd: Path | None = None) -> Journal:
    """Check a closed session's journal against docs/contract.md §2 and the invariant; return it."""
    directory = session_path(state_dir, session_id)
    path = directory / JOURNAL
    assert path.is_file(), f"no journal at {path}"
    violations = check_file(path)
    assert violations == [], "journal invariant violated:\n" + "\n".join(map(str, violations))
    check_modes(state_dir, directory)
    raw = path.read_bytes()
    assert raw.endswith(b"\n"), "the journal's last line has no newline"
    lines = [json.loads(text) for text in raw.split(b"\n")[:-1]]
    header, events = lines[0], lines[1:]
    for number, value in enumerate(lines, start=1):
        problem = next(iter(journal_schema().iter_errors(value)), None)
        assert problem is None, f"journal line {number} fails schemas/: {problem.message}"
    check_header(header, session_id, cwd)
    for expected_seq, event in enumerate(events, start=1):
        check_event(event, expected_seq, header["createdAt"])
    return Journal(header, events)


def check_modes(state_dir: Path, directory: Path) -> None:
    for folder in (state_dir / "sessions", directory):
        mode = stat.S_IMODE(folder.stat().st_mode)
        assert mode == 0o700, f"{folder} has mode {mode:o}, expected 700"
    for item in directory.iterdir():
        mode = stat.S_IMODE(item.stat().st_mode)
        if item.is_dir():
            assert mode == 0o700, f"{item} has mode {mode:o}, expected 700"
        else:
            assert mode == 0o600, f"{item} has mode {mode:o}, expected 600"


def check_header(header: JsonObject, session_id: str, cwd: Path | None) -> None:
    missing = HEADER_KEYS - header.keys()
    assert not missing, f"journal header lacks {sorted(missing)}: {header}"
    assert header["type"] == "session" and header["version"] == 1, header
    assert header["id"] == session_id, header
    assert _is_ms(header["createdAt"]), header
    assert isinstance(header["cwd"], str) and header["cwd"].startswith("/"), header
    if cwd is not None:
        assert header["cwd"] == str(cwd), header


def check_event(event: JsonObject, expected_seq: int, created_at: int) -> None:
    missing = ENVELOPE_KEYS - event.keys()
    assert not missing, f"journal line lacks {sorted(missing)}: {event}"
    assert event["seq"] == expected_seq, f"seq {event['seq']}, expected {expected_seq}"
    assert _is_ms(event["time"]) and event["time"] >= created_at, event
    assert isinstance(event["data"], dict), event
    keys = DATA_KEYS.get(event["type"])
    if keys is not None:
        lacking = keys - event["data"].keys()
        assert not lacking, f"{event['type']} data lacks {sorted(lacking)}: {event}"
    if event["type"] == "turn/end":
        assert isinstance(event["data"]["reason"].get("kind"), str), event
    if event["type"] == "agent/error":
        assert isinstance(event["data"]["error"].get("message"), str), event
    if event["type"] == "user/message":
        assert isinstance(event["data"]["source"].get("kind"), str), event


def _is_ms(value: Any) -> bool:
    """A plausible Unix time in milliseconds (2020 .. 2100)."""
    return isinstance(value, int) and 1_577_836_800_000 <= value <= 4_102_444_800_000


def validate_frames(transcript: Transcript, schema: AcpSchema) -> None:
    """Every agent line is one newline-terminated frame the ACP v1 schema accepts.

    Like ``Transcript.validate`` but without its rule that each response answers a request the
    client sent: an invalid message with a usable id (say, both ``result`` and ``error``) is
    answered with that id although it was no request.
    """
    methods = transcript.request_methods()
    for number, raw in enumerate(transcript.agent_lines, start=1):
        assert raw.endswith(b"\n"), f"agent line {number} has no newline: {raw[:200]!r}"
        frame = decode_agent_line(raw)
        request_id = frame.get("id")
        method = None
        if "method" not in frame and isinstance(request_id, int | str):
            method = methods.get(request_id)
        schema.validate_agent_frame(frame, method)
