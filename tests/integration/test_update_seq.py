"""Every ``session/update`` carries its position, ``params.update._meta.acp_agent.seq``, on
stdio too (docs/contract.md §13): distinct, increasing, growing with the journal; a
``session/load`` replays the history with the numbers its live updates had, and a
``session/resume`` with ``_meta.acp_agent.afterSeq: N`` sends exactly the replayed updates
numbered past ``N``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.support import (
    initialize,
    is_update,
    line,
    new_session,
    prompt,
    read_call,
    request,
    serve_command,
    write_script,
)
from tests.support.acp_schema import JsonObject
from tests.support.recording import run_agent_raw

pytestmark = pytest.mark.subprocess

SESSION = "seq-1"
HISTORY = {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call"}
HISTORY |= {"tool_call_update"}
"""What a replay holds (not the commands a load's or resume's answer is followed by)."""


def seq(frame: JsonObject) -> int:
    value = frame["params"]["update"]["_meta"]["acp_agent"]["seq"]
    assert isinstance(value, int)
    return value


def updates_between(frames: list[JsonObject], first_id: int, last_id: int) -> list[JsonObject]:
    """The updates after the answer to ``first_id`` up to the answer to ``last_id``."""
    ids = [frame.get("id") if "method" not in frame else None for frame in frames]
    start, end = ids.index(first_id), ids.index(last_id)
    between = [f for f in frames[start + 1 : end] if is_update(f, SESSION)]
    return [f for f in between if f["params"]["update"]["sessionUpdate"] in HISTORY]


def test_seq_on_every_update_and_replay(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "notes.txt").write_text("hello\n", encoding="utf-8")
    script = write_script(
        tmp_path / "script.jsonl",
        {"thought": "look", "toolCalls": [read_call("c1", "notes.txt")]},
        {"chunks": ["It ", "says ", "hello."]},
    )
    command = serve_command(script)
    live_lines = [line(initialize(1)), line(new_session(2, workspace, SESSION))]
    live_lines.append(line(prompt(3, SESSION, "read it")))
    frames, stderr, code = run_agent_raw(live_lines, env=agent_env, command=command)
    assert code == 0, stderr.decode(errors="replace")
    live = [f for f in frames if is_update(f, SESSION)]
    numbers = [seq(f) for f in live]
    assert len(numbers) > 6
    assert numbers == sorted(set(numbers))  # distinct, in the order sent
    chunks = [f for f in live if f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"]
    assert [c["params"]["update"]["content"]["text"] for c in chunks] == ["It ", "says ", "hello."]

    load = {"sessionId": SESSION, "cwd": str(workspace), "mcpServers": []}
    tool_result = next(
        f
        for f in live
        if f["params"]["update"].get("status") == "completed"
        and f["params"]["update"]["sessionUpdate"] == "tool_call_update"
    )
    after = seq(tool_result)
    resume = {**load, "_meta": {"acp_agent": {"afterSeq": after}}}
    again = [
        line(initialize(1)),
        line(request(2, "session/load", load)),
        line(request(3, "session/resume", resume)),
        line(request(4, "session/resume", {**load, "_meta": {"acp_agent": {"afterSeq": "x"}}})),
    ]
    frames, stderr, code = run_agent_raw(again, env=agent_env, command=command)
    assert code == 0, stderr.decode(errors="replace")
    replayed = [f for f in frames[: [f.get("id") for f in frames].index(2)] if is_update(f)]
    replay_numbers = [seq(f) for f in replayed]
    assert replay_numbers == sorted(set(replay_numbers))
    # a replayed update of an entry has the number its live update had
    assert after in replay_numbers

    def key(frame: JsonObject) -> tuple[str, str, str]:
        update = frame["params"]["update"]
        return update["sessionUpdate"], update.get("toolCallId", ""), update.get("status", "")

    live_tools = {key(f): seq(f) for f in live if key(f)[1]}
    replayed_tools = {key(f): seq(f) for f in replayed if key(f)[1]}
    assert replayed_tools and all(live_tools[k] == n for k, n in replayed_tools.items())
    # the message streamed as chunks replays as one, numbered after those chunks
    message = next(
        f for f in replayed if f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert seq(message) > max(seq(c) for c in chunks)
    resumed = updates_between(frames, 2, 3)
    assert resumed, "the resume replays what came after afterSeq"
    assert all(seq(f) > after for f in resumed)
    expected = [f["params"]["update"] for f in replayed if seq(f) > after]
    assert [f["params"]["update"] for f in resumed] == expected
    text = "".join(
        f["params"]["update"]["content"]["text"]
        for f in resumed
        if f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert text == "It says hello."
    refused = next(f for f in frames if f.get("id") == 4)
    assert refused["error"]["code"] == -32602
