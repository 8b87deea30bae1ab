"""The real agent with ``--model gguf:SmolLM2-135M``: protocol and wire behaviour, live.

Each test spawns ``python -m acp_agent --model gguf:PATH`` and drives it with the official
Python ACP client (``recorded_agent``: every frame is validated against the ACP schema and the
agent must exit 0 when its stdin closes). The model is tiny and answers poorly; the assertions
are about what the agent does with a real llama.cpp behind the real OpenAI-compatible wire code
(streaming, cancelling, replay, tool loop, window overflow), never about what the model says.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, RequestError

from tests.integration.support import (
    JOURNAL,
    answer_index,
    assert_nothing_after,
    check_journal,
    session_path,
    tool_trace,
    turn_updates,
    turn_updates_so_far,
    update_kinds,
    wait_until,
)
from tests.live.conftest import gguf_command, record_timing, second_step_called
from tests.support.recording import RecordedAgent, RecordingClient, recorded_agent

pytestmark = [pytest.mark.live, pytest.mark.subprocess, pytest.mark.timeout(300)]

FIRST_OUTPUT_S = 180.0
"""Model load plus prompt evaluation plus a first token, on a loaded 2-core machine."""


def load_seconds(agent: RecordedAgent) -> float | None:
    """The model load time the agent logged (``gguf_server_started``), if it did."""
    found = re.search(rb'"load_ms":\s*(\d+)', agent.stderr)
    return int(found.group(1)) / 1000 if found else None


def message_chunks(agent: RecordedAgent, session_id: str) -> list[str]:
    return [
        u["content"]["text"]
        for u in turn_updates_so_far(agent, session_id)
        if u["sessionUpdate"] == "agent_message_chunk"
    ]


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process and all its threads (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def cpu_rate(pid: int, seconds: float) -> float:
    """CPU seconds per second the process used over the next ``seconds``."""
    before, started = cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(seconds)
    return (cpu_seconds(pid) - before) / (time.monotonic() - started)


# --- (a) a streamed answer --------------------------------------------------------------------


async def test_a_streamed_answer_ends_end_turn(
    smollm2: Path, workspace: Path, state_dir: Path, brief_env: dict[str, str]
) -> None:
    """Then SIGTERM stops the agent (exit 0): llama.cpp's server, which sets SIGINT/SIGTERM
    handlers of its own in some versions, left the agent's in place."""
    async with recorded_agent(command=gguf_command(smollm2), env=brief_env) as agent:
        sid = await agent.handshake(workspace)
        sent = time.monotonic()
        prompt = asyncio.create_task(agent.prompt_text(sid, "Say hello."))
        await wait_until(lambda: bool(message_chunks(agent, sid)), "a chunk", FIRST_OUTPUT_S)
        first_chunk = time.monotonic() - sent
        response = await prompt
        total = time.monotonic() - sent
        updates = turn_updates(agent, sid, "Say hello.")
        assert_nothing_after(agent, sid, "Say hello.")
        agent.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        exit_code = await asyncio.wait_for(agent.process.wait(), 10)
        exited = time.monotonic() - signalled
    load = load_seconds(agent)
    assert load is not None, "no gguf_server_started line on the agent's stderr"
    record_timing(
        "a_streamed_answer",
        model_load=load,
        first_chunk=first_chunk,
        first_chunk_after_load=first_chunk - load,
        answer=total,
        exit_after_sigterm=exited,
    )
    assert exit_code == 0
    text = agent.client.agent_text(sid)
    assert response.stop_reason == "end_turn", f"{len(text)} characters: {text[:500]!r}"
    assert set(update_kinds(updates)) == {"agent_message_chunk"}, update_kinds(updates)
    assert len(updates) > 1, "the answer came in one piece: not streamed"
    assert text.strip(), "an empty answer"
    journal = check_journal(state_dir, sid, workspace)
    (assistant,) = journal.of_type("assistant/message")
    assert assistant["content"] == [{"type": "text", "text": text}]
    assert journal.end_reasons() == ["completed"]


# --- (b) cancel mid-stream ----------------------------------------------------------------------


