"""The two front doors run the same session: the ACP wire and the Python API (``acp_agent.api``).

The same workspace (a git repo with an uncommitted change, a skill, an ``AGENTS.md``), the same
config file, the same script model and the same inputs through each door: the real agent process
over stdio, and ``Agent.open`` in this process. Each door's model requests (the script model's
request log, ``ACP_AGENT_SCRIPT_REQUESTS``) must be the same, system prompt byte for byte; the
answers the agent gives itself (``/status``) the same but for the journal's path.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acp_agent.api import Agent
from acp_agent.commands.dispatch import CommandRefused
from acp_agent.config_file import read_config_file
from acp_agent.model.config import providers_from
from acp_agent.model.registry import ModelCatalog
from acp_agent.session.system_prompt import prompt_config_from
from acp_agent.tools.registry import coding_tools
from acp_agent.turn.vocabulary import Finished, StopReason
from tests.integration.support import serve_command, write_script
from tests.support.recording import RawAgent

pytestmark = pytest.mark.subprocess

SESSION = "two-doors"
INPUTS = [
    "/status",
    "/init keep it short",
    "/review the return value",
    "/haiku the journal",
    "/compact keep names",
    "an ordinary prompt",
    "/status",
]
SCRIPT = [
    {"text": "AGENTS.md would say: tests with make test."},
    {"text": "f now returns 2; fine."},
    {"text": "5-7-5"},
    {"text": "summary: a review and a haiku"},
    {"text": "ordinary answer"},
]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def workspace_with_everything(root: Path) -> tuple[Path, Path]:
    """A workspace (git repo, one uncommitted change, a skill, AGENTS.md) and a config file."""
    workspace = (root / "workspace").resolve()
    workspace.mkdir()
    git(workspace, "init", "-q")
    git(workspace, "config", "user.email", "t@example.com")
    git(workspace, "config", "user.name", "t")
    (workspace / "app.py").write_text("def f():\n    return 1\n")
    git(workspace, "add", "app.py")
    git(workspace, "commit", "-qm", "one")
    (workspace / "app.py").write_text("def f():\n    return 2\n")
    (workspace / "AGENTS.md").write_text("Run the tests with make test.\n")
    config = root / "conf" / "config.toml"
    skill = config.parent / "skills" / "haiku" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text('---\nname: haiku\ndescription: "Answer in a haiku"\n---\nAnswer in 5-7-5.\n')
    config.write_text('[agent]\nsystem_prompt_append = "Be brief."\n')
    return workspace, config


def without_ids(request: dict[str, Any]) -> dict[str, Any]:
    """The request, a compaction summary's random id left out (``source.id``)."""
    messages = [
        {**m, "source": {k: v for k, v in m["source"].items() if k != "id"}} if "source" in m else m
        for m in request["messages"]
    ]
    return {**request, "messages": messages}


def status_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("Journal: ")]


async def over_acp(
    root: Path, workspace: Path, config: Path, env: dict[str, str]
) -> tuple[list[str], list[dict[str, Any]]]:
    script = write_script(root / "script.jsonl", *SCRIPT)
    log = root / "acp-requests.jsonl"
    answers: list[str] = []
    command = serve_command(script, "--config", str(config))
    async with RawAgent(command, env={**env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}) as agent:
        await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        meta = {"acp_agent": {"sessionId": SESSION}}
        params = {"cwd": str(workspace), "mcpServers": [], "_meta": meta}
        await agent.request("session/new", params)
        for text in INPUTS:
            agent.skipped.clear()
            prompt = {"sessionId": SESSION, "prompt": [{"type": "text", "text": text}]}
            answer = await agent.request("session/prompt", prompt)
            assert answer["result"]["stopReason"] == "end_turn", (text, answer)
            answers += [
                u["content"]["text"]
                for f in agent.skipped
                if f.get("method") == "session/update"
                and (u := f["params"]["update"])["sessionUpdate"] == "agent_message_chunk"
                and "command" in u.get("_meta", {}).get("acp_agent", {})
            ]
    return answers, [json.loads(line) for line in log.read_text().splitlines()]


