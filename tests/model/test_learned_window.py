"""A session on a small-window server with no ``context_window`` configured is never stuck
(issue 28 point 2): against ``FakeLlamaCpp``, which counts and refuses as llama.cpp does.

The reproduction: the agent assumes 200,000 tokens; one overlong prompt is refused with the
server's 400, which names the real window; before the fix every later prompt failed the same
way (the compaction request was sized for 200,000 tokens and overflowed too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_agent.model.config import ProviderEntry
from acp_agent.model.registry import ModelCatalog
from tests.model.fake_llamacpp import Answer, FakeLlamaCpp, fake_llamacpp
from tests.model.harness import InProcessAgent, in_process_agent
from tests.model.undercounted import KINDS

N_CTX = 8192


async def new_session(agent: InProcessAgent, cwd: Path) -> str:
    await agent.request("initialize", {"protocolVersion": 1})
    new = await agent.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    return str(new["result"]["sessionId"])


async def prompt(agent: InProcessAgent, sid: str, text: str) -> dict[str, Any]:
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    answer: dict[str, Any] = await agent.request("session/prompt", params)
    return answer


def catalog(server: FakeLlamaCpp) -> ModelCatalog:
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
    return ModelCatalog("openai:local-model", {}, env)


@pytest.mark.parametrize("props", [False, True], ids=["overflow-error", "props"])
@pytest.mark.parametrize("kind", list(KINDS))
async def test_after_an_overlong_prompt_the_next_prompts_work(
    kind: str, props: bool, tmp_path: Path
) -> None:
    """``overflow-error``: the server has no ``/props``: the window is learned from its 400;
    ``props``: it is asked before the first request, and the overlong one is never sent."""
    overlong = KINDS[kind](60_000)
    async with (
        fake_llamacpp(N_CTX, props=props) as server,
        in_process_agent(catalog(server), tmp_path / "s") as agent,
    ):
        sid = await new_session(agent, tmp_path)
        answer = await prompt(agent, sid, f"Summarize this:\n{overlong}")
        assert "context window" in json.dumps(answer)
        assert len(server.refused) == (0 if props else 1)
        for question in ("What is 2 + 2?", "And 3 + 3?"):
            answer = await prompt(agent, sid, question)
            assert answer.get("result", {}).get("stopReason") == "end_turn", answer
        bodies = server.bodies
    last = json.dumps(bodies[-1])
    assert "And 3 + 3?" in last and "What is 2 + 2?" in last
    assert max(server.counted) <= N_CTX


async def test_a_64_kib_tool_result_in_a_small_window_is_trimmed_not_the_end_of_the_turn(
    tmp_path: Path,
) -> None:
    (tmp_path / "big.csv").write_text(KINDS["csv"](64 * 1024))
    read = Answer(tool="read_file", arguments='{"path": "big.csv"}')
    async with (
        fake_llamacpp(N_CTX, read, Answer("The file holds numbers.")) as server,
        in_process_agent(catalog(server), tmp_path / "s") as agent,
    ):
        sid = await new_session(agent, tmp_path)
        answer = await prompt(agent, sid, "What is in big.csv?")
        assert answer["result"]["stopReason"] == "end_turn", answer
        journal = journal_text(tmp_path / "s")
    last = server.bodies[-1]
    tool_message = next(m for m in last["messages"] if m["role"] == "tool")
    assert "to fit the model's context window" in tool_message["content"]
    assert max(server.counted) <= N_CTX
    middle = KINDS["csv"](64 * 1024).splitlines()[1000]
    assert middle not in tool_message["content"] and middle in journal  # the journal keeps it


async def test_malformed_tool_call_json_goes_back_to_the_model(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    broken = Answer(tool="read_file", arguments='{"path": "a.txt"')
    fixed = Answer(tool="read_file", arguments='{"path": "a.txt"}')
    async with (
        fake_llamacpp(N_CTX, broken, fixed, Answer("It says alpha.")) as server,
        in_process_agent(catalog(server), tmp_path / "s") as agent,
    ):
        sid = await new_session(agent, tmp_path)
        answer = await prompt(agent, sid, "Read a.txt")
        assert answer["result"]["stopReason"] == "end_turn", answer
    second = server.bodies[1]["messages"]
    told = next(m for m in second if m["role"] == "tool")
    assert "not a JSON object" in str(told["content"]) and '{"path": "a.txt"' in str(
        told["content"]
    )
    third = server.bodies[2]["messages"]
    assert "alpha" in str([m for m in third if m["role"] == "tool"][-1]["content"])


@pytest.mark.parametrize("kind", list(KINDS))
async def test_undercounted_text_is_calibrated_from_usage_and_nothing_is_refused(
    kind: str, tmp_path: Path
) -> None:
    """Each prompt fits alone, by far; together they would not. Counted as chars ÷ 4 the
    history looks small until the server refuses it; calibrated from the first ``usage``, the
    session compacts before a request could overflow."""
    async with (
        fake_llamacpp(N_CTX) as server,
        in_process_agent(catalog(server), tmp_path / "s") as agent,
    ):
        sid = await new_session(agent, tmp_path)
        for n in range(8):
            answer = await prompt(agent, sid, f"Part {n}:\n{KINDS[kind](2_500 + 97 * n)}")
            assert answer["result"]["stopReason"] == "end_turn", answer
    assert server.refused == []
    assert any("Summarize the conversation" in json.dumps(b) for b in server.bodies)


async def test_the_learned_window_is_kept_across_a_reload(tmp_path: Path) -> None:
    state = tmp_path / "s"
    async with fake_llamacpp(N_CTX, props=False) as server:  # learned from its 400 only
        async with in_process_agent(catalog(server), state) as agent:
            sid = await new_session(agent, tmp_path)
            await prompt(agent, sid, KINDS["hex"](60_000))
            assert server.refused
        async with in_process_agent(catalog(server), state) as agent:
            await agent.request("initialize", {"protocolVersion": 1})
            load = {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
            await agent.request("session/load", load)
            answer = await prompt(agent, sid, "hello")
            assert answer["result"]["stopReason"] == "end_turn", answer
            sizes = [u["size"] for u in agent.updates(sid) if u["sessionUpdate"] == "usage_update"]
    assert sizes and set(sizes) == {N_CTX}
    assert len(server.refused) == 1, "the reloaded session did not send for 200,000 tokens"


def journal_text(state: Path) -> str:
    return "".join(p.read_text("utf-8") for p in state.rglob("*.jsonl"))


@pytest.mark.parametrize("n_ctx", [4096, 8192])
async def test_a_small_window_gets_a_first_request_of_at_most_15_percent(
    n_ctx: int, tmp_path: Path
) -> None:
    """The compact prompt and the core tools, short (issue 28 point 3); the tool loop works."""
    (tmp_path / "a.txt").write_text("alpha\n")
    read = Answer(tool="read_file", arguments='{"path": "a.txt"}')
    async with (
        fake_llamacpp(n_ctx, read, Answer("It says alpha.")) as server,
        in_process_agent(catalog(server), tmp_path / "s") as agent,
    ):
        sid = await new_session(agent, tmp_path)
        answer = await prompt(agent, sid, "What does a.txt say?")
        assert answer["result"]["stopReason"] == "end_turn", answer
    first, second = server.bodies[:2]
    assert server.counted[0] <= 0.15 * n_ctx, server.counted
    assert {t["function"]["name"] for t in first["tools"]} <= {
        "read_file", "edit_file", "write_file", "run_command"
    }  # fmt: skip
    assert "alpha" in json.dumps([m for m in second["messages"] if m["role"] == "tool"])


async def test_a_large_window_keeps_the_full_prompt(tmp_path: Path) -> None:
    async with (
        fake_llamacpp(32768) as server,
        in_process_agent(catalog(server), tmp_path / "s") as agent,
    ):
        sid = await new_session(agent, tmp_path)
        await prompt(agent, sid, "hi")
    assert server.counted[0] > 0.15 * 4096
    assert len(server.bodies[0]["tools"]) > 6


async def test_a_provider_marked_local_gets_no_title_requests(tmp_path: Path) -> None:
    async with fake_llamacpp(N_CTX) as server:
        entry = ProviderEntry(base_url=server.base_url, api_key_env="", local=True)
        models = ModelCatalog("mine:m", {"mine": entry}, {})
        provider = models.provider("mine:m")
        assert provider.capabilities.local_cpu and not provider.capabilities.writes_titles
        async with in_process_agent(models, tmp_path / "s") as agent:
            sid = await new_session(agent, tmp_path)
            for text in ("hello", "again"):
                assert (await prompt(agent, sid, text))["result"]["stopReason"] == "end_turn"
    assert server.title_requests == []
    assert len(server.bodies) == 2
