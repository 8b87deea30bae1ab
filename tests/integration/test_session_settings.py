"""A session's mode and model outlive the process (``session/settings.py``), over the real wire.

An editor that reloads a session (after a restart, or through ``session/resume``) must find it
in the mode the user put it in — ``read-only`` coming back as ``ask`` would be a surprise, and
``full-access`` coming back as ``ask`` an annoyance — and on the model the user picked. A fork
starts where its parent was, and is answered like ``session/new`` (options, modes, commands).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.model.loopback import Reply, loopback
from tests.support.acp_schema import AcpSchema, schema_path
from tests.support.process import EnvOverrides
from tests.support.recording import RawAgent, agent_command

pytestmark = pytest.mark.subprocess

SID = "settings"
SCRIPT_LINE = {"text": "ok"}


def script(tmp_path: Path, answers: int = 4) -> Path:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(SCRIPT_LINE) + "\n" for _ in range(answers)))
    return path


def init() -> dict[str, Any]:
    return {"protocolVersion": 1, "clientCapabilities": {}}


def new(cwd: Path) -> dict[str, Any]:
    return {"cwd": str(cwd), "mcpServers": [], "_meta": {"acp_agent": {"sessionId": SID}}}


def reopen(cwd: Path, session_id: str = SID) -> dict[str, Any]:
    return {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}


def option(result: dict[str, Any], option_id: str) -> Any:
    return next(o for o in result["configOptions"] if o["id"] == option_id)["currentValue"]


def settings_file(state_dir: Path, session_id: str = SID) -> Path:
    return state_dir / "sessions" / session_id / "settings.json"


@pytest.mark.parametrize("method", ["session/load", "session/resume"])
async def test_the_mode_comes_back_with_the_session_in_a_new_process(
    method: str, tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    command = agent_command("--model", f"script:{script(tmp_path)}")
    async with RawAgent(command, env=agent_env) as agent:
        await agent.request("initialize", init())
        created = (await agent.request("session/new", new(workspace)))["result"]
        assert created["modes"]["currentModeId"] == "ask"
        changed = await agent.request("session/set_mode", {"sessionId": SID, "modeId": "read-only"})
        assert changed["result"] == {}
    assert json.loads(settings_file(state_dir).read_text()) == {"mode": "read-only"}

    async with RawAgent(command, env=agent_env) as agent:
        await agent.request("initialize", init())
        result = (await agent.request(method, reopen(workspace)))["result"]
        assert result["modes"]["currentModeId"] == "read-only"
        assert option(result, "mode") == "read-only"
        # and it is the mode that decides: a config change goes on from there
        change = {"sessionId": SID, "configId": "mode", "value": "full-access"}
        await agent.request("session/set_config_option", change)
    assert json.loads(settings_file(state_dir).read_text()) == {"mode": "full-access"}


async def test_a_fork_starts_in_its_parents_mode_and_is_answered_like_a_new_session(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    command = agent_command("--model", f"script:{script(tmp_path)}")
    async with RawAgent(command, env=agent_env, validate=False) as agent:
        await agent.request("initialize", init())
        await agent.request("session/new", new(workspace))
        await agent.request("session/set_mode", {"sessionId": SID, "modeId": "auto-edit"})
        await agent.request(
            "session/prompt", {"sessionId": SID, "prompt": [{"type": "text", "text": "hi"}]}
        )
        forked = await agent.request("session/fork", reopen(workspace))
        child = forked["result"]["sessionId"]
        assert forked["result"]["modes"]["currentModeId"] == "auto-edit"
        assert option(forked["result"], "mode") == "auto-edit"
        commands = await agent.recv()
    assert commands["method"] == "session/update"
    assert commands["params"]["sessionId"] == child
    assert commands["params"]["update"]["sessionUpdate"] == "available_commands_update"
    AcpSchema.load(schema_path().with_name("schema.unstable.json")).validate_agent_frame(
        forked, "session/fork"
    )
    assert json.loads(settings_file(state_dir, child).read_text()) == {"mode": "auto-edit"}


async def test_the_chosen_model_comes_back_and_a_model_no_longer_offered_falls_back(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    async with loopback(Reply("text.sse")) as server:
        config = tmp_path / "config.toml"

        def offer(*models: str) -> list[str]:
            listed = ", ".join(f'"{m}"' for m in models)
            config.write_text(
                f'[providers.local]\nbase_url = "{server.base_url}"\n'
                f'api_key_env = "LOCAL_LLM_KEY"\nmodels = [{listed}]\n'
            )
            return agent_command("--model", "openai:gpt-test", "--config", str(config))

        env: EnvOverrides = {**agent_env, "OPENAI_API_KEY": "k1", "LOCAL_LLM_KEY": "k2"}
        async with RawAgent(offer("qwen3", "qwen3-coder"), env=env) as agent:
            await agent.request("initialize", init())
            await agent.request("session/new", new(workspace))
            pick = {"sessionId": SID, "configId": "model", "value": "local:qwen3-coder"}
            await agent.request("session/set_config_option", pick)
        assert json.loads(settings_file(state_dir).read_text()) == {
            "mode": "ask",
            "model": "local:qwen3-coder",
        }

        async with RawAgent(offer("qwen3", "qwen3-coder"), env=env) as agent:
            await agent.request("initialize", init())
            loaded = (await agent.request("session/load", reopen(workspace)))["result"]
            assert option(loaded, "model") == "local:qwen3-coder"
            prompt = {"sessionId": SID, "prompt": [{"type": "text", "text": "hi"}]}
            answer = await agent.request("session/prompt", prompt)
            assert answer["result"] == {"stopReason": "end_turn"}
        (received,) = server.requests
        assert received.json()["model"] == "qwen3-coder"

        async with RawAgent(offer("qwen3"), env=env) as agent:
            await agent.request("initialize", init())
            loaded = (await agent.request("session/load", reopen(workspace)))["result"]
            assert option(loaded, "model") == "openai:gpt-test"
        assert b"session_model_unavailable" in agent.stderr


async def test_an_unreadable_settings_file_is_logged_and_the_session_loads_with_defaults(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    command = agent_command("--model", f"script:{script(tmp_path)}")
    async with RawAgent(command, env=agent_env) as agent:
        await agent.request("initialize", init())
        await agent.request("session/new", new(workspace))
        await agent.request("session/set_mode", {"sessionId": SID, "modeId": "read-only"})
    settings_file(state_dir).write_text('{"mode": ')  # torn
    async with RawAgent(command, env=agent_env) as agent:
        await agent.request("initialize", init())
        loaded = (await agent.request("session/load", reopen(workspace)))["result"]
        assert loaded["modes"]["currentModeId"] == "ask"
    assert b"session_settings_unreadable" in agent.stderr
