"""``acp-agent doctor`` as a user runs it: a subprocess over a state dir the real session layer
wrote, a config file, and a provider on 127.0.0.1 (or nothing listening there)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.journal.events import Entry, TurnEnd, TurnEndKind, TurnEndReason
from acp_agent.journal.format import encode_entry
from acp_agent.journal.lock import SessionLock
from acp_agent.journal.store import forget_store, use_store
from tests.fork.support import LAST_SEQ, PARENT, build_parent
from tests.journal.builders import HEADER, T0, simple_turn

SECRET = "sk-doctor-test-0123456789-secret"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A state dir holding one healthy session (``parent``), made by the real session layer."""
    return anyio.run(build_parent, tmp_path)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.jsonl"
    path.write_text('{"text": "hi"}\n', encoding="utf-8")
    return path


def doctor(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"  # no ~/.config/acp-agent/config.toml, no XDG state
    home.mkdir(exist_ok=True)
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ACP_AGENT_", "OPENAI_", "DEEPSEEK_", "XDG_"))
    }
    return subprocess.run(
        [sys.executable, "-m", "acp_agent", "doctor", *args],
        capture_output=True,
        text=True,
        env={**base, "HOME": str(home), "NO_PROXY": "*", **(env or {})},
        timeout=30,
        check=False,
    )


