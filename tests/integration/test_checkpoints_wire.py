"""Checkpoints over the wire (docs/contract.md §11 "Checkpoints"): ``/undo`` and
``_acp_agent/rewind {restoreFiles, force}``.

The real agent process with the script model, raw pipes, the client's permission requests
answered by ``respond_to``; the edit tools and ``run_command`` run locally (the client advertises
no ``fs`` and no terminal), so they change the real workspace, recorded by real git in the shadow
repository under the state directory. The workspace is a real git repository whose ``.git`` is
compared byte for byte before and after.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.support import check_journal, read_jsonl, serve_command, write_script
from tests.support.hostile_git import make_hostile_repo, need_git
from tests.support.recording import RawAgent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess

INIT = {"protocolVersion": 1, "clientCapabilities": {}}
ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


def new_params(cwd: Path, sid: str) -> dict[str, Any]:
    return {"cwd": str(cwd), "mcpServers": [], "_meta": {"acp_agent": {"sessionId": sid}}}


def prompt(sid: str, text: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"toolCalls": [{"id": call_id, "name": name, "arguments": arguments}]}


class Permissions:
    """Answers every permission request with ``answer``; keeps them all."""

    def __init__(self, answer: dict[str, Any] = ALLOW) -> None:
        self.asked: list[dict[str, Any]] = []
        self.answer = answer

    def __call__(self, frame: dict[str, Any]) -> dict[str, Any] | None:
        if frame["method"] != "session/request_permission":
            return None
        self.asked.append(frame["params"])
        return self.answer


def tool_results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == "tool/result"]


@pytest.fixture(autouse=True)
def _git() -> None:
    need_git()


async def test_undo_asks_with_the_diff_restores_the_last_turn_and_tells_the_model(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "a.txt").write_text("one\n")
    command = "mkdir -p build && echo o > build/out.o && echo new > made.txt && rm a.txt.bak"
    (workspace / "a.txt.bak").write_text("backup\n")
    log = tmp_path / "requests.jsonl"
    script = write_script(
        tmp_path / "s.jsonl",
        call("w1", "write_file", path="a.txt", content="two\n"),
        call("r1", "run_command", command=command),
        {"text": "done"},
        {"text": "noted"},
    )
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    asked = Permissions()
    async with RawAgent(serve_command(script), env=env, respond_to=asked) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(workspace, "u"))
        await agent.request("session/prompt", prompt("u", "change things"))
        assert (workspace / "a.txt").read_text() == "two\n"
        undone = await agent.request("session/prompt", prompt("u", "/undo"))
        again = await agent.request("session/prompt", prompt("u", "/undo"))
        await agent.request("session/prompt", prompt("u", "and now?"))
    assert not (workspace / ".git").exists()  # no git repository: checkpoints work the same
    assert undone["result"] == {"stopReason": "end_turn"}
    assert (workspace / "a.txt").read_text() == "one\n"
    assert (workspace / "a.txt.bak").read_text() == "backup\n"
    assert not (workspace / "made.txt").exists()
    assert (workspace / "build" / "out.o").read_text() == "o\n"  # ignored: not recorded
    # the permission request of /undo shows each restore as an ACP diff
    undo_request = asked.asked[-1]
    assert undo_request["toolCall"]["title"] == "Undo the file changes of turn 1"
    diffs = {c["path"]: c for c in undo_request["toolCall"]["content"] if c["type"] == "diff"}
    assert diffs[str(workspace / "a.txt")]["oldText"] == "two\n"
    assert diffs[str(workspace / "a.txt")]["newText"] == "one\n"
    assert diffs[str(workspace / "made.txt")]["newText"] == ""
    assert diffs[str(workspace / "a.txt.bak")].get("oldText") is None
    assert str(workspace / "build" / "out.o") not in diffs
    assert len(asked.asked) == 3  # write, command, undo: the second /undo had nothing to ask
    # the journal: each change's checkpoint, then the undo as an out-of-turn message
    journal = check_journal(state_dir, "u", workspace)
    write, run = tool_results(journal.events)[:2]
    assert [c["files"] for c in write["checkpoints"]] == [["a.txt"]]
    assert run["checkpoints"][0]["files"] == ["a.txt.bak", "made.txt"]
    undo = next(
        e
        for e in journal.events
        if e["type"] == "user/message" and e["data"]["source"]["kind"] == "agent"
    )
    assert undo["data"]["source"] == {"kind": "agent", "name": "undo", "turn": 1}
    assert undo["seq"] < next(
        e["seq"] for e in journal.events if e["type"] == "turn/start" and e["data"]["turn"] == 2
    )
    # the model learns of it at its next request
    last = read_requests(log)[-1]
    texts = ["".join(b.get("text", "") for b in m["content"]) for m in last["messages"]]
    assert any(t.startswith("[/undo] The user reverted the file changes of turn 1") for t in texts)
    answers = [f for f in agent.skipped if f.get("method") == "session/update"]
    said = [
        u["params"]["update"]["content"]["text"]
        for u in answers
        if u["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    assert any(t.startswith("Undid the file changes of turn 1") for t in said)
    assert any(t.startswith("Nothing to undo") for t in said)
    assert again["result"] == {"stopReason": "end_turn"}


async def test_a_rejected_undo_changes_nothing(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "s.jsonl", call("w1", "write_file", path="f.txt", content="x\n"), {"text": "ok"}
    )
    answers = Permissions()
    async with RawAgent(serve_command(script), env=agent_env, respond_to=answers) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(workspace, "r"))
        await agent.request("session/prompt", prompt("r", "write"))
        answers.answer = {"outcome": {"outcome": "selected", "optionId": "reject_once"}}
        await agent.request("session/prompt", prompt("r", "/undo"))
    assert (workspace / "f.txt").read_text() == "x\n"
    events = check_journal(state_dir, "r", workspace).events
    assert not [
        e for e in events if e["type"] == "user/message" and e["data"]["source"]["kind"] == "agent"
    ]


async def test_rewind_restores_files_refuses_files_changed_since_and_force_overwrites(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    repo = make_hostile_repo(tmp_path / "hostile")
    cwd = repo.root
    git_before = repo.git_dir_digest()
    original = {p: (cwd / p).read_bytes() for p in ("a.txt", "b.dat", "c.md")}
    script = write_script(
        tmp_path / "s.jsonl",
        call("w1", "write_file", path="a.txt", content="turn 1\n"),
        {"text": "one"},
        call("e2", "edit_file", path="b.dat", old_string="beta", new_string="BETA"),
        call("r2", "run_command", command="echo 2 > two.txt && echo md >> c.md"),
        {"text": "two"},
        call("w3", "write_file", path="a.txt", content="turn 3\n"),
        {"text": "three"},
        {"text": "in the child"},
    )
    asked = Permissions()
    async with RawAgent(serve_command(script), env=agent_env, respond_to=asked) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(cwd, "p"))
        for text in ("first", "second", "third"):
            await agent.request("session/prompt", prompt("p", text))
        (cwd / "two.txt").write_text("the user's own edit\n")
        rewind = {"sessionId": "p", "toTurn": 2, "restoreFiles": True}
        refused = await agent.request("_acp_agent/rewind", rewind)
        untouched = {p: (cwd / p).read_bytes() for p in ("a.txt", "b.dat", "two.txt")}
        forced = await agent.request("_acp_agent/rewind", {**rewind, "force": True})
        child = forced["result"]["sessionId"]
        loaded = await agent.request("session/prompt", prompt(child, "go on"))
        plain = await agent.request("_acp_agent/rewind", {"sessionId": "p", "toTurn": 1})
    error = refused["error"]
    assert error["code"] == -32602
    assert error["data"]["reason"] == "files_changed"
    assert error["data"]["files"] == ["two.txt"]
    assert untouched == {
        "a.txt": b"turn 3\n",
        "b.dat": b"BETA\nchanged\n",
        "two.txt": b"the user's own edit\n",
    }
    assert loaded["result"]["stopReason"] == "end_turn"
    # forced: every file turns 2 and 3 changed is back as before turn 2
    assert (cwd / "a.txt").read_text() == "turn 1\n"
    assert (cwd / "b.dat").read_bytes() == original["b.dat"]
    assert (cwd / "c.md").read_bytes() == original["c.md"]
    assert not (cwd / "two.txt").exists()
    assert "sessionId" in plain["result"]
    # nothing the hostile repository names ran; its .git is byte for byte as it was
    assert repo.markers() == []
    assert repo.git_dir_digest() == git_before
    # the child keeps the checkpoints it copied: its own refs in the shadow repository
    _header, *events = read_jsonl(state_dir / "sessions" / child / "journal.jsonl")
    trees = {c["before"] for r in tool_results(events) for c in r.get("checkpoints", [])}
    refs = _session_refs(state_dir, child)
    assert trees and trees <= refs | {"4b825dc642cb6eb9a060e54bf8d69288fbee4904"}


async def test_load_keeps_the_checkpoints_and_undo_works_in_a_new_process(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "notes.md").write_text("mine\n")
    script = write_script(
        tmp_path / "s.jsonl",
        call("w1", "write_file", path="notes.md", content="the agent's\n"),
        {"text": "ok"},
    )
    async with RawAgent(serve_command(script), env=agent_env, respond_to=Permissions()) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(workspace, "l"))
        await agent.request("session/prompt", prompt("l", "edit"))
    asked = Permissions()
    async with RawAgent(serve_command(script), env=agent_env, respond_to=asked) as agent:
        await agent.request("initialize", INIT)
        load = {"sessionId": "l", "cwd": str(workspace), "mcpServers": []}
        assert "result" in await agent.request("session/load", load)
        await agent.request("session/prompt", prompt("l", "/undo"))
    assert (workspace / "notes.md").read_text() == "mine\n"
    assert len(asked.asked) == 1


def _session_refs(state_dir: Path, session_id: str) -> set[str]:
    found: set[str] = set()
    for git_dir in (state_dir / "checkpoints").iterdir():
        out = subprocess.run(
            [
                "git",
                "--git-dir",
                str(git_dir),
                "for-each-ref",
                "--format=%(objectname)",
                f"refs/sessions/{session_id}/",
            ],
            capture_output=True,
            check=True,
            text=True,
        )
        found |= set(out.stdout.split())
    return found


async def test_review_in_a_hostile_repository_runs_none_of_its_programs(
    tmp_path: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    repo = make_hostile_repo(tmp_path / "hostile")
    git_before = repo.git_dir_digest()
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", {"text": "looks fine"})
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with RawAgent(serve_command(script), env=env, respond_to=Permissions()) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(repo.root, "v"))
        reviewed = await agent.request("session/prompt", prompt("v", "/review"))
    assert reviewed["result"] == {"stopReason": "end_turn"}
    (request,) = read_requests(log)
    context = "".join(b.get("text", "") for m in request["messages"] for b in m["content"])
    assert "+changed" in context and "?? new.txt" in context
    assert repo.markers() == []
    assert repo.git_dir_digest() == git_before


async def test_a_cancelled_command_journals_what_it_changed_and_undo_reverts_it(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    import asyncio

    started = workspace / "started"
    command = f"echo half > half.txt && touch {started} && sleep 60"
    script = write_script(tmp_path / "s.jsonl", call("r1", "run_command", command=command))
    async with RawAgent(serve_command(script), env=agent_env, respond_to=Permissions()) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(workspace, "c"))
        running = asyncio.create_task(agent.request("session/prompt", prompt("c", "go")))
        for _ in range(400):  # the command's own marker: it has written half.txt
            if started.exists() or running.done():
                break
            await asyncio.sleep(0.025)
        await agent.notify("session/cancel", {"sessionId": "c"})
        assert (await running)["result"]["stopReason"] == "cancelled"
        await agent.request("session/prompt", prompt("c", "/undo"))
    (result,) = tool_results(check_journal(state_dir, "c", workspace).events)
    assert result["isError"] is True
    assert result["checkpoints"][0]["files"] == ["half.txt", "started"]
    assert not (workspace / "half.txt").exists()
