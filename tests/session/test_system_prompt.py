"""The system prompt (docs/contract.md §8): first in every request, configurable, never history.

Unit tests of ``render`` and the ``[agent]`` table, then the ACP side on the real router and
session layer (``tests/model/harness.py``): the unstable ``systemPrompt`` of ``session/new`` /
``load`` / ``fork``, checked before anything is created and kept with the session's settings.
What a request carried is read from the script model's request log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_agent.config_file import ConfigError
from acp_agent.model.registry import ModelCatalog
from acp_agent.session.system_prompt import (
    BUILT_IN,
    PromptConfig,
    PromptMode,
    SessionPrompt,
    prompt_config_from,
    render,
)
from tests.model.harness import InProcessAgent, in_process_agent
from tests.support.requests import read_requests

DAY_MS = 1_764_590_400_000  # 2025-12-01T12:00:00Z
ROOTS = [Path("/work/project"), Path("/work/lib")]


def test_the_built_in_prompt_names_the_roots_the_platform_and_the_turns_day() -> None:
    text = render(PromptConfig(), None, ROOTS, DAY_MS)
    assert text.startswith(BUILT_IN)
    tail = text.removeprefix(BUILT_IN).strip().splitlines()
    assert tail[:2] == ["Working directory: /work/project", "Also a root: /work/lib"]
    assert tail[2].startswith("Platform: ") and tail[3] == "Date: 2025-12-01"
    assert render(PromptConfig(), None, ROOTS, DAY_MS) == text  # a pure function of its inputs


def test_append_adds_after_the_config_and_override_replaces_the_instructions() -> None:
    config = PromptConfig(base="Base rules.", append="Config extra.")
    appended = render(config, SessionPrompt(PromptMode.APPEND, "Client extra."), ROOTS, DAY_MS)
    assert appended.startswith("Base rules.\n\nConfig extra.\n\nClient extra.\n\nWorking directory")
    overridden = render(config, SessionPrompt(PromptMode.OVERRIDE, "Only this."), ROOTS, DAY_MS)
    assert overridden.startswith("Only this.\n\nWorking directory: /work/project")
    assert "Base rules." not in overridden and "Config extra." not in overridden


def test_the_agent_table_replaces_and_appends(tmp_path: Path) -> None:
    prompt_file = tmp_path / "prompt.md"
    prompt_file.write_text("House rules.\n")
    table = {"system_prompt_file": str(prompt_file), "system_prompt_append": "Be terse."}
    config = prompt_config_from({"agent": table}, tmp_path / "c.toml")
    skills = tmp_path / "skills"  # beside the config file (commands/skills.py)
    assert config == PromptConfig("House rules.", "Be terse.", skills)
    assert prompt_config_from({}, tmp_path / "c.toml") == PromptConfig(skills_dir=skills)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"system_prompt": "x"}, r"agent: Object contains unknown field `system_prompt`"),
        ({"system_prompt_file": "rel.md"}, r"agent.system_prompt_file: expected an absolute path"),
        ({"system_prompt_file": "/no/such/file.md"}, r"agent.system_prompt_file: cannot read"),
    ],
)
def test_a_bad_agent_table_names_the_key(
    tmp_path: Path, table: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        prompt_config_from({"agent": table}, tmp_path / "c.toml")


# -- over ACP -----------------------------------------------------------------------------------


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "requests.jsonl"
    monkeypatch.setenv("ACP_AGENT_SCRIPT_REQUESTS", str(path))
    return path


def catalog(tmp_path: Path, answers: int) -> ModelCatalog:
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps({"text": f"ok {n}"}) + "\n" for n in range(answers)))
    return ModelCatalog(f"script:{script}", env={})


def text_prompt(text: str, mode: str = "append") -> dict[str, Any]:
    return {"mode": mode, "content": [{"type": "text", "text": text}]}


async def ask(agent: InProcessAgent, sid: str) -> None:
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
    answer = await agent.request("session/prompt", prompt)
    assert answer["result"]["stopReason"] == "end_turn", answer


async def test_initialize_advertises_append_and_override(tmp_path: Path, log: Path) -> None:
    async with in_process_agent(catalog(tmp_path, 0), tmp_path / "state") as agent:
        init = await agent.request("initialize", {"protocolVersion": 1})
    caps = init["result"]["agentCapabilities"]["sessionCapabilities"]
    assert caps["systemPrompt"] == {"mode": {"override": {}}}


async def test_every_request_starts_with_it_and_a_load_keeps_the_clients_part(
    tmp_path: Path, log: Path
) -> None:
    workspace, state = str(tmp_path), tmp_path / "state"
    async with in_process_agent(catalog(tmp_path, 1), state) as agent:
        await agent.request("initialize", {"protocolVersion": 1})
        params = {"cwd": workspace, "mcpServers": [], "systemPrompt": text_prompt("Use tabs.")}
        sid = (await agent.request("session/new", params))["result"]["sessionId"]
        await ask(agent, sid)
    async with in_process_agent(catalog(tmp_path, 1), state) as agent:
        await agent.request("initialize", {"protocolVersion": 1})
        load = {"sessionId": sid, "cwd": workspace, "mcpServers": []}
        assert "result" in await agent.request("session/load", load)
        await ask(agent, sid)
    first, second = read_requests(log)
    assert first["system"] == second["system"]
    assert first["system"].startswith(BUILT_IN + "\n\nUse tabs.\n\nWorking directory: ")
    assert f"Working directory: {workspace}\n" in first["system"]
    assert all(m["role"] != "system" for m in second["messages"])  # never part of the history


async def test_override_replaces_the_built_in_text(tmp_path: Path, log: Path) -> None:
    async with in_process_agent(catalog(tmp_path, 1), tmp_path / "state") as agent:
        await agent.request("initialize", {"protocolVersion": 1})
        prompt = text_prompt("You review code only.", "override")
        params = {"cwd": str(tmp_path), "mcpServers": [], "systemPrompt": prompt}
        sid = (await agent.request("session/new", params))["result"]["sessionId"]
        await ask(agent, sid)
    (request,) = read_requests(log)
    assert request["system"].startswith("You review code only.\n\nWorking directory: ")
    assert "You are acp-agent" not in request["system"]


@pytest.mark.parametrize(
    ("prompt", "path"),
    [
        (text_prompt("x", "replace"), "$.systemPrompt.mode"),
        ({"mode": "append", "content": []}, "$.systemPrompt.content"),
        (
            {"mode": "append", "content": [{"type": "image", "mimeType": "image/png", "data": ""}]},
            "$.systemPrompt.content[0]",
        ),
    ],
)
async def test_a_bad_system_prompt_creates_nothing(
    tmp_path: Path, log: Path, prompt: dict[str, Any], path: str
) -> None:
    state = tmp_path / "state"
    async with in_process_agent(catalog(tmp_path, 0), state) as agent:
        await agent.request("initialize", {"protocolVersion": 1})
        params = {"cwd": str(tmp_path), "mcpServers": [], "systemPrompt": prompt}
        error = (await agent.request("session/new", params))["error"]
    assert (error["code"], error["data"]["path"]) == (-32602, path)
    assert not (state / "sessions").exists() or not any((state / "sessions").iterdir())