def report(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def findings(data: dict[str, Any], section: str) -> list[dict[str, Any]]:
    (found,) = [s["findings"] for s in data["sections"] if s["name"] == section]
    return list(found)


def checks(data: dict[str, Any], status: str) -> list[str]:
    return [f["check"] for s in data["sections"] for f in s["findings"] if f["status"] == status]


def session_journal(state: Path, session_id: str = PARENT) -> Path:
    return state / "sessions" / session_id / "journal.jsonl"


# -- healthy --------------------------------------------------------------------------------------


def test_a_healthy_installation_exits_0_with_one_readable_page(
    state: Path, script: Path, tmp_path: Path
) -> None:
    result = doctor(tmp_path, "--state-dir", str(state), "--model", f"script:{script}")
    assert result.returncode == 0, result.stdout + result.stderr
    page = result.stdout
    assert page.startswith("acp-agent 0.1.0\n")
    for heading in ("config file", "model", "state dir", "journals"):
        assert f"\n{heading}\n" in page
    assert f"script:{script} (from --model)" in page
    assert f"{state} (from --state-dir)" in page
    assert "mode 0700" in page
    assert "writable" in page
    assert " free" in page
    assert "1 of 1 journals healthy" in page
    assert page.endswith("healthy: no problems found\n")
    assert result.stderr == ""


def test_json_has_a_stable_shape(state: Path, script: Path, tmp_path: Path) -> None:
    result = doctor(tmp_path, "--json", "--state-dir", str(state), "--model", f"script:{script}")
    assert result.returncode == 0, result.stderr
    data = report(result)
    assert set(data) == {"healthy", "problems", "system", "sections"}
    assert data["healthy"] is True
    assert data["problems"] == []
    assert set(data["system"]) == {"version", "python", "pythonExecutable", "platform"}
    assert data["system"]["python"] == ".".join(map(str, sys.version_info[:3]))
    names = [s["name"] for s in data["sections"]]
    assert names == ["config", "model", "state", "journals", "sandbox"]
    for section in data["sections"]:
        assert set(section) == {"name", "title", "findings"}
        for finding in section["findings"]:
            assert set(finding) == {"status", "check", "message", "subject"}
            assert finding["status"] in {"ok", "note", "problem"}
    assert findings(data, "journals")[-1]["check"] == "journal.summary"


def test_a_state_dir_that_does_not_exist_yet_is_fine(script: Path, tmp_path: Path) -> None:
    state = tmp_path / "nowhere"
    result = doctor(tmp_path, "--json", "--state-dir", str(state), "--model", f"script:{script}")
    assert result.returncode == 0, result.stdout
    assert "state.exists" in checks(report(result), "note")
    assert not state.exists()


def test_the_state_dir_is_found_through_the_environment_and_must_be_private(
    state: Path, script: Path, tmp_path: Path
) -> None:
    state.chmod(0o755)
    env = {"ACP_AGENT_STATE_DIR": str(state), "ACP_AGENT_MODEL": f"script:{script}"}
    result = doctor(tmp_path, env=env)
    assert result.returncode == 1
    assert f"{state} (from ACP_AGENT_STATE_DIR)" in result.stdout
    assert "(from ACP_AGENT_MODEL)" in result.stdout
    assert f"state: mode 0755: expected 0700 (chmod 700 {state})" in result.stdout


def test_no_model_is_a_problem(state: Path, tmp_path: Path) -> None:
    result = doctor(tmp_path, "--state-dir", str(state))
    assert result.returncode == 1
    assert "model: no model configured" in result.stdout


# -- config ---------------------------------------------------------------------------------------


def test_a_broken_config_is_reported_with_the_loaders_messages(
    state: Path, script: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[[hooks.pre_tool]]\ncommand = ["true"]\nmatcher = "("\n\n'
        '[providers.local]\nbase_url = "ftp://example"\n',
        encoding="utf-8",
    )
    args = ["--json", "--state-dir", str(state), "--model", f"script:{script}"]
    result = doctor(tmp_path, *args, "--config", str(config))
    assert result.returncode == 1
    data = report(result)
    assert data["problems"] == [
        f"config: [hooks]: {config}: hooks.pre_tool[0].matcher: invalid regular expression "
        "'(': missing ), unterminated subpattern at position 0",
        f"config: [providers]: {config}: providers.local.base_url: expected an http:// or "
        "https:// URL",
        "model: not checked: the config file cannot be used (above)",
    ]


def test_invalid_toml_and_a_missing_hook_program(state: Path, script: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[hooks\n", encoding="utf-8")
    args = ["--state-dir", str(state), "--model", f"script:{script}", "--config", str(config)]
    result = doctor(tmp_path, *args)
    assert result.returncode == 1
    assert f"[hooks]: {config}: invalid TOML" in result.stdout
    config.write_text(
        '[[hooks.prompt_submit]]\ncommand = ["/no/such/hook"]\n\n'
        '[[hooks.post_tool]]\ncommand = ["true"]\n',
        encoding="utf-8",
    )
    result = doctor(tmp_path, "--json", *args)
    assert result.returncode == 1
    data = report(result)
    assert data["problems"] == ["config: hooks.prompt_submit[0]: program '/no/such/hook' not found"]
    messages = [f["message"] for f in findings(data, "config")]
    assert f"{config} (from --config)" in messages
    assert "[hooks] parses: 1 prompt_submit, 0 pre_tool, 1 post_tool" in messages
    assert "[providers] parses: no provider tables" in messages


def test_a_config_file_that_does_not_exist(state: Path, script: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    env = {"ACP_AGENT_CONFIG": str(missing)}
    result = doctor(tmp_path, "--state-dir", str(state), "--model", f"script:{script}", env=env)
    assert result.returncode == 1
    assert f"{missing} (from ACP_AGENT_CONFIG) does not exist" in result.stdout


# -- journals -------------------------------------------------------------------------------------


def test_a_torn_tail_is_a_problem_and_nothing_is_changed(
    state: Path, script: Path, tmp_path: Path
) -> None:
    path = session_journal(state)
    with path.open("ab") as file:
        file.write(b'{"seq":20,"time":1,"ty')
    before = path.read_bytes()
    names = sorted(p.name for p in path.parent.iterdir())
    result = doctor(tmp_path, "--state-dir", str(state), "--model", f"script:{script}")
    assert result.returncode == 1
    assert f"journals: {PARENT}: damaged tail at byte " in result.stdout
    assert "the next open moves it aside to journal.tail.*" in result.stdout
    assert "0 of 1 journals healthy" in result.stdout
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == names


def test_damage_inside_the_history_is_a_problem(state: Path, script: Path, tmp_path: Path) -> None:
    path = session_journal(state)
    lines = path.read_bytes().split(b"\n")
    lines[3] = b"garbage" + lines[3][7:]
    path.write_bytes(b"\n".join(lines))
    result = doctor(tmp_path, "--json", "--state-dir", str(state), "--model", f"script:{script}")
    assert result.returncode == 1
    (problem,) = report(result)["problems"]
    assert problem.startswith(f"journals: {PARENT}: corrupt at byte ")
    assert "(seq 3)" in problem
    assert "the session cannot be opened" in problem


def test_invariant_violations_and_leftover_side_files(
    state: Path, script: Path, tmp_path: Path
) -> None:
    path = session_journal(state)
    reason = TurnEndReason(kind=TurnEndKind.COMPLETED)
    stray = Entry(seq=LAST_SEQ + 1, time=1, event=TurnEnd(turn=9, reason=reason))
    with path.open("ab") as file:
        file.write(encode_entry(stray))
    (path.parent / "journal.tail.1700000000000").write_bytes(b"torn")
    result = doctor(tmp_path, "--json", "--state-dir", str(state), "--model", f"script:{script}")
    assert result.returncode == 1
    assert report(result)["problems"] == [
        f"journals: {PARENT}: 1 damaged tail moved aside by an earlier recovery "
        "(journal.tail.1700000000000): inspect, then delete",
        f"journals: {PARENT}: 1 invariant violation; first: seq {LAST_SEQ + 1}: "
        "turn/end outside a turn",
    ]


def test_a_locked_journal_is_a_note_naming_the_holder(
    state: Path, script: Path, tmp_path: Path
) -> None:
    lock = SessionLock.acquire(state / "sessions" / PARENT, PARENT)
    try:
        args = ["--state-dir", str(state), "--model", f"script:{script}"]
        result = doctor(tmp_path, "--json", *args)
    finally:
        lock.release()
    assert result.returncode == 0, result.stdout
    (note,) = [f for f in findings(report(result), "journals") if f["status"] == "note"]
    assert note == {
        "status": "note",
        "check": "journal.locked",
        "message": f"in use by pid {os.getpid()}",
        "subject": PARENT,
    }
    SessionLock.acquire(state / "sessions" / PARENT, PARENT).release()  # the probe let go


def test_a_turn_a_crash_left_open_is_a_note(state: Path, script: Path, tmp_path: Path) -> None:
    path = session_journal(state)
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:10]) + b"\n")  # header + seq 1..9: turn 2 is open
    result = doctor(tmp_path, "--json", "--state-dir", str(state), "--model", f"script:{script}")
    assert result.returncode == 0, result.stdout
    assert checks(report(result), "note") == ["journal.open_turn"]


# -- providers ------------------------------------------------------------------------------------


class _Provider(BaseHTTPRequestHandler):
    status = 200
    seen: list[tuple[str, str | None]]

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        body = b'{"object": "list", "data": []}'
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def provider() -> Iterator[tuple[HTTPServer, list[tuple[str, str | None]]]]:
    seen: list[tuple[str, str | None]] = []
    handler = type("Handler", (_Provider,), {"seen": seen})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def provider_config(tmp_path: Path, port: int) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[providers.local]\nbase_url = "http://127.0.0.1:{port}/v1"\n'
        f'api_key_env = "LOCAL_KEY"\nmodels = ["small"]\n',
        encoding="utf-8",
    )
    return config


