"""Hooks over the ACP wire, with real hook processes from a config file (docs/contract.md §7).

Names the design-note criteria it proves: AC6 (admission before the turn, a block writes
nothing, earlier caller context stays) and AC5 (post_tool contexts after the whole batch).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.support import check_journal, read_call, serve_command, write_script
from tests.support.recording import RecordedAgent, RecordingClient, recorded_agent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess


def hook_script(path: Path, body: str) -> list[str]:
    path.write_text("import json, sys, time\nevent = json.load(sys.stdin)\n" + body)
    return [sys.executable, str(path)]


def config(path: Path, **kinds: list[dict[str, Any]]) -> Path:
    lines = []
    for kind, hooks in kinds.items():
        for hook in hooks:
            lines.append(f"[[hooks.{kind}]]")
            for key, value in hook.items():
                lines.append(f"{key} = {json.dumps(value)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def logged(path: Path) -> list[dict[str, Any]]:
    return read_requests(path)


async def inject(agent: RecordedAgent, sid: str, text: str) -> dict[str, Any]:
    return await agent.conn.ext_method("acp_agent/inject", {"sessionId": sid, "content": text})


ADMISSION = """
text = "".join(b.get("text", "") for b in event["prompt"])
if "forbidden" in text:
    print(json.dumps({"decision": "block", "reason": "no forbidden words"}))
else:
    print(json.dumps({"content": [{"type": "text", "text": text.upper()}],
                      "additionalContexts": [{"content": "branch: main"}]}))
"""


async def test_ac6_blocked_prompt_over_the_wire_writes_nothing_and_keeps_injected_context(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    hook = hook_script(tmp_path / "admit.py", ADMISSION)
    cfg = config(tmp_path / "config.toml", prompt_submit=[{"command": hook}])
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", {"text": "ok"})
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with recorded_agent(
        command=serve_command(script, "--config", str(cfg)), env=env
    ) as agent:
        sid = await agent.handshake(workspace)
        await inject(agent, sid, "caller context")
        blocked = await agent.prompt_text(sid, "a forbidden idea")
        journal_after_block = (state_dir / "sessions" / sid / "journal.jsonl").read_text()
        allowed = await agent.prompt_text(sid, "hello")
    assert blocked.stop_reason == "refusal"
    assert blocked.field_meta == {"acp_agent": {"blocked": True, "reason": "no forbidden words"}}
    assert journal_after_block.count('"type":"user/message"') == 1  # only the caller context
    assert "forbidden" not in journal_after_block
    assert allowed.stop_reason == "end_turn"
    journal = check_journal(state_dir, sid, workspace)
    assert journal.types()[:5] == [
        "user/message", "turn/start", "user/message", "user/message", "step/start",
    ]  # fmt: skip
    caller, prompt, context = journal.of_type("user/message")
    assert caller["source"] == {"kind": "client"}
    assert prompt["content"] == [{"type": "text", "text": "HELLO"}]  # replaced by the hook
    assert prompt["source"] == {"kind": "user"}
    assert context["content"] == [{"type": "text", "text": "branch: main"}]
    assert context["source"] == {"kind": "hook", "hook": "prompt_submit", "command": hook[0]}
    (request,) = logged(log)  # one model request: the blocked prompt never reached the model
    assert [m["source"]["kind"] for m in request["messages"]] == ["client", "user", "hook"]


async def test_tool_hooks_block_a_call_and_add_contexts_after_the_whole_batch(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "a.txt").write_text("A")
    (workspace / "b.txt").write_text("B")
    deny = hook_script(
        tmp_path / "deny.py",
        'if event["toolCall"]["arguments"]["path"] == "b.txt":\n'
        '    print(json.dumps({"decision": "block", "reason": "b is private"}))\n',
    )
    note = hook_script(
        tmp_path / "note.py",
        'print(json.dumps({"additionalContexts": [{"content": "saw " + event["toolCall"]["id"]}]}))\n',
    )
    cfg = config(
        tmp_path / "config.toml",
        pre_tool=[{"command": deny, "matcher": "read_file"}],
        post_tool=[{"command": note}],
    )
    script = write_script(
        tmp_path / "s.jsonl",
        {"toolCalls": [read_call("c1", "a.txt"), read_call("c2", "b.txt")]},
        {"text": "done"},
    )
    client = RecordingClient(advertise_fs=False)
    async with recorded_agent(
        client, serve_command(script, "--config", str(cfg)), env=agent_env
    ) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, "read")).stop_reason == "end_turn"
    journal = check_journal(state_dir, sid, workspace)
    step1 = journal.types()[4:11]
    assert step1 == [
        "tool/call", "tool/call", "tool/result", "tool/result", "step/end",
        "user/message", "step/start",
    ]  # fmt: skip
    results = journal.of_type("tool/result")
    assert results[0]["isError"] is False
    assert results[1]["isError"] is True
    assert "b is private" in results[1]["content"][0]["text"]
    contexts = journal.of_type("user/message")[1:]
    # the blocked call never ran, so no post_tool hook ran for it
    assert [c["content"][0]["text"] for c in contexts] == ["saw c1"]
    assert [c["source"]["kind"] for c in contexts] == ["tool"]
    assert [c["source"]["callId"] for c in contexts] == ["c1"]


async def test_a_hook_that_prints_to_stdout_or_hangs_cannot_corrupt_or_stall(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    noisy = hook_script(
        tmp_path / "noisy.py",
        'import os\nos.write(1, b"garbage that is not a frame\\n")\n'
        'os.write(2, b"and some stderr\\n")\n',
    )
    hang = hook_script(tmp_path / "hang.py", "time.sleep(60)\n")
    cfg = config(
        tmp_path / "config.toml",
        prompt_submit=[{"command": noisy}, {"command": hang, "timeout_ms": 500}],
    )
    script = write_script(tmp_path / "s.jsonl", {"text": "still fine"})
    async with recorded_agent(
        command=serve_command(script, "--config", str(cfg)), env=agent_env
    ) as agent:
        sid = await agent.handshake(workspace)
        started = time.monotonic()
        response = await agent.prompt_text(sid, "hi")
        elapsed = time.monotonic() - started
    # recorded_agent validated that every stdout line of the agent is a schema-valid frame
    assert response.stop_reason == "end_turn"  # the hang fails open after its timeout
    assert elapsed < 10
    journal = check_journal(state_dir, sid, workspace)
    contexts = journal.of_type("user/message")[1:]
    assert [c["content"][0]["text"] for c in contexts] == ["garbage that is not a frame"]
    assert "hook_failed" in agent.stderr.decode()
