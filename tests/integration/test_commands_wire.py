"""Slash commands and skills over the ACP wire (docs/contract.md §9 "Slash commands", "Skills").

The real agent process with the script model; the official Python SDK client (``recorded_agent``)
or raw pipes (``RawAgent``); every frame validated against the official ACP v1 schema after the
run. What the model was sent is read from the script model's request log (contract §5).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from acp_agent.commands.words import INIT_INSTRUCTION, REVIEW_INSTRUCTION
from tests.integration.support import check_journal, serve_command, write_script
from tests.support.recording import RawAgent, recorded_agent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess

BUILT_IN = [
    "compact",
    "init",
    "review",
    "status",
    "export",
    "model",
    "mode",
    "permissions",
    "undo",
    "tasks",
]


def user_messages(request: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("".join(b.get("text", "") for b in m["content"]), m["source"])
        for m in request["messages"]
        if m["role"] == "user"
    ]


def skill_file(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True)
    path = directory / "SKILL.md"
    path.write_text(text, encoding="utf-8")
    return path


def updates_of(frames: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        f["params"]["update"]
        for f in frames
        if f.get("method") == "session/update" and f["params"]["update"]["sessionUpdate"] == kind
    ]


def new_params(cwd: Path, sid: str = "s") -> dict[str, Any]:
    return {"cwd": str(cwd), "mcpServers": [], "_meta": {"acp_agent": {"sessionId": sid}}}


def prompt_params(text: str, sid: str = "s") -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


INIT = {"protocolVersion": 1, "clientCapabilities": {}}


async def test_skills_from_both_places_are_commands_listed_to_the_model_and_injected_first(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    config = tmp_path / "conf" / "config.toml"
    config.parent.mkdir()
    config.write_text("")
    skill_file(
        workspace / ".agents" / "skills" / "release",
        "---\nname: release\ndescription: Cut a release: bump, tag, notes\n---\n"
        "Bump the version in pyproject.toml, then write the notes.\n",
    )
    skill_file(
        config.parent / "skills" / "haiku",
        '---\nname: haiku\ndescription: "Answer in a haiku"\n---\nAnswer in 5-7-5.\n',
    )
    bad = skill_file(workspace / ".agents" / "skills" / "broken", "no front matter here\n")
    skill_file(  # a built-in's name: skipped, the built-in stays
        config.parent / "skills" / "status", "---\nname: status\ndescription: x\n---\nbody\n"
    )
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", {"text": "5-7-5"}, {"text": "released"})
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    command = serve_command(script, "--config", str(config))
    async with recorded_agent(command=command, env=env) as agent:
        sid = await agent.handshake(workspace)
        first = await agent.prompt_text(sid, "/haiku the journal")
        second = await agent.prompt_text(sid, "/release")
    assert first.stop_reason == second.stop_reason == "end_turn"

    # advertised: the built-ins, then the good skills, each with a hint
    (advertised,) = updates_of(agent.transcript.agent_frames, "available_commands_update")
    commands = advertised["availableCommands"]
    assert [c["name"] for c in commands] == [*BUILT_IN, "haiku", "release"]
    assert commands[-1] == {
        "name": "release",
        "description": "Cut a release: bump, tag, notes",
        "input": {"hint": "what to do with the skill"},
    }
    assert "input" not in commands[BUILT_IN.index("status")]  # takes no input
    # a bad skill and a shadowing one: a clear log line each, nothing else
    stderr = agent.stderr.decode()
    assert "skill_skipped" in stderr and str(bad) in stderr and "no front matter" in stderr
    assert "already a built-in command" in stderr

    # the model: the skills' names and descriptions in the system prompt, never their bodies
    requests = read_requests(log)
    assert len(requests) == 2
    system = requests[0]["system"]
    assert "- /haiku: Answer in a haiku" in system
    assert "- /release: Cut a release: bump, tag, notes" in system
    assert "5-7-5." not in system and "pyproject" not in system
    # the body as context with source skill BEFORE the prompt; the prompt exactly REST
    assert user_messages(requests[0])[-2:] == [
        ("Answer in 5-7-5.", {"kind": "skill", "name": "haiku"}),
        ("the journal", {"kind": "user"}),
    ]
    # nothing typed after the command: the prompt is the command as typed
    assert user_messages(requests[1])[-2:] == [
        (
            "Bump the version in pyproject.toml, then write the notes.",
            {"kind": "skill", "name": "release"},
        ),
        ("/release", {"kind": "user"}),
    ]
    # the journal: the skill's message is history (out of turn, just before turn/start)
    journal = check_journal(state_dir, sid, workspace)
    types = journal.types()
    skill_at = next(
        i
        for i, e in enumerate(journal.events)
        if e["type"] == "user/message" and e["data"]["source"]["kind"] == "skill"
    )
    assert types[skill_at + 1 : skill_at + 3] == ["turn/start", "user/message"]
    # and the client saw it live, tagged with its source
    chunks = updates_of(agent.transcript.agent_frames, "user_message_chunk")
    assert [c["_meta"]["acp_agent"]["source"] for c in chunks] == [
        {"kind": "skill", "name": "haiku"},
        {"kind": "skill", "name": "release"},
    ]


async def test_status_is_answered_by_the_agent_without_a_model_request_and_not_journaled(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", {"text": "hello"})  # one line: one turn only
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with RawAgent(serve_command(script), env=env) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(workspace))
        await agent.request("session/prompt", prompt_params("hi"))
        before = check_journal(state_dir, "s", workspace).events
        answer = await agent.request("session/prompt", prompt_params("/status"))
        after = check_journal(state_dir, "s", workspace).events
    assert answer["result"] == {"stopReason": "end_turn"}
    assert len(read_requests(log)) == 1  # the turn's; /status asked no model
    assert after == before  # not journaled (commands/status.py says why)
    (status,) = [
        u
        for u in updates_of(agent.transcript.agent_frames, "agent_message_chunk")
        if u.get("_meta", {}).get("acp_agent", {}).get("command") == "status"
    ]
    text = status["content"]["text"]
    journal = state_dir / "sessions" / "s" / "journal.jsonl"
    for line in (
        "Session: s",
        f"Journal: {journal}",
        f"Model: script:{script}",
        "Mode: ask",
        "Thinking level: not offered here",
        "Context: ",
        "Tokens since this process opened the session: ",
        "Turns: 1",
    ):
        assert line in text, (line, text)


async def test_mode_and_model_are_typed_shortcuts_of_the_config_options(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "s.jsonl")
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(workspace))
        agent.skipped.clear()
        switched = await agent.request("session/prompt", prompt_params("/mode read-only"))
        told = list(agent.skipped)
        unknown = await agent.request("session/prompt", prompt_params("/mode yolo"))
        listed = await agent.request("session/prompt", prompt_params("/mode"))
        no_models = await agent.request("session/prompt", prompt_params("/model gpt-5"))
    assert switched["result"] == {"stopReason": "end_turn"}
    # the same notifications as session/set_mode: both ways a client tracks the mode
    (current,) = updates_of(told, "current_mode_update")
    assert current["currentModeId"] == "read-only"
    (options,) = updates_of(told, "config_option_update")
    mode = next(o for o in options["configOptions"] if o["id"] == "mode")
    assert mode["currentValue"] == "read-only"
    # an unknown name: -32602 whose message lists the modes there are
    assert unknown["error"]["code"] == -32602
    assert "unknown mode 'yolo'" in unknown["error"]["message"]
    assert "read-only, plan, ask, auto-edit, full-access" in unknown["error"]["message"]
    assert unknown["error"]["data"] == {"path": "$.prompt"}
    assert listed["result"] == {"stopReason": "end_turn"}
    # the script model is the only model here: nothing to switch to, said plainly
    assert no_models["error"]["code"] == -32602
    assert "offers no model to switch to" in no_models["error"]["message"]


async def test_model_switches_like_set_config_option_and_names_the_choices_when_unknown(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[providers.local]\nbase_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "LOCAL_LLM_KEY"\nmodels = ["qwen3", "qwen3-coder"]\n'
    )
    env = {**agent_env, "OPENAI_API_KEY": "unused", "LOCAL_LLM_KEY": "unused"}
    command = serve_command(write_script(tmp_path / "s.jsonl"), "--config", str(config))
    async with RawAgent(command, env=env) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(workspace))
        agent.skipped.clear()
        switched = await agent.request("session/prompt", prompt_params("/model local:qwen3"))
        told = list(agent.skipped)
        unknown = await agent.request("session/prompt", prompt_params("/model gpt-9"))
        status = await agent.request("session/prompt", prompt_params("/status"))
    assert switched["result"] == {"stopReason": "end_turn"}
    (options,) = updates_of(told, "config_option_update")
    model = next(o for o in options["configOptions"] if o["id"] == "model")
    assert model["currentValue"] == "local:qwen3"
    assert unknown["error"]["code"] == -32602
    assert "unknown model 'gpt-9'" in unknown["error"]["message"]
    assert "local:qwen3-coder" in unknown["error"]["message"]
    assert status["result"] == {"stopReason": "end_turn"}
    texts = [u["content"]["text"] for u in updates_of(agent.skipped, "agent_message_chunk")]
    assert any("Model: local:qwen3\n" in t for t in texts)


async def test_init_is_a_normal_turn_whose_edit_asks_permission(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    log = tmp_path / "requests.jsonl"
    write = {"path": "AGENTS.md", "content": "# Agents\n\nRun `make test`.\n"}
    script = write_script(
        tmp_path / "s.jsonl",
        {"toolCalls": [{"id": "w1", "name": "write_file", "arguments": write}]},
        {"text": "Wrote AGENTS.md"},
    )
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with recorded_agent(command=serve_command(script), env=env) as agent:
        sid = await agent.handshake(workspace)
        answer = await agent.prompt_text(sid, "/init keep it short")
    assert answer.stop_reason == "end_turn"
    first = read_requests(log)[0]
    assert user_messages(first)[-1] == (
        f"{INIT_INSTRUCTION}\n\nThe user adds: keep it short",
        {"kind": "user"},
    )
    (asked,) = agent.client.permission_requests  # the mode (ask) asked, as for any edit
    assert asked.tool_call.title is not None and "AGENTS.md" in asked.tool_call.title
    assert agent.client.written == {str(workspace / "AGENTS.md"): write["content"]}
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["completed"]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
    )


async def test_review_sends_the_diff_as_context_and_its_turn_is_read_only(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    git(workspace, "init", "-q")
    (workspace / "app.py").write_text("def f():\n    return 1\n")
    git(workspace, "add", "app.py")
    git(workspace, "commit", "-qm", "one")
    (workspace / "app.py").write_text("def f():\n    return 2\n")
    log = tmp_path / "requests.jsonl"
    edit = {"path": "app.py", "content": "oops\n"}
    script = write_script(
        tmp_path / "s.jsonl",
        {"toolCalls": [{"id": "w1", "name": "write_file", "arguments": edit}]},
        {"text": "f now returns 2; fine."},
        {"toolCalls": [{"id": "w2", "name": "write_file", "arguments": edit}]},
        {"text": "done"},
    )
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with recorded_agent(command=serve_command(script), env=env) as agent:
        sid = await agent.handshake(workspace)
        reviewed = await agent.prompt_text(sid, "/review")
        asked_during_review = list(agent.client.permission_requests)
        after = await agent.prompt_text(sid, "now edit it")
    assert reviewed.stop_reason == after.stop_reason == "end_turn"
    first = read_requests(log)[0]
    (diff, diff_source), (prompt, prompt_source) = user_messages(first)[-2:]
    assert diff_source == {"kind": "plugin", "name": "review"}
    assert "$ git diff HEAD" in diff and "-    return 1" in diff and "+    return 2" in diff
    assert " M app.py" in diff  # the status
    assert (prompt, prompt_source) == (REVIEW_INSTRUCTION, {"kind": "user"})
    # read-only: the write was refused without asking, and the file is untouched
    assert asked_during_review == []
    journal = check_journal(state_dir, sid, workspace)
    results = journal.of_type("tool/result")
    assert results[0]["isError"] is True
    assert "read-only" in results[0]["content"][0]["text"]
    assert (workspace / "app.py").read_text() == "def f():\n    return 2\n"
    # only that turn: the session's mode is still ask, so the next edit asks again
    assert len(agent.client.permission_requests) == 1
    modes = updates_of(agent.transcript.agent_frames, "current_mode_update")
    assert modes == []


async def test_review_with_nothing_to_review_asks_no_model(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    log = tmp_path / "requests.jsonl"
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with RawAgent(serve_command(write_script(tmp_path / "s.jsonl")), env=env) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(workspace))
        not_git = await agent.request("session/prompt", prompt_params("/review"))
        git(workspace, "init", "-q")
        clean = await agent.request("session/prompt", prompt_params("/review"))
    assert not_git["result"] == clean["result"] == {"stopReason": "end_turn"}
    assert read_requests(log) == []
    texts = [u["content"]["text"] for u in updates_of(agent.skipped, "agent_message_chunk")]
    assert any("not inside a git working tree" in t for t in texts)
    assert any("no uncommitted changes" in t for t in texts)


async def test_an_unknown_slash_word_is_an_ordinary_prompt(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", {"text": "ok"})
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with RawAgent(serve_command(script), env=env) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(workspace))
        answer = await agent.request("session/prompt", prompt_params("/usr/bin is a path"))
    assert answer["result"]["stopReason"] == "end_turn"
    (request,) = read_requests(log)
    assert user_messages(request)[-1] == ("/usr/bin is a path", {"kind": "user"})


async def test_status_is_answered_while_a_turn_runs(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"chunks": ["thinking"], "hang": True})
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(workspace))
        await agent.send(
            {"jsonrpc": "2.0", "id": 900, "method": "session/prompt", "params": prompt_params("go")}
        )
        streamed: list[dict[str, Any]] = []
        while not updates_of(streamed, "agent_message_chunk"):  # the turn is running
            streamed.append(await agent.recv())
        # the running turn hangs: /status is answered all the same, before it ends
        status = await agent.request("session/prompt", prompt_params("/status"))
        assert not any(f.get("id") == 900 for f in agent.skipped)
        await agent.notify("session/cancel", {"sessionId": "s"})
        while not any(f.get("id") == 900 for f in agent.skipped):
            agent.skipped.append(await agent.recv())
    assert status["result"] == {"stopReason": "end_turn"}
    (running,) = [f for f in agent.skipped if f.get("id") == 900]
    assert running["result"]["stopReason"] == "cancelled"
    texts = [u["content"]["text"] for u in updates_of(agent.skipped, "agent_message_chunk")]
    assert any("Turns: 1" in t for t in texts), texts  # the open turn counts