def run_against(tmp_path: Path, state: Path, config: Path, *args: str) -> tuple[str, str]:
    """The doctor's text and JSON output for ``local:big`` with the key set."""
    common = ["--state-dir", str(state), "--config", str(config), "--model", "local:big", *args]
    env = {"LOCAL_KEY": SECRET}
    text = doctor(tmp_path, *common, env=env)
    data = doctor(tmp_path, "--json", *common, env=env)
    for result in (text, data):
        assert SECRET not in result.stdout + result.stderr
    assert text.returncode == data.returncode
    return text.stdout, data.stdout


def test_a_reachable_provider_gets_the_key_which_is_never_printed(
    provider: tuple[HTTPServer, list[tuple[str, str | None]]], state: Path, tmp_path: Path
) -> None:
    server, seen = provider
    config = provider_config(tmp_path, server.server_port)
    text, data = run_against(tmp_path, state, config)
    assert seen == [("/v1/models", f"Bearer {SECRET}")] * 2
    assert "local:big (from --model); also offered: local:small" in text
    assert "local: key variable LOCAL_KEY is set" in text
    url = f"http://127.0.0.1:{server.server_port}/v1/models"
    assert f"local: GET {url}: HTTP 200 in " in text
    assert json.loads(data)["healthy"] is True


