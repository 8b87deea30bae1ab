"""What ACP (``@agentclientprotocol/sdk`` 2.4.0) made stable, and its unstable session methods,
over the wire with the official TypeScript SDK as the client (docs/contract.md §9).

``ts_protocol_stable.mjs`` uses the SDK's stable entrypoint; every frame each agent wrote is
validated against the *stable* schema (``schema.json``). ``ts_protocol_unstable.mjs`` uses
``@agentclientprotocol/sdk/unstable`` for ``session/set_title``, ``session/status``,
``session/archive`` / ``unarchive``, ``session/list``'s ``archived`` filter and
``PromptResponse.usage``; its frames are validated against ``schema.unstable.json``. The SDK
itself also checks what it receives (its zod validators), on both runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.sandbox.policy import SandboxPolicy
from tests.clients.support import NPM_PREFIX, client_env, node, require
from tests.clients.test_ts_sdk import validate_wire
from tests.integration.support import check_journal, write_script
from tests.model.loopback import Reply, loopback, rate_limited
from tests.sandbox.support import DEFAULT_POLICY
from tests.support.acp_schema import AcpSchema, schema_path
from tests.support.process import agent_command
from tests.support.requests import read_requests
from tests.support.transcript import without_seq

pytestmark = pytest.mark.subprocess

HERE = Path(__file__).parent
KEY = "test-key-1b2c3d4e5f"

# The main agent's script: one line per model request, in the order the stable client drives it.
MAIN_SCRIPT: tuple[dict[str, Any], ...] = (
    {
        "toolCalls": [
            {"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}},
            {
                "id": "q1",
                "name": "ask_user",
                "arguments": {"question": "Tabs or spaces?", "options": ["tabs", "spaces"]},
            },
        ]
    },
    {"toolCalls": [{"id": "q2", "name": "ask_user", "arguments": {"question": "Anything else?"}}]},
    {"text": "noted: tabs"},
    {"toolCalls": [{"id": "q3", "name": "ask_user", "arguments": {"question": "Still there?"}}]},
    {
        "toolCalls": [
            {"id": "w1", "name": "write_file", "arguments": {"path": "out.txt", "content": "x"}}
        ]
    },
    {"toolCalls": [{"id": "r2", "name": "read_file", "arguments": {"path": "slow.txt"}}]},
    {"toolCalls": [{"id": "x1", "name": "run_command", "arguments": {"command": "sleep 30"}}]},
    {"chunks": ["partial"], "hang": True},
    {"chunks": ["busy"], "hang": True},
)


def run_node(script: Path, *args: str, env: dict[str, str]) -> dict[str, Any]:
    import subprocess

    completed = subprocess.run(
        [node(), str(script), str(require(NPM_PREFIX / "package.json").parent), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert completed.returncode == 0, f"{completed.stdout[-2000:]}\n{completed.stderr[-6000:]}"
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


def with_env(argv: list[str], **env: str) -> list[str]:
    return ["env", *(f"{k}={v}" for k, v in env.items()), *argv]


def updates(run: dict[str, Any], session_id: str | None = None) -> list[dict[str, Any]]:
    return [
        p["update"]
        for p in run["log"]["updates"]
        if session_id is None or p["sessionId"] == session_id
    ]


def notices(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [u for u in updates(run) if u["sessionUpdate"] == "notice"]


def agent_methods(run: dict[str, Any]) -> list[tuple[str, Any]]:
    """(method, params) of every call the agent wrote."""
    frames = [json.loads(line) for line in run["wire"]["agent"]]
    return [(f["method"], f.get("params")) for f in frames if "method" in f]


@pytest.fixture(scope="module")
def unstable_schema() -> AcpSchema:
    return AcpSchema.load(schema_path().with_name("schema.unstable.json"))


async def test_stable_items_with_the_stable_typescript_client(
    tmp_path: Path, home: Path, workspace: Path, state_dir: Path, acp_schema: AcpSchema
) -> None:
    (workspace / "notes.txt").write_text("hello from disk\n")
    (workspace / "slow.txt").write_text("never read\n")
    main_log, faults_log = tmp_path / "main-requests.jsonl", tmp_path / "faults-requests.jsonl"
    main = with_env(
        agent_command("--model", f"script:{write_script(tmp_path / 'main.jsonl', *MAIN_SCRIPT)}"),
        ACP_AGENT_SCRIPT_REQUESTS=str(main_log),
    )
    hello = write_script(tmp_path / "hello.jsonl", {"text": "hi"})
    faults = with_env(
        agent_command("--model", f"script:{hello}"),
        ACP_AGENT_JOURNAL_FAULTS="fsync:eio@2",  # the first flush after the header fails once
        ACP_AGENT_SCRIPT_REQUESTS=str(faults_log),
    )
    fallback = agent_command("--model", f"script:{hello}")
    async with loopback(rate_limited(20), Reply("text.sse")) as server:
        retry = with_env(
            agent_command("--model", "openai:gpt-test"),
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY=KEY,
        )
        agents = {"main": main, "retry": retry, "faults": faults, "fallback": fallback}
        env = client_env(home, state_dir)
        summary = await anyio.to_thread.run_sync(
            lambda: run_node(
                HERE / "ts_protocol_stable.mjs",
                str(workspace),
                str(state_dir),
                json.dumps(agents),
                env=env,
            )
        )
        assert len(server.requests) == 2  # the 429, then the answer
    for run in summary.values():
        assert run["exitCode"] == 0
        validate_wire(run["wire"], acp_schema)  # the stable schema, $/cancel_request included

    run = summary["main"]
    sid = run["sessionId"]
    caps = run["init"]["agentCapabilities"]
    assert caps["sessionCapabilities"]["delete"] == {}
    assert "logout" not in caps.get("auth", {})  # keys come from the environment: docs/clients.md

    # ToolCall.name / ToolCallUpdate.name (schema v1 ToolCall): on the call and every update.
    tool_updates = [
        u for u in updates(run, sid) if u["sessionUpdate"] in ("tool_call", "tool_call_update")
    ]
    names = {(u["toolCallId"], u["name"]) for u in tool_updates}
    assert {("r1", "read_file"), ("q1", "ask_user"), ("w1", "write_file")} <= names
    assert all(u.get("name") for u in tool_updates), tool_updates

    # ask_user: elicitation/create in form mode, tied to the session and the tool call.
    asks = run["log"]["elicitations"]
    assert [(a["mode"], a["sessionId"], a["toolCallId"], a["message"]) for a in asks] == [
        ("form", sid, "q1", "Tabs or spaces?"),
        ("form", sid, "q2", "Anything else?"),
        ("form", sid, "q3", "Still there?"),
    ]
    choice = asks[0]["requestedSchema"]["properties"]["answer"]
    assert [o["const"] for o in choice["oneOf"]] == ["tabs", "spaces"]
    assert "oneOf" not in asks[1]["requestedSchema"]["properties"]["answer"]
    assert run["asked"] == "end_turn"
    seen = read_requests(main_log)
    results = [m for r in seen for m in r["messages"] if m["role"] == "tool"]
    by_call = {m["callId"]: m["content"][0]["text"] for m in results}
    assert by_call["q1"] == "The user answered: tabs"
    assert by_call["q2"].startswith("The user declined to answer")
    assert "ask_user" in seen[0]["tools"]

    # $/cancel_request for the agent's own requests when their turn is cancelled.
    for key, method in (
        ("cancelledAsk", "elicitation/create"),
        ("cancelledPermission", "session/request_permission"),
        ("cancelledRead", "fs/read_text_file"),
        ("cancelledTerminal", "terminal/wait_for_exit"),
    ):
        assert run[key] == {"waiting": method, "stopReason": "cancelled"}
    cancelled_methods = [
        "elicitation/create",
        "session/request_permission",
        "fs/read_text_file",
        "terminal/wait_for_exit",
    ]
    assert run["log"]["aborted"] == cancelled_methods
    frames = [json.loads(line) for line in run["wire"]["agent"]]
    request_ids = {f["id"]: f["method"] for f in frames if "method" in f and "id" in f}
    cancelled = [p["requestId"] for m, p in agent_methods(run) if m == "$/cancel_request"]
    assert [request_ids[i] for i in cancelled] == cancelled_methods
    assert not (workspace / "out.txt").exists()
    # The cancelled command's terminal is still killed and released (not cancelled).
    # Created with the sandbox's argv (``bwrap … -- /bin/sh -c …``) where one starts.
    shell = "sh" if DEFAULT_POLICY is SandboxPolicy.OFF else "bwrap"
    assert [[m, Path(a).name if m == "create" else a] for m, a in run["log"]["terminals"]] == [
        ["create", shell],
        ["wait_for_exit", "t1"],
        ["kill", "t1"],
        ["release", "t1"],
    ]

    # The client's $/cancel_request for its prompt ends it like session/cancel.
    assert run["cancelledByRequest"] == "cancelled"
    client_cancels = [m for m in run["wire"]["client"] if m.get("method") == "$/cancel_request"]
    assert len(client_cancels) == 1

    # session/delete: busy (nothing lost), done, then unknown (-32002).
    deleted = run["delete"]
    assert deleted["refused"]["code"] == -32602
    assert deleted["refused"]["data"] == {"reason": "session_busy", "sessionId": sid}
    assert deleted["busyStop"] == "cancelled"
    assert deleted["deleted"] == {}
    assert sid not in deleted["listed"] and run["kept"] in deleted["listed"]
    # The SDK hands a -32002 to session/delete back as a success (treatSessionNotFoundAsSuccess);
    # the wire shows what the agent answered.
    assert deleted["again"] is None
    delete_ids = [m["id"] for m in run["wire"]["client"] if m.get("method") == "session/delete"]
    answers = {f["id"]: f for f in frames if "method" not in f}
    assert [answers[i].get("error", {}).get("code") for i in delete_ids] == [-32602, None, -32002]
    assert not (state_dir / "sessions" / sid).exists()
    assert not [p for p in (state_dir / "sessions").iterdir() if p.name.startswith(".")]

    # notice: a provider retry, a journal error (besides the extension), a model fallback.
    (retried,) = notices(summary["retry"])
    assert retried["severity"] == "warning"
    assert retried["_meta"]["acp_agent"]["kind"] == "model_retry"
    assert "HTTP 429" in retried["description"]
    faulted = summary["faults"]
    (journal_notice,) = notices(faulted)
    assert journal_notice["_meta"]["acp_agent"]["kind"] == "journal_error"
    assert journal_notice["severity"] == "error"
    assert [m for m, _ in agent_methods(faulted)].count("_acp_agent/journal_error") == 1
    assert "ask_user" not in read_requests(faults_log)[0]["tools"]  # no elicitation.form
    quiet = summary["noNotices"]
    assert notices(quiet) == []  # no session.notices: no notice, the extension still goes
    assert [m for m, _ in agent_methods(quiet)].count("_acp_agent/journal_error") == 1
    (fell_back,) = notices(summary["fallback"])
    assert fell_back["_meta"]["acp_agent"]["kind"] == "model_fallback"
    assert "openai:not-offered-here" in fell_back["description"]

    journal = check_journal(state_dir, run["kept"], workspace)
    assert journal.end_reasons() == []


async def test_unstable_items_with_the_unstable_typescript_client(
    tmp_path: Path,
    home: Path,
    workspace: Path,
    state_dir: Path,
    unstable_schema: AcpSchema,
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {"text": "first", "usage": {"inputTokens": 120, "outputTokens": 8}},
        {"text": "second"},
    )
    first = agent_command("--model", f"script:{script}")
    second = agent_command("--model", f"script:{script}")
    env = client_env(home, state_dir)
    summary = await anyio.to_thread.run_sync(
        lambda: run_node(
            HERE / "ts_protocol_unstable.mjs",
            str(workspace),
            json.dumps(first),
            json.dumps(second),
            env=env,
        )
    )
    for run in summary.values():
        assert run["exitCode"] == 0
        validate_wire(run["wire"], unstable_schema)

    run = summary["first"]
    sid, other = run["sessionId"], run["otherId"]
    caps = run["init"]["agentCapabilities"]["sessionCapabilities"]
    assert {"title", "status", "archive", "delete"} <= caps.keys()

    # PromptResponse.usage (unstable Usage): the turn's tokens.
    assert run["usage"] == {"totalTokens": 128, "inputTokens": 120, "outputTokens": 8}

    # session/set_title: normalized, answered, told as session_info_update, durable.
    assert run["titled"] == {"title": "Renamed by the client"}
    assert {"sessionUpdate": "session_info_update", "title": "Renamed by the client"} in [
        without_seq(p["update"]) for p in run["log"]["updates"] if p["sessionId"] == other
    ]
    assert run["emptyTitle"]["code"] == -32602
    assert run["unknownTitle"]["code"] == -32002
    assert (state_dir / "sessions" / other / "title").read_text() == "Renamed by the client"
    assert (state_dir / "sessions" / other / "title.client").exists()
    # The session's first prompt came after: it did not replace the client's title.
    assert run["titleAfterPrompt"] == "Renamed by the client"

    # session/status: open here, saved once closed, unknown -32002 with the id.
    assert run["status"] == {"open": "open", "closed": "saved"}
    assert run["unknownStatus"]["code"] == -32002
    assert run["unknownStatus"]["data"] == {"sessionId": "no-such-session"}

    # session/archive (of an open session: closed first) / the archived filter.
    archive = run["archive"]
    assert archive["answer"] == {}
    assert archive["statusAfter"] == "saved"
    assert archive["lists"]["default"] == [[sid, False]]
    assert sorted(archive["lists"]["include"]) == sorted([[sid, False], [other, True]])
    assert archive["lists"]["only"] == [[other, True]]
    assert archive["badFilter"]["code"] == -32602
    assert archive["again"] == {}
    assert archive["unknown"]["code"] == -32002

    # Durable: a new agent process lists it archived; unarchive brings it back.
    second_run = summary["second"]
    assert second_run["only"] == [[other, True]]
    assert second_run["unarchived"] == {}
    assert sorted(second_run["default"]) == sorted([[sid, False], [other, False]])
    assert not (state_dir / "sessions" / other / "archived").exists()
    assert (state_dir / "sessions" / other / "journal.jsonl").is_file()
