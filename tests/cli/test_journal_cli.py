"""``acp-agent journal list | show | query | fork`` as a user runs them: a subprocess over a
journal the real session layer wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acp_agent.journal.events import Parent
from acp_agent.journal.invariant import check_file
from acp_agent.journal.lock import SessionLock
from acp_agent.journal.reader import load_journal
from tests.fork.support import INJECTED_SEQ, LAST_SEQ, PARENT, build_parent, journal_entries


def journal(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_agent", "journal", *args, "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def ok(state: Path, *args: str) -> str:
    result = journal(state, *args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def journal_lines(state: Path, session_id: str) -> list[str]:
    return (state / "sessions" / session_id / "journal.jsonl").read_text("utf-8").splitlines()


def row_seqs(output: str) -> list[int]:
    """The seqs of the event rows in human output (rows start with the right-aligned seq)."""
    return [int(line.split()[0]) for line in output.splitlines() if line[:6].strip().isdigit()]


def json_seqs(output: str) -> list[int]:
    return [json.loads(line)["seq"] for line in output.splitlines()]


def tree(state: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``state`` with its bytes and mtime."""
    return {
        str(path.relative_to(state)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(state.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return anyio.run(build_parent, tmp_path)


# -- list -----------------------------------------------------------------------------------------


def test_list_prints_one_line_per_session_newest_first(state: Path, tmp_path: Path) -> None:
    child = ok(state, "fork", PARENT, "--at", str(INJECTED_SEQ)).strip()
    os.utime(state / "sessions" / PARENT / "journal.jsonl", ns=(1, 2_000_000_000_000_000_000))
    os.utime(state / "sessions" / child / "journal.jsonl", ns=(1, 1_000_000_000_000_000_000))
    cwd = str(tmp_path.resolve() / "workspace")
    assert ok(state, "list").splitlines() == [
        f"{PARENT}  2033-05-18T03:33:20.000Z  {cwd}  Hi there",
        f"{child}  2001-09-09T01:46:40.000Z  {cwd}  Hi there",
    ]
    listed = [json.loads(line) for line in ok(state, "list", "--json").splitlines()]
    assert listed == [
        {"sessionId": PARENT, "cwd": cwd, "title": "Hi there", "updatedAt": "2033-05-18T03:33:20.000Z"},
        {"sessionId": child, "cwd": cwd, "title": "Hi there", "updatedAt": "2001-09-09T01:46:40.000Z"},
    ]  # fmt: skip


def test_list_of_an_empty_state_dir_prints_nothing(tmp_path: Path) -> None:
    assert ok(tmp_path / "nothing-here", "list") == ""


# -- show -----------------------------------------------------------------------------------------


def test_show_prints_the_header_then_every_event_readably(state: Path, tmp_path: Path) -> None:
    output = ok(state, "show", PARENT)
    lines = output.splitlines()
    assert lines[0] == f"session {PARENT}"
    assert lines[2] == f"cwd     {tmp_path.resolve() / 'workspace'}"
    assert lines[3] == f"events  {LAST_SEQ}"
    assert row_seqs(output) == list(range(1, LAST_SEQ + 1))
    rows = {int(line.split()[0]): line for line in lines[4:]}
    assert rows[2].split()[2:] == ["user/message", "turn", "1", "[user]", '"Hi', 'there"']
    assert rows[7].split()[2:] == ["user/message", "-", "[client]", '"The', "user", "prefers", 'tabs."']  # fmt: skip
    assert "assistant/message  turn 2 step 1" in rows[11]
    assert 'thought "look"; "reading"; calls read_file (c1)' in rows[11]
    assert rows[12].endswith('tool/call          turn 2 step 1   c1 read_file {"path": "a.txt"}')
    assert rows[13].endswith('c1 ok "hi from a.txt"')
    assert rows[18].endswith("turn/end           turn 2          completed")
    assert rows[19].split()[2:5] == ["user/message", "-", "[hook]"]


def test_show_of_a_fork_names_its_parent(state: Path) -> None:
    child = ok(state, "fork", PARENT, "--at", str(INJECTED_SEQ)).strip()
    lines = ok(state, "show", child).splitlines()
    assert lines[3:5] == [f"parent  {PARENT} at seq {INJECTED_SEQ}", f"events  {INJECTED_SEQ}"]


def test_show_json_prints_the_journal_lines_as_written(state: Path) -> None:
    assert ok(state, "show", PARENT, "--json").splitlines() == journal_lines(state, PARENT)


# -- query ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filters", "seqs"),
    [
        (["--type", "user/message"], [2, 7, 9, 19]),
        (["--type", "tool/call", "--type", "tool/result"], [12, 13]),
        (["--source-kind", "client"], [7]),
        (["--source-kind", "user"], [2, 9]),
        (["--source-kind", "plugin"], []),
        (["--turn", "1"], [1, 2, 3, 4, 5, 6]),
        (["--turn", "2", "--type", "user/message"], [9]),
        (["--turn", "1", "--source-kind", "client"], []),
        (["--type", "turn/end", "--turn", "2"], [18]),
        ([], list(range(1, LAST_SEQ + 1))),
    ],
)
def test_query_filters_combine(state: Path, filters: list[str], seqs: list[int]) -> None:
    assert row_seqs(ok(state, "query", PARENT, *filters)) == seqs
    assert json_seqs(ok(state, "query", PARENT, *filters, "--json")) == seqs


def test_query_json_round_trips_the_journal_envelope(state: Path) -> None:
    written = journal_lines(state, PARENT)
    output = ok(state, "query", PARENT, "--type", "user/message", "--type", "tool/call", "--json")
    printed = output.splitlines()
    assert [json_seqs(line)[0] for line in printed] == [2, 7, 9, 12, 19]
    for line in printed:
        event = json.loads(line)
        assert line == written[event["seq"]]  # byte for byte, checksum included
        assert set(event) == {"seq", "time", "type", "data", "crc"}
    client = json.loads(printed[1])
    assert client["data"]["source"] == {"kind": "client"}
    assert client["data"]["content"] == [{"type": "text", "text": "The user prefers tabs."}]


# -- fork -----------------------------------------------------------------------------------------


def test_fork_prints_the_new_session_id(state: Path) -> None:
    child = ok(state, "fork", PARENT, "--at", str(INJECTED_SEQ)).strip()
    loaded = load_journal(state / "sessions" / child / "journal.jsonl")
    assert loaded.header.parent == Parent(session_id=PARENT, seq=INJECTED_SEQ)
    assert loaded.entries == journal_entries(state, PARENT)[:INJECTED_SEQ]
    assert ok(state, "check", child) == f"{child}: ok\n"
    latest = ok(state, "fork", PARENT).strip()
    assert load_journal(state / "sessions" / latest / "journal.jsonl").header.parent == Parent(
        session_id=PARENT, seq=LAST_SEQ
    )


def test_fork_inside_a_turn_exits_2_and_creates_nothing(state: Path) -> None:
    before = tree(state)
    result = journal(state, "fork", PARENT, "--at", "9")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "acp-agent: cannot fork session 'parent' at seq 9: "
        "seq 9 is inside turn 2 (turn/start at seq 8, turn/end at seq 18)\n"
    )
    assert tree(state) == before


# -- errors and read-only -----------------------------------------------------------------------


@pytest.mark.parametrize("command", ["show", "query", "fork", "check"])
def test_an_unknown_session_exits_2_with_a_message(state: Path, command: str) -> None:
    result = journal(state, command, "nope")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"acp-agent: no session 'nope' under {state}\n"


@pytest.mark.parametrize(
    "args",
    [
        ["query", PARENT, "--turn", "two"],
        ["fork", PARENT, "--at", "x"],
        ["show"],
        ["list", "--bogus"],
        ["frobnicate"],
    ],
)
def test_bad_flags_are_argparse_usage_errors(state: Path, args: list[str]) -> None:
    result = journal(state, *args)
    assert (result.returncode, result.stdout) == (2, "")
    assert "usage: acp-agent" in result.stderr
    assert "error:" in result.stderr


def test_reading_commands_take_no_lock_and_change_nothing(state: Path) -> None:
    directory = state / "sessions" / PARENT
    with open(directory / "journal.jsonl", "ab") as journal_file:
        journal_file.write(b'{"seq":20,"ti')  # a torn tail: reported, left in place
    lock = SessionLock.acquire(directory, PARENT)  # as a live server holds it
    before = tree(state)
    try:
        for args in (["list"], ["show", PARENT], ["query", PARENT, "--turn", "1"]):
            result = journal(state, *args)
            assert result.returncode == 0, result.stderr
        shown = journal(state, "show", PARENT, "--json")
        check = journal(state, "check", PARENT)
    finally:
        lock.release()
    assert tree(state) == before
    assert shown.stdout.splitlines() == journal_lines(state, PARENT)[: LAST_SEQ + 1]
    assert shown.stderr == (
        f"acp-agent: {PARENT}: ignoring a damaged tail (seq 20, byte "
        f"{len((directory / 'journal.jsonl').read_bytes()) - 13}, 13 bytes): no trailing newline\n"
    )
    assert check.returncode == 1
    assert check_file(directory)  # the torn tail is still there for the next open to move


def test_compact_summarizes_with_the_given_model_and_keeps_the_invariant(tmp_path: Path) -> None:
    state = tmp_path / "compact-state"
    script = tmp_path / "turns.jsonl"
    script.write_text('{"text": "one"}\n{"text": "two"}\n')
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": [], "_meta": {"acp_agent": {"sessionId": "C"}}}},
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "C", "prompt": [{"type": "text", "text": "first"}]}},
        {"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": {"sessionId": "C", "prompt": [{"type": "text", "text": "second"}]}},
        {"jsonrpc": "2.0", "id": 5, "method": "_acp_agent/inject", "params": {"sessionId": "C", "content": "tail note"}},
    ]  # fmt: skip
    subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_agent",
            "--model",
            f"script:{script}",
            "--state-dir",
            str(state),
        ],
        input="".join(json.dumps(f) + "\n" for f in frames),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    summary = tmp_path / "summary.jsonl"
    summary.write_text('{"text": "SUMMARY of first"}\n')
    done = journal(state, "compact", "C", "--model", f"script:{summary}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "C: compacted"
    shown = journal(state, "query", "C", "--type", "session/compaction", "--json")
    (line,) = shown.stdout.splitlines()
    data = json.loads(line)["data"]
    assert data["summary"] == [{"type": "text", "text": "SUMMARY of first"}]
    assert data["reason"] == "manual"
    assert journal(state, "check", "C").returncode == 0
    # the trailing out-of-turn note is committed history, kept by the same rule as any message
    notes = journal(state, "query", "C", "--source-kind", "client", "--json")
    assert len(notes.stdout.splitlines()) == 1


def test_compact_of_a_session_a_server_holds_fails_and_changes_nothing(tmp_path: Path) -> None:
    state = anyio.run(build_parent, tmp_path)
    before = journal_lines(state, PARENT)
    summary = tmp_path / "summary.jsonl"
    summary.write_text('{"text": "never asked"}\n')
    lock = SessionLock.acquire(state / "sessions" / PARENT, PARENT)
    try:
        done = journal(state, "compact", PARENT, "--model", f"script:{summary}")
    finally:
        lock.release()
    assert done.returncode == 1
    assert done.stderr.startswith(f"acp-agent: session {PARENT!r} is already open in another ")
    assert journal_lines(state, PARENT) == before


def test_list_and_show_escape_control_characters(state: Path, tmp_path: Path) -> None:
    (state / "sessions" / PARENT / "title").write_text("evil \x1b]0;owned\x07 \x9b2J title")
    listed = ok(state, "list")
    assert "\x1b" not in listed and "\x07" not in listed and "\x9b" not in listed
    assert "evil  ]0;owned   2J title" in listed  # stored controls read back as spaces
    shown = ok(state, "show", PARENT)
    assert not any(0x80 <= ord(c) <= 0x9F or (ord(c) < 0x20 and c != "\n") for c in shown)
