"""Every ``acp-agent journal`` action on both stores (``--journal-store``): the real command.

A journal written through the store (two turns) is listed, shown (for people and as its own
lines), queried, checked (alone and with every session), exported and forked, by a fresh
``acp-agent journal`` process each time; the store's URL is passed by flag, by
``ACP_AGENT_JOURNAL_STORE`` and by ``[journal] store``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from acp_agent.journal.events import Entry
from acp_agent.journal.format import encode_entry
from acp_agent.journal.store import forget_store, use_store
from tests.support.process import agent_command

from .builders import HEADER, SESSION_ID, T0, simple_turn

pytestmark = pytest.mark.subprocess


@pytest.fixture(params=["file", "postgresql"])
def store_url(request: pytest.FixtureRequest) -> str:
    return "file" if request.param == "file" else str(request.getfixturevalue("pg_url"))


@pytest.fixture
def written(state_dir: Path, store_url: str) -> list[Entry]:
    """Two turns of ``SESSION_ID`` in the store; the entries."""

    async def write() -> list[Entry]:
        writer = await use_store(state_dir, store_url).create(HEADER, None)
        entries = []
        for number in (1, 2):
            for event in simple_turn(number, f"prompt {number}"):
                entries.append(Entry(writer.next_seq, T0, event))
                writer.append(entries[-1])
        await writer.close()
        return entries

    try:
        return anyio.run(write)
    finally:
        forget_store(state_dir)


def journal(
    state_dir: Path, store_url: str, *args: str, how: str = "flag"
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_AGENT_")}
    argv = agent_command("journal", *args, "--state-dir", str(state_dir))
    if how == "flag":
        argv += ["--journal-store", store_url]
    elif how == "env":
        env["ACP_AGENT_JOURNAL_STORE"] = store_url
    else:
        config = state_dir.parent / "config.toml"
        config.write_text(f"[journal]\nstore = {json.dumps(store_url)}\n")
        argv += ["--config", str(config)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)


@pytest.mark.parametrize("how", ["flag", "env", "config"])
def test_list_names_the_session(
    state_dir: Path, store_url: str, written: list[Entry], how: str
) -> None:
    listed = journal(state_dir, store_url, "list", "--json", how=how)
    assert listed.returncode == 0, listed.stderr
    sessions = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(s["sessionId"], s["cwd"]) for s in sessions] == [(SESSION_ID, HEADER.cwd)]


def test_show_prints_the_journals_own_lines(
    state_dir: Path, store_url: str, written: list[Entry]
) -> None:
    shown = journal(state_dir, store_url, "show", SESSION_ID, "--json")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.encode().splitlines(keepends=True)[1:]
    assert lines == [encode_entry(e) for e in written]
    human = journal(state_dir, store_url, "show", SESSION_ID)
    assert human.returncode == 0 and "prompt 2" in human.stdout


def test_query_and_check(state_dir: Path, store_url: str, written: list[Entry]) -> None:
    queried = journal(state_dir, store_url, "query", SESSION_ID, "--turn", "2", "--json")
    assert queried.returncode == 0, queried.stderr
    seqs = [json.loads(line)["seq"] for line in queried.stdout.splitlines()]
    assert seqs == [e.seq for e in written[6:]]
    checked = journal(state_dir, store_url, "check", SESSION_ID)
    assert checked.returncode == 0 and checked.stdout.strip() == f"{SESSION_ID}: ok"


def test_fork_makes_a_session_in_the_same_store(
    state_dir: Path, store_url: str, written: list[Entry]
) -> None:
    forked = journal(state_dir, store_url, "fork", SESSION_ID, "--at", "6")
    assert forked.returncode == 0, forked.stderr
    child = forked.stdout.strip()
    shown = journal(state_dir, store_url, "show", child, "--json")
    assert shown.stdout.encode().splitlines(keepends=True)[1:] == [
        encode_entry(e) for e in written[:6]
    ]
    assert journal(state_dir, store_url, "check", child).returncode == 0


def test_an_unknown_session_is_a_usage_error(
    state_dir: Path, store_url: str, written: list[Entry]
) -> None:
    missing = journal(state_dir, store_url, "show", "nobody")
    assert missing.returncode == 2 and "no session 'nobody'" in missing.stderr


def test_check_of_every_session_and_export(
    state_dir: Path, store_url: str, written: list[Entry], tmp_path: Path
) -> None:
    checked = journal(state_dir, store_url, "check")
    assert checked.returncode == 0 and checked.stdout.strip() == f"{SESSION_ID}: ok", checked
    page = tmp_path / "export.md"
    exported = journal(
        state_dir, store_url, "export", SESSION_ID, "--format", "md", "-o", str(page)
    )
    assert exported.returncode == 0, exported.stderr
    assert "prompt 2" in page.read_text()
