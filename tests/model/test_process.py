"""``acp-agent --model openai:<name>`` as a real process against a loopback HTTP server.

End to end: ACP frames on stdout (text, thoughts, tool calls, ``usage_update``), the journal,
and the API key in none of stdout, the journal, the log file or stderr. Then the model as a
config option, what a missing key tells the client, and that ``initialize`` answers without
importing the HTTP stack.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.model.window import DEFAULT_CONTEXT_WINDOW
from tests.integration.support import check_journal
from tests.model.agent_params import NO_KEYS, init, new, prompt
from tests.model.loopback import Reply, loopback
from tests.support.process import EnvOverrides
from tests.support.recording import RawAgent, agent_command

pytestmark = pytest.mark.subprocess

KEY = "test-key-e2e-8d1f"
SID = "e2e"


async def test_a_turn_through_the_real_process(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    log_file = tmp_path / "agent.log"
    async with loopback(Reply("tools-1.sse"), Reply("reasoning.sse")) as server:
        env: EnvOverrides = {
            **agent_env,
            **NO_KEYS,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": KEY,
            "ACP_AGENT_LOG_FILE": str(log_file),
            "ACP_AGENT_LOG_LEVEL": "debug",
        }
        async with RawAgent(agent_command("--model", "openai:gpt-test"), env=env) as agent:
            assert (await agent.request("initialize", init()))["result"].get(
                "authMethods", []
            ) == []
            await agent.request("session/new", new(workspace, SID))
            inject = {"sessionId": SID, "content": "Answer tersely."}
            await agent.request("_acp_agent/inject", inject)
            answer = await agent.request("session/prompt", prompt(SID, "Read a.txt and b.txt"))
            await agent.close_stdin()
            assert await agent.wait_exit() == 0
        assert answer["result"] == {
            "stopReason": "end_turn",
            "usage": {  # the unstable PromptResponse.usage: the turn's one reporting request
                "totalTokens": 42,
                "inputTokens": 12,
                "outputTokens": 30,
                "thoughtTokens": 22,
                "cachedReadTokens": 0,
            },
        }
        stdout = b"".join(agent.transcript.agent_lines)
        updates = agent.transcript.session_updates(SID)
        bodies = [r.json() for r in server.requests]

    kinds = [u["sessionUpdate"] for u in updates]
    for kind in ("tool_call", "tool_call_update", "agent_thought_chunk", "agent_message_chunk"):
        assert kind in kinds
    assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk")
    text = "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert text == "6\N{MULTIPLICATION SIGN}7 = 42."
    assert {u["toolCallId"] for u in updates if u["sessionUpdate"] == "tool_call"} == {
        "call_a",
        "call_b",
    }
    usage = [u for u in updates if u["sessionUpdate"] == "usage_update"]
    assert [(u["used"], u["size"]) for u in usage] == [(12 + 30 - 22, DEFAULT_CONTEXT_WINDOW)]
    assert usage[0]["_meta"]["acp_agent"] == {
        "inputTokens": 12,
        "outputTokens": 30,
        "reasoningTokens": 22,
        "cachedTokens": 0,
    }

    first, second = bodies
    system, *history = first["messages"]
    assert system["role"] == "system" and f"Working directory: {workspace}\n" in system["content"]
    assert [m["content"] for m in history] == ["Answer tersely.", "Read a.txt and b.txt"]
    assert second["messages"][0] == system  # the same turn: the same system message
    roles = [m["role"] for m in second["messages"]]
    assert roles == ["system", "user", "user", "assistant", "tool", "tool"]

    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["completed"]
    assert [c["callId"] for c in journal.of_type("tool/call")] == ["call_a", "call_b"]
    parts = [p["type"] for m in journal.of_type("assistant/message") for p in m["content"]]
    assert parts == ["tool-call", "tool-call", "thought", "text"]

    logs = log_file.read_bytes()
    assert b"model_request_sent" in logs  # the log file was written, at debug level
    journal_bytes = (state_dir / "sessions" / SID / "journal.jsonl").read_bytes()
    for where, data in {
        "stdout": stdout,
        "journal": journal_bytes,
        "log file": logs,
        "stderr": agent.stderr,
    }.items():
        assert KEY.encode() not in data, f"the API key leaked into the {where}"
    for received in server.requests:
        assert received.raw.count(KEY.encode()) == 1
        assert received.headers["authorization"] == f"Bearer {KEY}"


async def test_the_model_is_a_config_option_switched_per_session(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    async with loopback(Reply("text.sse")) as server:
        config = tmp_path / "config.toml"
        config.write_text(
            f'[providers.local]\nbase_url = "{server.base_url}"\n'
            'api_key_env = "LOCAL_LLM_KEY"\nmodels = ["qwen3", "qwen3-coder"]\n'
        )
        env: EnvOverrides = {
            **agent_env,
            **NO_KEYS,
            "OPENAI_API_KEY": "unused-openai-key",
            "LOCAL_LLM_KEY": "local-key-3c1a",
        }
        command = agent_command("--model", "openai:gpt-test", "--config", str(config))
        async with RawAgent(command, env=env) as agent:
            await agent.request("initialize", init())
            created = (await agent.request("session/new", new(workspace, SID)))["result"]
            model = option(created["configOptions"], "model")
            assert model["category"] == "model" and model["currentValue"] == "openai:gpt-test"
            assert [o["value"] for o in model["options"]] == [
                "openai:gpt-test",
                "local:qwen3",
                "local:qwen3-coder",
            ]
            wrong = {"sessionId": SID, "configId": "model", "value": "openai:gpt-5"}
            assert (await agent.request("session/set_config_option", wrong))["error"][
                "code"
            ] == -32602
            switch = {"sessionId": SID, "configId": "model", "value": "local:qwen3-coder"}
            switched = (await agent.request("session/set_config_option", switch))["result"]
            assert option(switched["configOptions"], "model")["currentValue"] == "local:qwen3-coder"
            answer = await agent.request("session/prompt", prompt(SID, "hi"))
            assert answer["result"] == {"stopReason": "end_turn"}
        (received,) = server.requests
    assert received.json()["model"] == "qwen3-coder"
    assert received.headers["authorization"] == "Bearer local-key-3c1a"


def option(options: list[dict[str, Any]], option_id: str) -> dict[str, Any]:
    return next(o for o in options if o["id"] == option_id)


async def test_without_a_key_auth_methods_and_32000_say_what_to_set(
    workspace: Path, agent_env: dict[str, str]
) -> None:
    env: EnvOverrides = {**agent_env, **NO_KEYS}
    async with RawAgent(agent_command("--model", "openai:gpt-test"), env=env) as agent:
        initialized = (await agent.request("initialize", init()))["result"]
        (method,) = initialized["authMethods"]
        assert method["id"] == "openai-api-key"
        assert "OPENAI_API_KEY" in method["name"] and "OPENAI_API_KEY" in method["description"]
        refused = (await agent.request("session/new", new(workspace, SID)))["error"]
        assert refused["code"] == -32000
        assert "set the environment variable OPENAI_API_KEY" in refused["message"]
        again = await agent.request("authenticate", {"methodId": "openai-api-key"})
        assert again["error"]["code"] == -32000
        unknown = await agent.request("authenticate", {"methodId": "password"})
        assert unknown["error"]["code"] == -32602


STARTUP_PROBE = """
import atexit, json, sys
REPORT = sys.argv[1]
def report():
    stacks = ("httpx", "httpcore", "h11", "openai")
    # a None entry is a module marked absent (acp_agent/lean_imports.py), not one loaded
    loaded = sorted(m for m, v in sys.modules.items() if m.split(".")[0] in stacks and v)
    with open(REPORT, "w") as out:
        json.dump(loaded, out)
