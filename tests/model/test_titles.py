"""Model-written session titles (docs/contract.md §9; ``turn/titles.py``), end to end.

The real agent process on ``openai:gpt-test`` against the loopback OpenAI-compatible server
(``loopback.py`` answers title requests from ``titles``, apart from the turns' replies), raw
pipes, every frame validated against the ACP v1 schema after the run. What is asserted: the
title request is made once, after the first turn, small (``max_tokens``, no tools); the
model's title replaces the first-prompt title on disk, in ``session/list`` and through
``session_info_update``; a title request that hangs or fails changes nothing a prompt waits
for; and a ``script:`` session never asks (its script lines go to turns only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_agent.turn.titles import TITLE_MAX_TOKENS
from tests.integration.support import serve_command, wait_until, write_script
from tests.model.agent_params import NO_KEYS, init, new, prompt
from tests.model.loopback import Reply, failed, loopback
from tests.support.process import EnvOverrides
from tests.support.recording import RawAgent, agent_command
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess

SID = "t"
MODEL_TITLE = "Greeting the world"  # what recordings/title.sse says, cleaned of quotes and "."


def titles_told(frames: list[dict[str, Any]]) -> list[str]:
    return [
        f["params"]["update"]["title"]
        for f in frames
        if f.get("method") == "session/update"
        and f["params"]["update"]["sessionUpdate"] == "session_info_update"
    ]


async def handshake(agent: RawAgent, workspace: Path) -> None:
    """``initialize``, then ``session/new`` for the session ``SID``."""
    await agent.request("initialize", init())
    await agent.request("session/new", new(workspace, SID))


def env_for(agent_env: dict[str, str], base_url: str) -> EnvOverrides:
    return {**agent_env, **NO_KEYS, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-test"}


def title_file(state_dir: Path) -> str:
    return (state_dir / "sessions" / SID / "title").read_text()


async def test_the_model_titles_the_session_after_its_first_turn(
    workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    async with loopback(Reply("text.sse"), Reply("text.sse")) as server:
        command = agent_command("--model", "openai:gpt-test")
        async with RawAgent(command, env=env_for(agent_env, server.base_url)) as agent:
            await handshake(agent, workspace)
            first = await agent.request("session/prompt", prompt(SID, "say hello to everyone"))
            await wait_until(
                lambda: MODEL_TITLE in titles_told(agent.transcript.agent_frames), "model title"
            )
            second = await agent.request("session/prompt", prompt(SID, "again"))
            listed = await agent.request("session/list", {})
        (title_request,) = server.title_requests  # once: after turn 1 only
        turns = len(server.requests)
    assert first["result"]["stopReason"] == second["result"]["stopReason"] == "end_turn"
    assert turns == 2
    # the first prompt's title at once, then the model's
    assert titles_told(agent.transcript.agent_frames) == ["say hello to everyone", MODEL_TITLE]
    assert title_file(state_dir) == MODEL_TITLE
    assert listed["result"]["sessions"][0]["title"] == MODEL_TITLE
    body = title_request.json()
    assert body["max_completion_tokens"] == TITLE_MAX_TOKENS  # bounded (OpenAI's field name)
    assert "tools" not in body
    (ask,) = body["messages"][1:]
    assert "User: say hello to everyone" in ask["content"]
    assert "Assistant: Hello, world!" in ask["content"]  # the first answer, for context


async def test_a_hanging_title_request_delays_no_prompt_and_ends_with_the_session(
    workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    async with loopback(Reply("text.sse"), Reply("text.sse")) as server:
        server.titles.append(Reply("title.sse", hang=True))  # streams, never ends
        command = agent_command("--model", "openai:gpt-test")
        async with RawAgent(command, env=env_for(agent_env, server.base_url)) as agent:
            await handshake(agent, workspace)
            await agent.request("session/prompt", prompt(SID, "first prompt"))
            await wait_until(lambda: len(server.title_requests) == 1, "the title request")
            # the title request is open and hanging: the next prompt is answered regardless
            second = await agent.request("session/prompt", prompt(SID, "second prompt"))
            assert not server.disconnected.is_set()
            await agent.close_stdin()
            assert await agent.wait_exit() == 0
        await wait_until(server.disconnected.is_set, "the title request cancelled at exit")
    assert second["result"]["stopReason"] == "end_turn"
    assert titles_told(agent.transcript.agent_frames) == ["first prompt"]
    assert title_file(state_dir) == "first prompt"


async def test_a_failed_title_request_keeps_the_first_prompt_title(
    workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    async with loopback(Reply("text.sse"), Reply("text.sse")) as server:
        server.titles.append(failed(400, "unauthorized.json"))  # not retried
        command = agent_command("--model", "openai:gpt-test")
        async with RawAgent(command, env=env_for(agent_env, server.base_url)) as agent:
            await handshake(agent, workspace)
            await agent.request("session/prompt", prompt(SID, "first prompt"))
            await wait_until(lambda: len(server.title_requests) == 1, "the title request")
            second = await agent.request("session/prompt", prompt(SID, "second prompt"))
            await agent.close_stdin()
            assert await agent.wait_exit() == 0
    assert second["result"]["stopReason"] == "end_turn"
    assert titles_told(agent.transcript.agent_frames) == ["first prompt"]
    assert title_file(state_dir) == "first prompt"
    assert b"title_not_written" in agent.stderr


async def test_a_script_session_keeps_its_first_prompt_title_and_asks_nothing_more(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", {"text": "one"}, {"text": "two"})
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with RawAgent(serve_command(script), env=env) as agent:
        await handshake(agent, workspace)
        for text in ("first prompt", "second prompt"):
            answer = await agent.request("session/prompt", prompt(SID, text))
            assert answer["result"]["stopReason"] == "end_turn"
    assert [(r["turn"], r["step"]) for r in read_requests(log)] == [(1, 1), (2, 1)]
    assert titles_told(agent.transcript.agent_frames) == ["first prompt"]
    assert title_file(state_dir) == "first prompt"


async def test_the_config_can_turn_model_titles_off(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[agent]\nmodel_titles = false\n")
    async with loopback(Reply("text.sse"), Reply("text.sse")) as server:
        command = agent_command("--model", "openai:gpt-test", "--config", str(config))
        async with RawAgent(command, env=env_for(agent_env, server.base_url)) as agent:
            await handshake(agent, workspace)
            for text in ("first prompt", "second prompt"):
                await agent.request("session/prompt", prompt(SID, text))
            await agent.close_stdin()
            assert await agent.wait_exit() == 0
    assert server.title_requests == [] and len(server.requests) == 2
    assert title_file(state_dir) == "first prompt"