def test_a_refused_key_names_its_variable(
    provider: tuple[HTTPServer, list[tuple[str, str | None]]], state: Path, tmp_path: Path
) -> None:
    server, _ = provider
    server.RequestHandlerClass.status = 401  # type: ignore[attr-defined]
    config = provider_config(tmp_path, server.server_port)
    text, data = run_against(tmp_path, state, config)
    assert "the server refused the key; check LOCAL_KEY" in text
    assert checks(json.loads(data), "problem") == ["model.key_refused"]


def test_an_unreachable_provider_is_a_problem(state: Path, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = provider_config(tmp_path, port)
    text, data = run_against(tmp_path, state, config, "--timeout", "2")
    assert f"GET http://127.0.0.1:{port}/v1/models failed: ConnectError" in text
    assert checks(json.loads(data), "problem") == ["model.reachable"]
    offline = doctor(tmp_path, "--offline", "--state-dir", str(state), "--config", str(config))
    assert offline.returncode == 1  # the key is still missing in this environment
    assert "not contacted (--offline)" in offline.stdout
    assert "the key variable LOCAL_KEY is not set" in offline.stdout


def test_permission_rules_are_checked_with_the_servers_messages(
    state: Path, script: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[permissions]\nallow = ["edit(src/**)"]\ndeny = ["rm *"]\n', encoding="utf-8"
    )
    args = ["--json", "--state-dir", str(state), "--model", f"script:{script}"]
    data = report(doctor(tmp_path, *args, "--config", str(config)))
    assert f"config: [permissions]: {config}: permissions.deny[0]: 'rm *' is not a pattern" in str(
        data["problems"]
    )
    config.write_text(
        '[permissions]\nallow = ["edit(src/**)"]\ndeny = ["read(.env)"]\n', encoding="utf-8"
    )
    data = report(doctor(tmp_path, *args, "--config", str(config)))
    messages = [f["message"] for f in findings(data, "config")]
    assert "[permissions] parses: 1 allow, 0 ask, 1 deny" in messages


# -- a shared journal store -----------------------------------------------------------------------


def test_the_journals_of_a_postgresql_store_are_checked(
    tmp_path: Path, script: Path, pg_url: str
) -> None:
    async def write() -> None:
        writer = await use_store(tmp_path / "writer", pg_url).create(HEADER, None)
        for event in simple_turn(1):
            writer.append(Entry(writer.next_seq, T0, event))
        await writer.close()

    try:
        anyio.run(write)
    finally:
        forget_store(tmp_path / "writer")
    fresh = tmp_path / "elsewhere"  # another host's state dir: nothing of the session's there
    args = ["--model", f"script:{script}", "--state-dir", str(fresh), "--offline", "--json"]
    result = doctor(tmp_path, *args, env={"ACP_AGENT_JOURNAL_STORE": pg_url})
    assert result.returncode == 0, result.stdout + result.stderr
    journals = findings(report(result), "journals")
    assert journals[0]["check"] == "journal.store" and "postgresql://" in journals[0]["message"]
    assert journals[-1]["message"] == "1 of 1 journals healthy"
