"""Both front doors drive one session layer: a session's mode and model, set through one door,
are what the other door finds when it opens the session from disk.

The ACP side is the real router and session layer on the in-memory wire
(``tests/model/harness.py``); the Python side is ``acp_agent.api.Agent`` on the same state
directory, with the same model catalog. Before ``session/service.py``, ``Agent.open_session``
opened every session in the default mode on the default model, while ``session/load`` restored
the saved ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_agent.api import Agent, Mode, ModelCatalog, UnknownModel, UnknownSession
from acp_agent.model.config import ProviderEntry
from tests.model.harness import in_process_agent

# No request ever reaches the provider: these tests only set and read settings.
PROVIDER = ProviderEntry(base_url="http://127.0.0.1:9/v1", api_key_env="", models=["a", "b"])


def catalog() -> ModelCatalog:
    return ModelCatalog("local:a", {"local": PROVIDER}, env={})


def current(options: list[dict[str, Any]], option_id: str) -> object:
    return next(o["currentValue"] for o in options if o["id"] == option_id)


async def test_api_open_session_restores_what_acp_set(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with in_process_agent(catalog(), state) as acp:
        await acp.request("initialize", {"protocolVersion": 1})
        new = await acp.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = new["result"]["sessionId"]
        model = {"sessionId": sid, "configId": "model", "value": "local:b"}
        assert "result" in await acp.request("session/set_config_option", model)
        mode = {"sessionId": sid, "modeId": "auto-edit"}
        assert "result" in await acp.request("session/set_mode", mode)
        assert "result" in await acp.request("session/close", {"sessionId": sid})

    async with Agent.open(state, catalog()) as agent:
        session = await agent.open_session(sid)
        assert (session.mode, session.model) == (Mode.AUTO_EDIT, "local:b")
        fresh = await agent.new_session(tmp_path)
        assert (fresh.mode, fresh.model) == (Mode.ASK, "local:a")


async def test_session_load_restores_what_the_api_set(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with Agent.open(state, catalog()) as agent:
        session = await agent.new_session(tmp_path)
        await session.set_model("local:b")
        await session.set_mode(Mode.READ_ONLY)
        sid = session.id

    async with in_process_agent(catalog(), state) as acp:
        await acp.request("initialize", {"protocolVersion": 1})
        load = {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
        result = (await acp.request("session/load", load))["result"]
        assert result["modes"]["currentModeId"] == "read-only"
        assert current(result["configOptions"], "model") == "local:b"
        assert current(result["configOptions"], "mode") == "read-only"


async def test_the_api_refuses_with_plain_session_errors(tmp_path: Path) -> None:
    async with Agent.open(tmp_path / "state", catalog()) as agent:
        session = await agent.new_session(tmp_path)
        with pytest.raises(UnknownModel, match="one of local:a, local:b"):
            await session.set_model("local:c")
        assert session.model == "local:a"
        with pytest.raises(UnknownSession):
            await agent.open_session("nope")


async def test_acp_answers_the_same_refusals_as_wire_errors(tmp_path: Path) -> None:
    async with in_process_agent(catalog(), tmp_path / "state") as acp:
        await acp.request("initialize", {"protocolVersion": 1})
        new = await acp.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        sid = new["result"]["sessionId"]
        bad = {"sessionId": sid, "configId": "model", "value": "local:c"}
        error = (await acp.request("session/set_config_option", bad))["error"]
        assert (error["code"], error["data"]) == (-32602, {"path": "$.value"})
        load = {"sessionId": "nope", "cwd": str(tmp_path), "mcpServers": []}
        error = (await acp.request("session/load", load))["error"]
        assert (error["code"], error["data"]) == (-32002, {"sessionId": "nope"})


async def test_a_session_needs_at_least_one_step(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_steps must be at least 1"):
        async with Agent.open(tmp_path / "state", catalog(), max_steps=0):
            pass


async def test_a_refusal_leaves_the_agent_block_as_itself(tmp_path: Path) -> None:
    """Not wrapped in the exception group of the task group that runs the sessions."""
    with pytest.raises(UnknownSession) as refused:
        async with Agent.open(tmp_path / "state", catalog()) as agent:
            await agent.open_session("nope")
    assert refused.value.session_id == "nope"