async def test_b_cancel_mid_stream_answers_cancelled_and_stops_the_generation(
    smollm2: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    """``cancelled`` at once, and llama.cpp stops: the agent's CPU use falls to about nothing.

    llama.cpp runs in the agent's process, so its decoding threads are the agent's CPU time;
    the rate while streaming is measured first, so a machine too loaded to tell shows as such.
    """
    text = "Write a very long story about a dragon who learns to fly. Use many chapters."
    async with recorded_agent(command=gguf_command(smollm2), env=agent_env) as agent:
        pid = agent.process.pid
        sid = await agent.handshake(workspace)
        running = asyncio.create_task(agent.prompt_text(sid, text))
        await wait_until(lambda: len(message_chunks(agent, sid)) >= 3, "chunks", FIRST_OUTPUT_S)
        busy = await cpu_rate(pid, 1.0)
        assert not running.done(), "the story ended before the cancel: make the prompt longer"
        await agent.conn.cancel(session_id=sid)
        cancelled_at = time.monotonic()
        response = await running
        took = time.monotonic() - cancelled_at
        await asyncio.sleep(0.5)
        idle = await cpu_rate(pid, 1.5)
        assert_nothing_after(agent, sid, text)
    record_timing("b_cancel", answer_after_cancel=took, cpu_streaming=busy, cpu_after=idle)
    assert response.stop_reason == "cancelled"
    assert took < 1.0, f"the cancel was answered after {took:.2f} s"
    assert busy > 0.3, f"only {busy:.2f} CPU-s/s while streaming: too loaded to tell"
    assert idle < min(0.15, busy / 4), (
        f"{idle:.2f} CPU-s/s after the cancel ({busy:.2f} while streaming): llama.cpp is "
        "still generating"
    )
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["cancelled"]


# --- (c) queued prompts, then session/load elsewhere --------------------------------------------


async def test_c_two_queued_prompts_replay_after_session_load_in_a_new_process(
    smollm2: Path, workspace: Path, state_dir: Path, brief_env: dict[str, str]
) -> None:
    prompts = ["Say hello.", "Say hello again."]
    started = time.monotonic()
    async with recorded_agent(command=gguf_command(smollm2), env=brief_env) as agent:
        sid = await agent.handshake(workspace)
        first = asyncio.create_task(agent.prompt_text(sid, prompts[0]))
        second = asyncio.create_task(agent.prompt_text(sid, prompts[1]))
        answers = [await first, await second]
        assert answer_index(agent, prompts[0]) < answer_index(agent, prompts[1])
        live = [
            "".join(u["content"]["text"] for u in turn_updates(agent, sid, prompts[0])),
            "".join(
                u["content"]["text"]
                for u in turn_updates(agent, sid, prompts[1], answer_index(agent, prompts[0]))
            ),
        ]
    both = time.monotonic() - started
    assert [a.stop_reason for a in answers] == ["end_turn", "end_turn"]
    assert all(text.strip() for text in live), live

    loaded_at = time.monotonic()
    async with recorded_agent(command=gguf_command(smollm2), env=brief_env) as loader:
        await loader.conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=loader.client.capabilities()
        )
        await loader.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
    record_timing("c_queued_then_load", two_turns=both, load_process=time.monotonic() - loaded_at)
    replayed = loader.transcript.session_updates(sid)
    users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert users == prompts
    turns: list[str] = []
    for update in replayed:
        if update["sessionUpdate"] == "user_message_chunk":
            turns.append("")
        elif update["sessionUpdate"] == "agent_message_chunk":
            turns[-1] += update["content"]["text"]
    assert turns == live
    assert load_seconds(loader) is None, "session/load started the model: nothing needed it"
    assert check_journal(state_dir, sid, workspace).end_reasons() == ["completed", "completed"]


# --- (d) a tool round trip ----------------------------------------------------------------------

TOOLS_TEMPLATE = Path(__file__).with_name("chatml_tools.jinja")