atexit.register(report)
sys.argv = ["acp-agent", "--model", "openai:gpt-test"]
from acp_agent.cli import main
sys.exit(main())
"""


def test_initialize_does_not_import_the_http_stack(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    frames = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init()}]
    stdin = "".join(json.dumps(frame) + "\n" for frame in frames)
    report = tmp_path / "modules.json"
    env = {
        **_environ(),
        **agent_env,
        "OPENAI_API_KEY": "k",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    done = subprocess.run(
        [sys.executable, "-c", STARTUP_PROBE, str(report)],
        cwd=tmp_path,
        input=stdin.encode(),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a.get("id") for a in answers if "result" in a] == [1]
    assert json.loads(report.read_text()) == []


async def test_session_new_imports_the_http_stack_in_the_background(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    """Issue 13 item 10: the import starts once session/new is answered (the user is typing),
    so the first prompt does not pay for it; the answer itself never waits for it."""
    log_file = tmp_path / "agent.log"
    env: EnvOverrides = {
        **agent_env,
        **NO_KEYS,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": KEY,
        "ACP_AGENT_LOG_FILE": str(log_file),
        "ACP_AGENT_LOG_LEVEL": "debug",
    }
    async with RawAgent(agent_command("--model", "openai:gpt-test"), env=env) as agent:
        await agent.request("initialize", init())
        assert "result" in await agent.request("session/new", new(workspace, SID))
        with anyio.fail_after(20):
            while b"http_stack_imported" not in log_file.read_bytes():  # noqa: ASYNC110 - a file
                await anyio.sleep(0.02)
    events = [json.loads(line)["event"] for line in log_file.read_bytes().splitlines()]
    assert events.count("http_stack_imported") == 1
    assert "model_request_sent" not in events  # no request was needed for it


def _environ() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY")}
