"""acp-factory (npm ``acp-factory``, pinned in the Makefile, installed under ``.cache/npm-tools``)
drives a real session: a tool batch that reads through the client's ``fs/read_text_file`` and
writes through its ``fs/write_text_file`` after a permission the library's callback answers.

acp-factory spawns the agent itself (``AgentFactory.register`` with our command line), speaks
through the official TypeScript SDK it depends on (its own pinned 0.18 line, not our 2.4.0), and
advertises ``fs.readTextFile`` and ``fs.writeTextFile``, which it serves from disk.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients.support import READ_THEN_WRITE, client_env, node, require
from tests.integration.support import check_journal, write_script
from tests.support.acp_schema import REPO_ROOT
from tests.support.process import agent_command

NPM_TOOLS = REPO_ROOT / ".cache" / "npm-tools" / "node_modules"
ACP_FACTORY_VERSION = "0.1.14"  # ACP_FACTORY_VERSION in the Makefile
CLIENT = Path(__file__).with_name("factory_client.mjs")

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(90)]


def run_factory(
    script: Path, workspace: Path, home: Path, state_dir: Path, option: str
) -> dict[str, Any]:
    package = require(NPM_TOOLS / "acp-factory" / "package.json")
    assert json.loads(package.read_text())["version"] == ACP_FACTORY_VERSION
    argv = [node(), str(CLIENT), str(NPM_TOOLS), str(workspace), "read notes", option, "--"]
    argv += agent_command("--model", f"script:{script}")
    done = subprocess.run(
        argv,
        env=client_env(home, state_dir),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_tool_batch_with_a_permission_answered_allow(
    tmp_path: Path, home: Path, workspace: Path, state_dir: Path
) -> None:
    (workspace / "notes.txt").write_text("hello from disk\n")
    script = write_script(tmp_path / "script.jsonl", *READ_THEN_WRITE)
    seen = run_factory(script, workspace, home, state_dir, "allow_once")

    assert seen["capabilities"]["loadSession"] is True
    (asked,) = seen["permissions"]
    assert asked["toolCall"]["toolCallId"] == "w1"
    assert {"optionId": "allow_once", "kind": "allow_once"} in asked["options"]
    assert {"optionId": "reject_once", "kind": "reject_once"} in asked["options"]
    assert (workspace / "out.txt").read_text() == "x"  # written by acp-factory, through fs/*

    updates = seen["updates"]
    calls = {u["toolCallId"]: u for u in updates if u["sessionUpdate"] == "tool_call"}
    assert set(calls) == {"r1", "w1"} and calls["w1"]["name"] == "write_file"
    done = {
        u["toolCallId"]: u["status"] for u in updates if u.get("status") in ("completed", "failed")
    }
    assert done == {"r1": "completed", "w1": "completed"}
    assert seen["text"] == "The file says: hello from disk"
    check_journal(state_dir, seen["sessionId"], workspace)


def test_a_permission_answered_reject_leaves_the_file_unwritten(
    tmp_path: Path, home: Path, workspace: Path, state_dir: Path
) -> None:
    (workspace / "notes.txt").write_text("hello from disk\n")
    script = write_script(tmp_path / "script.jsonl", *READ_THEN_WRITE)
    seen = run_factory(script, workspace, home, state_dir, "reject_once")

    assert len(seen["permissions"]) == 1
    assert not (workspace / "out.txt").exists()
    statuses = {
        u["toolCallId"]: u["status"]
        for u in seen["updates"]
        if u.get("status") in ("completed", "failed")
    }
    assert statuses == {"r1": "completed", "w1": "failed"}
    check_journal(state_dir, seen["sessionId"], workspace)