async def test_d_a_tool_call_round_trips(
    smollm2: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    """A ``tool_call`` update, its result, and a second model request in the same turn.

    Whatever the model picks (a 135M model picks poor arguments, or another tool) the loop is
    the same, so only the loop is checked. SmolLM2's own chat template has no tools, which makes
    llama.cpp drop them (``acp-agent doctor`` says so): the test replaces it with
    ``chatml_tools.jinja`` and asks for ``tool_choice: "required"``, which that template makes
    llama.cpp's grammar enforce (see the template's comment). "required" holds for every request
    of the turn, so the second request calls a tool again: the test waits until the journal
    shows a call made by that second request, then cancels the turn.
    """
    (workspace / "notes.txt").write_text("The secret word is banana.\n", encoding="utf-8")
    env = {
        **agent_env,
        "ACP_AGENT_GGUF_CHAT_TEMPLATE": str(TOOLS_TEMPLATE),
        "ACP_AGENT_GGUF_TOOL_CHOICE": "required",
    }
    text = "Call the read_file tool to read notes.txt."
    started = time.monotonic()
    async with recorded_agent(
        RecordingClient(real_fs=True), gguf_command(smollm2), env=env
    ) as agent:
        sid = await agent.handshake(workspace)
        running = asyncio.create_task(agent.prompt_text(sid, text))
        journal_file = session_path(state_dir, sid) / JOURNAL
        await wait_until(
            lambda: second_step_called(journal_file) or running.done(),
            "a tool call from the model request after the first tool result",
            2 * FIRST_OUTPUT_S,
        )
        assert not running.done(), f"the turn ended first: {running.result()}"
        await agent.conn.cancel(session_id=sid)
        response = await running
        updates = turn_updates(agent, sid, text)
    record_timing("d_tool_round_trip", turn=time.monotonic() - started)
    assert response.stop_reason == "cancelled"
    trace = tool_trace(updates)
    assert trace and trace[0][0] == "tool_call", trace
    call_id = trace[0][1]
    ends = [status for kind, cid, status in trace if cid == call_id and kind == "tool_call_update"]
    assert ends and ends[-1] in ("completed", "failed"), trace
    journal = check_journal(state_dir, sid, workspace)
    (turn,) = journal.turns()
    types = [event["type"] for event in turn]
    assert types.index("tool/call") < types.index("tool/result"), types
    steps = [event["data"]["step"] for event in turn if event["type"] == "step/start"]
    assert len(steps) >= 2, f"no second model request after the tool result: {types}"
    assert journal.end_reasons() == ["cancelled"]


# --- (e) a prompt far beyond the window -------------------------------------------------------


async def test_e_an_overflowing_prompt_is_refused_clearly_and_the_next_one_answered(
    smollm2: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    huge = "Repeat after me: " + "word " * 6000  # about 6000 tokens, the window is 4096
    async with recorded_agent(command=gguf_command(smollm2), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        started = time.monotonic()
        refusal = await overflow_answer(agent, sid, huge)
        refused_after = time.monotonic() - started
        assert "the context window was exceeded" in refusal, refusal
        started = time.monotonic()
        try:
            after = await agent.prompt_text(sid, "Say hello.")
        except RequestError as error:
            pytest.fail(f"the next prompt failed too: {error} {error.data or ''}")
        finally:
            record_timing(
                "e_overflow", refused_after=refused_after, next=time.monotonic() - started
            )
    # Answered normally: the 135M model may talk until the output bound (max_tokens), which is
    # an answer too; what matters is that the prompt fit and the turn completed.
    assert after.stop_reason in ("end_turn", "max_tokens")
    journal = check_journal(state_dir, sid, workspace)
    types = journal.types()
    assert "session/compaction" in types, types
    assert journal.end_reasons()[-1] == {"end_turn": "completed"}.get(
        after.stop_reason, after.stop_reason
    ), journal.end_reasons()


async def overflow_answer(agent: RecordedAgent, session_id: str, text: str) -> str:
    """What the client is told about an overflowing prompt: the error, or the agent's message."""
    try:
        response = await agent.prompt_text(session_id, text)
    except RequestError as error:
        return f"{error} {error.data or ''}"
    return f"{response.stop_reason}: {agent.client.agent_text(session_id)}"
