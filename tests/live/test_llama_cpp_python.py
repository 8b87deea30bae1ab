"""The real agent against llama-cpp-python's own OpenAI-compatible server, live.

llama-cpp-python ships only as a source distribution on PyPI: installing it compiles llama.cpp
(measured here: 29 minutes on the 2-core development machine while it was busy), so neither
``make test`` nor ``make test-live`` installs it. These tests run where a Python with
``llama-cpp-python[server]`` is named by ``ACP_AGENT_LLAMA_CPP_PYTHON`` (else they skip)::

    python3 -m venv /tmp/lcp && /tmp/lcp/bin/pip install 'llama-cpp-python[server]'
    ACP_AGENT_LLAMA_CPP_PYTHON=/tmp/lcp/bin/python make test-live

The server (``python -m llama_cpp.server``, llama_cpp/server/app.py) runs SmolLM2-135M with
``--chat_format chatml-function-calling`` (llama_cpp/llama_chat_format.py,
``chatml_function_calling``), its own tool-calling prompt and grammar, which answers tool
calls with ``content: null``. What the issue reported of this server, checked here: an
assistant tool-call message sent back with ``content: null`` is answered 500 (the agent sends
``""``), and a second request arriving during a stream breaks the first connection after
``[DONE]`` (the agent keeps the complete answer).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from acp_agent.content import TextContent
from acp_agent.journal.events import SourceKind, ToolCallPart, source
from acp_agent.model.base import AssistantTurn, ModelRequest, ToolSpec, ToolTurn, UserTurn
from acp_agent.model.openai.wire import encode_request
from tests.integration.support import (
    check_journal,
    turn_updates_so_far,
    update_kinds,
    wait_until,
)
from tests.mcp.support import free_port
from tests.support.process import agent_command
from tests.support.recording import recorded_agent

pytestmark = [pytest.mark.live, pytest.mark.subprocess, pytest.mark.timeout(300)]

PYTHON_ENV = "ACP_AGENT_LLAMA_CPP_PYTHON"
FIRST_OUTPUT_S = 180.0
TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}


@pytest.fixture(scope="module")
def llama_cpp_python(smollm2: Path) -> Iterator[str]:
    """The base URL of a running ``llama_cpp.server`` serving SmolLM2; skips without one."""
    python = os.environ.get(PYTHON_ENV, "").strip()
    if not python:
        pytest.skip(f"{PYTHON_ENV} names no Python with llama-cpp-python[server] (see the doc)")
    probe = subprocess.run([python, "-c", "import llama_cpp.server"], capture_output=True)
    if probe.returncode != 0:
        pytest.fail(f"{python} cannot import llama_cpp.server: {probe.stderr.decode()[-400:]}")
    port = free_port()
    options = {"--host": "127.0.0.1", "--port": str(port), "--n_ctx": "4096", "--seed": "1"}
    options |= {"--n_threads": "2", "--chat_format": "chatml-function-calling"}
    argv = [python, "-m", "llama_cpp.server", "--model", str(smollm2)]
    server = subprocess.Popen(
        [*argv, *(part for pair in options.items() for part in pair)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start (exit {server.poll()})")
            time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(10)


@pytest.fixture
def lcp_env(agent_env: dict[str, str], llama_cpp_python: str, tmp_path: Path) -> dict[str, str]:
    """The agent's environment with a config file whose provider ``lcp`` is that server."""
    # A one-line system prompt: behind the built-in one (about 5 KB with the tool schemas)
    # SmolLM2-135M answers in prose instead of calling the tool it is asked to call.
    prompt = tmp_path / "system.md"
    prompt.write_text("You are a coding agent.\n", encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(
        "[providers.lcp]\n"
        f'base_url = "{llama_cpp_python}"\n'
        'models = ["smollm2"]\n'
        "context_window = 4096\n"
        "max_output_tokens = 200\n"
        "max_retries = 0\n"
        "[agent]\n"
        f'system_prompt_file = "{prompt}"\n',
        encoding="utf-8",
    )
    return {**agent_env, "ACP_AGENT_CONFIG": str(config)}


def lcp_command() -> list[str]:
    return agent_command("--model", "lcp:smollm2")


async def test_a_streamed_answer_survives_a_second_request_during_the_stream(
    lcp_env: dict[str, str], state_dir: Path, workspace: Path, llama_cpp_python: str
) -> None:
    """A request of another client arrives while the agent streams; the answer still ends well.

    llama-cpp-python serves one request at a time and, when another arrives during a stream,
    breaks the first connection after its ``[DONE]`` (the issue's report): the agent must treat
    what came before ``[DONE]`` as the complete answer.
    """
    text = "Say hello."
    async with recorded_agent(command=lcp_command(), env=lcp_env) as agent:
        sid = await agent.handshake(workspace)
        running = asyncio.create_task(agent.prompt_text(sid, text))
        await wait_until(
            lambda: (
                running.done()
                or "agent_message_chunk" in update_kinds(turn_updates_so_far(agent, sid))
            ),
            "a first chunk",
            FIRST_OUTPUT_S,
        )
        async with httpx.AsyncClient(timeout=120) as other:
            body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8}
            second = asyncio.create_task(
                other.post(f"{llama_cpp_python}/chat/completions", json=body)
            )
            response = await running
            assert (await second).status_code == 200
    assert response.stop_reason in ("end_turn", "max_tokens")
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == [
        {"end_turn": "completed"}.get(response.stop_reason, response.stop_reason)
    ]


async def test_b_the_agents_tool_history_is_accepted_where_null_content_is_refused(
    llama_cpp_python: str,
) -> None:
    """The request that follows a tool call, as the agent's own wire code encodes it, is
    answered; the same request with the assistant's ``content`` set to ``null`` (what OpenAI's
    reference shape allows) is the 500 the issue reported.

    The history is built rather than obtained from the model: SmolLM2-135M behind the agent's
    full prompt answers in prose where it is asked to call a tool (tried with the built-in and
    a one-line system prompt), so a turn cannot be relied on to produce the call.
    """
    spec = ToolSpec("read_file", "Read a file", TOOL["function"]["parameters"])  # type: ignore[index]
    call = AssistantTurn([ToolCallPart("c1", "read_file", {"path": "notes.txt"})])
    result = ToolTurn("c1", [TextContent(text="The secret word is banana.")], is_error=False)
    prompt = UserTurn([TextContent(text="Read notes.txt.")], source(SourceKind.USER))
    request = ModelRequest("s", 1, 2, [prompt, call, result], [spec])
    body = json.loads(encode_request("smollm2", request, None, 16))
    assert body["messages"][1]["content"] == ""
    refused = json.loads(json.dumps(body))
    refused["messages"][1]["content"] = None
    async with httpx.AsyncClient(timeout=120) as client:
        url = f"{llama_cpp_python}/chat/completions"
        answered = await client.post(url, json={**body, "stream": False})
        broken = await client.post(url, json={**refused, "stream": False})
    assert answered.status_code == 200, answered.text
    assert broken.status_code == 500, (broken.status_code, broken.text[:300])