async def over_the_api(
    root: Path, workspace: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], list[dict[str, Any]]]:
    script = write_script(root / "script.jsonl", *SCRIPT)
    log = root / "api-requests.jsonl"
    monkeypatch.setenv("ACP_AGENT_SCRIPT_REQUESTS", str(log))
    decoded = read_config_file(config)
    models = ModelCatalog(f"script:{script}", providers_from(decoded, config))
    prompt = prompt_config_from(decoded, config)
    answers: list[str] = []
    async with Agent.open(
        root / "api-state", models, tools=lambda _: coding_tools(), system_prompt=prompt
    ) as agent:
        session = await agent.new_session(workspace, SESSION)
        await session.inject_workspace_instructions()
        for text in INPUTS:
            pending = await session.send(text)
            assert await pending.outcome() == Finished(StopReason.END_TURN), text
            if pending.answer is not None:
                answers.append(pending.answer.text)
    return answers, [json.loads(line) for line in log.read_text().splitlines()]


async def test_both_doors_run_the_commands_and_skills_and_send_the_same_requests(
    tmp_path: Path, agent_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, config = workspace_with_everything(tmp_path)
    acp_answers, acp_requests = await over_acp(tmp_path, workspace, config, agent_env)
    git(workspace, "checkout", "--", ".")
    (workspace / "app.py").write_text("def f():\n    return 2\n")  # the same change again
    api_answers, api_requests = await over_the_api(tmp_path, workspace, config, monkeypatch)

    # the same requests: the system prompt byte for byte, every message, the same tools
    assert len(acp_requests) == len(api_requests) == len(SCRIPT)
    for over_wire, over_api in zip(acp_requests, api_requests, strict=True):
        assert over_api["messages"][0] == over_wire["messages"][0]
        assert without_ids(over_api) == without_ids(over_wire)
    system = acp_requests[0]["messages"][0]["content"]
    assert "Be brief." in system and "- /haiku: Answer in a haiku" in system
    # the commands did what they say, through both doors
    ask = acp_requests[3]["messages"][-1]
    assert ask["source"] == {"kind": "compaction", "instruction": True}
    assert "keep names" in json.dumps(ask)
    after = [m.get("source", {}).get("kind") for m in acp_requests[4]["messages"]]
    assert "compaction" in after
    review = acp_requests[1]["messages"]
    assert any("+    return 2" in str(m.get("content")) for m in review)
    assert {"kind": "skill", "name": "haiku"} in [
        m.get("source") for m in acp_requests[2]["messages"]
    ]
    # /status answered by the agent itself, twice, the same through both doors
    assert len(acp_answers) == len(api_answers) == 2
    for wire_answer, api_answer in zip(acp_answers, api_answers, strict=True):
        assert status_lines(api_answer) == status_lines(wire_answer)
    assert "Skills: /haiku" in acp_answers[0]
    assert "Turns: 4" in acp_answers[1]


async def test_a_refused_command_is_the_same_refusal_through_the_api(tmp_path: Path) -> None:
    workspace, _ = workspace_with_everything(tmp_path)
    models = ModelCatalog(f"script:{write_script(tmp_path / 's.jsonl')}", {})
    async with Agent.open(tmp_path / "state", models) as agent:
        session = await agent.new_session(workspace)
        with pytest.raises(CommandRefused, match="unknown mode 'yolo'; one of read-only"):
            await session.send("/mode yolo")
        with pytest.raises(CommandRefused, match="offers no model to switch to"):
            await session.send("/model gpt-9")
        listed = await session.send("/mode")
        assert listed.answer is not None and "- plan:" in listed.answer.text
        switched = await session.send("/mode plan")
        assert switched.answer is not None and switched.answer.text == "Mode: plan"
        assert str(session.mode) == "plan"
