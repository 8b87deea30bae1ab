"""Traces over OTLP/HTTP (contract §14): the real agent on the real ACP wire, a loopback receiver.

The agent runs as a subprocess with the script model and ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) pointed at ``receiver.receiving()``, which decodes each
``POST /v1/traces`` with the protocol's own protobuf message. What is asserted is what a
collector stores: span names, parents, attributes, events, the resource.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.integration.long_work import call, start, updates, wait_for_file
from tests.integration.support import prompt, request, serve_command, write_script
from tests.support.recording import RawAgent
from tests.telemetry.receiver import Received, Receiver, receiving

pytestmark = pytest.mark.subprocess
pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

SID = "traced"
NO_OTEL = {
    "OTEL_EXPORTER_OTLP_ENDPOINT": None,
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": None,
    "OTEL_SERVICE_NAME": None,
    "OTEL_RESOURCE_ATTRIBUTES": None,
    "OTEL_SDK_DISABLED": None,
    "OTEL_TRACES_EXPORTER": None,
}


def traced_env(agent_env: dict[str, str], **otel: str) -> dict[str, str | None]:
    return {**agent_env, **NO_OTEL, "OTEL_BSP_SCHEDULE_DELAY": "50", **otel}


def one(receiver: Receiver, name: str) -> Received:
    [span] = receiver.named(name)
    return span


def children(receiver: Receiver, parent: Received, name: str) -> list[Received]:
    return [s for s in receiver.named(name) if s.parent_span_id == parent.span_id]


async def test_a_turn_its_requests_its_tool_call_and_an_injection_are_exported(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    gate = workspace / "gate"  # in the workspace: the command's sandbox has its own /tmp
    usage = {"inputTokens": 120, "outputTokens": 7}
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [call("c1", "run_command", command=wait_for_file(gate))], "usage": usage},
        {"text": "done", "usage": {"inputTokens": 150, "outputTokens": 3}},
    )
    with receiving() as receiver:
        env = traced_env(agent_env, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
        async with RawAgent(serve_command(script), env=env) as agent:
            peer = await start(agent, workspace, SID)
            await agent.send(prompt(3, SID, "wait for the gate"))
            await peer.until(lambda: bool(updates(peer, SID, "tool_call")), 10, "the tool call")
            inject = {"sessionId": SID, "content": "the gate opens soon"}
            await agent.send(request(4, "_acp_agent/inject", inject))
            assert "result" in await peer.until_answered(4, 10)
            gate.touch()
            assert (await peer.until_answered(3, 20))["result"]["stopReason"] == "end_turn"
            await agent.close_stdin()
            await peer.to_the_end(10)
        receiver.wait_for(lambda r: bool(r.named("turn")))

    turn = one(receiver, "turn")
    assert turn.attributes["session.id"] == SID
    assert turn.attributes["turn.number"] == 1
    assert turn.attributes["turn.end_reason"] == "completed"
    assert turn.attributes["gen_ai.usage.input_tokens"] == 270
    assert turn.attributes["gen_ai.usage.output_tokens"] == 10
    assert turn.parent_span_id == ""  # a root: nothing ran around it
    requests = sorted(children(receiver, turn, "model.request"), key=lambda s: s.start_ns)
    assert [r.attributes["turn.step"] for r in requests] == [1, 2]
    assert len(receiver.named("model.request")) == 2
    for request_span, tokens in zip(requests, (120, 150), strict=True):
        assert request_span.trace_id == turn.trace_id
        assert request_span.attributes["session.id"] == SID
        assert request_span.attributes["gen_ai.request.model"] == "script"
        assert request_span.attributes["gen_ai.usage.input_tokens"] == tokens
        assert request_span.attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
        first = request_span.attributes["gen_ai.response.time_to_first_token_ms"]
        assert isinstance(first, float) and first >= 0
    [tool] = children(receiver, turn, "tool.call")
    assert tool.attributes["gen_ai.tool.name"] == "run_command"
    assert tool.attributes["gen_ai.tool.call.id"] == "c1"
    assert tool.attributes["tool.status"] == "ok"
    assert tool.attributes["session.id"] == SID
    assert requests[0].end_ns <= tool.start_ns <= tool.end_ns <= requests[1].start_ns
    injections = [attrs for name, attrs in turn.events if name == "injection"]
    assert injections == [{"source.kind": "client"}]
    assert turn.resource["service.name"] == "acp-agent"
    assert set(receiver.paths) == {"/v1/traces"}
    assert set(receiver.content_types) == {"application/x-protobuf"}


async def test_the_traces_endpoint_variable_is_used_as_is_and_the_end_flushes(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    # A batch delay of a minute: the spans can only come from the flush at the process's end.
    # The idle injection, with no turn open, is a span of its own.
    script = write_script(tmp_path / "script.jsonl", {"toolCalls": [call("c1", "nope")]}, {})
    with receiving() as receiver:
        env = traced_env(
            agent_env,
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{receiver.url}/v1/traces",
            OTEL_BSP_SCHEDULE_DELAY="60000",
            OTEL_SERVICE_NAME="editor-agent",
        )
        async with RawAgent(serve_command(script), env=env) as agent:
            peer = await start(agent, workspace, SID)
            await agent.send(request(3, "_acp_agent/inject", {"sessionId": SID, "content": "hi"}))
            assert "result" in await peer.until_answered(3, 10)
            await agent.send(prompt(4, SID, "call a tool that is not there"))
            assert (await peer.until_answered(4, 20))["result"]["stopReason"] == "end_turn"
            assert receiver.spans == []  # the batch is not due before the end
            await agent.close_stdin()
            await peer.to_the_end(10)

    turn = one(receiver, "turn")
    [tool] = children(receiver, turn, "tool.call")
    assert tool.attributes["gen_ai.tool.name"] == "nope"
    assert tool.attributes["tool.status"] == "error"
    assert tool.status == 2  # STATUS_CODE_ERROR
    injection = one(receiver, "injection")
    assert injection.attributes == {"session.id": SID, "source.kind": "client"}
    assert injection.end_ns < turn.start_ns
    assert turn.events == ()
    assert turn.resource["service.name"] == "editor-agent"


async def test_a_subagent_has_a_span_under_its_call_and_its_turns_under_it(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [call("a1", "agent", description="job A", prompt="look around")]},
        {"text": "nothing here"},
        {"text": "the subagent found nothing"},
    )
    with receiving() as receiver:
        env = traced_env(agent_env, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
        async with RawAgent(serve_command(script), env=env) as agent:
            peer = await start(agent, workspace, SID)
            await agent.send(prompt(3, SID, "delegate"))
            assert (await peer.until_answered(3, 20))["result"]["stopReason"] == "end_turn"
            await agent.close_stdin()
            await peer.to_the_end(10)

    turns = receiver.named("turn")
    [parent_turn] = [t for t in turns if t.attributes["session.id"] == SID]
    [agent_call] = children(receiver, parent_turn, "tool.call")
    assert agent_call.attributes["gen_ai.tool.name"] == "agent"
    [subagent] = children(receiver, agent_call, "subagent")
    child_id = subagent.attributes["subagent.session.id"]
    assert subagent.attributes["session.id"] == SID
    assert subagent.attributes["subagent.depth"] == 1
    assert subagent.attributes["subagent.is_error"] is False
    [child_turn] = children(receiver, subagent, "turn")
    assert child_turn.attributes["session.id"] == child_id != SID
    assert {t.trace_id for t in turns} == {parent_turn.trace_id}  # one trace, both sessions
    [child_request] = children(receiver, child_turn, "model.request")
    assert child_request.attributes["session.id"] == child_id


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_an_unreachable_collector_neither_breaks_a_turn_nor_the_ending(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    # The exporter retries from its own thread; the turns go on, and the ending abandons the
    # retries after telemetry.SHUTDOWN_S: the process exits 0 (RawAgent checks the status).
    script = write_script(tmp_path / "script.jsonl", {"text": "one"}, {"text": "two"})
    env = traced_env(agent_env, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{closed_port()}")
    log = tmp_path / "agent.log"
    async with RawAgent(
        serve_command(script, "--log-level", "info", "--log-file", str(log)), env=env
    ) as agent:
        peer = await start(agent, workspace, SID)
        for request_id in (3, 4):
            await agent.send(prompt(request_id, SID, f"turn {request_id}"))
            answer = await peer.until_answered(request_id, 20)
            assert answer["result"]["stopReason"] == "end_turn"
        await agent.close_stdin()
        await peer.to_the_end(15)
    assert '"event": "traces_enabled"' in log.read_text()


async def test_a_cancelled_tool_call_and_a_cancelled_request_say_so(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    never = workspace / "never"
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [call("c1", "run_command", command=wait_for_file(never))]},
        {"text": "thinking", "hang": True},
    )
    cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": SID}}
    with receiving() as receiver:
        env = traced_env(agent_env, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
        async with RawAgent(serve_command(script), env=env) as agent:
            peer = await start(agent, workspace, SID)
            await agent.send(prompt(3, SID, "wait for ever"))
            await peer.until(lambda: bool(updates(peer, SID, "tool_call")), 10, "the tool call")
            await agent.send(cancel)
            assert (await peer.until_answered(3, 20))["result"]["stopReason"] == "cancelled"
            await agent.send(prompt(4, SID, "think for ever"))
            chunks = lambda: bool(updates(peer, SID, "agent_message_chunk"))  # noqa: E731
            await peer.until(chunks, 10, "the first chunk")
            await agent.send(cancel)
            assert (await peer.until_answered(4, 20))["result"]["stopReason"] == "cancelled"
            await agent.close_stdin()
            await peer.to_the_end(10)

    first, second = sorted(receiver.named("turn"), key=lambda s: s.start_ns)
    assert [t.attributes["turn.end_reason"] for t in (first, second)] == ["cancelled"] * 2
    [tool] = children(receiver, first, "tool.call")
    assert tool.attributes["tool.status"] == "cancelled"
    [hung] = children(receiver, second, "model.request")
    assert hung.attributes["gen_ai.response.finish_reasons"] == ("cancelled",)
    assert "gen_ai.response.time_to_first_token_ms" in hung.attributes
