"""Torn tails and injected I/O faults, over the real agent process (reliability.md scenarios 2, 4).

The journal's unit tests drive the writer in-process; here the whole server path runs: a
``session/load`` in a new process repairs what a crash (or a hand) left, and faults injected with
``ACP_AGENT_JOURNAL_FAULTS`` (grammar in ``acp_agent/journal/faults.py``) hit the flushes of a
live session.

Torn tails: after a clean session, the last record(s) are damaged by hand — cut at several
offsets, replaced or followed by NUL padding, followed by garbage — and a new process loads the
session. The load must keep the longest valid prefix byte for byte (computed here from the
bytes, not by the project's reader), move exactly the removed bytes to a ``journal.tail.*`` side
file, close a turn the damage left open (``turn/end {interrupted}``), replay the prefix, and the
next prompt must start on a fresh line; ``acp-agent journal check`` passes. One sweep does this
at every offset of the last two records, in one agent process.

Faults: a failed ``fdatasync``, a failed or short ``write``, a full disk, during a turn. The turn
still completes, the client gets ``_acp_agent/journal_error``, no ``agent/error`` is ever
written, ``_acp_agent/when_idle`` (which retries) ends healthy with everything durable and no
torn line left, and a session without faults next to a faulty one is not affected.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from acp_agent.content import TextContent
from acp_agent.journal.events import UserMessage
from tests.integration.support import check_journal, read_call, serve_command, write_script
from tests.support.durability import (
    assert_loaded_from,
    check_frames_of_killed,
    clone_session,
    header_and_body,
    initialize,
    inject,
    journal_check_cli,
    journal_file,
    killable_agent,
    last_request_id,
    side_files,
    sigkill,
    updates_before_response,
    when_idle,
)
from tests.support.recording import RecordedAgent, RecordingClient, recorded_agent

pytestmark = pytest.mark.subprocess

HEALTHY = {"journal": {"healthy": True, "unflushed": 0, "lastError": None}}


async def clean_session(tmp_path: Path, workspace: Path, agent_env: dict[str, str]) -> str:
    """A closed session: a turn, an idle injection, a turn with a tool batch."""
    (workspace / "a.txt").write_text("alpha\n")
    script = write_script(
        tmp_path / "clean.jsonl",
        {"text": "hello back"},
        {"toolCalls": [read_call("c1", "a.txt"), read_call("c2", "a.txt")]},
        {"text": "read it twice"},
    )
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "hello")
        await inject(agent, sid, "between turns")
        await agent.prompt_text(sid, "read a twice")
    return sid


def line_starts(body: bytes) -> list[int]:
    """Offsets (in ``body``) where each line starts."""
    starts = [0]
    for index, byte in enumerate(body):
        if byte == ord("\n") and index + 1 < len(body):
            starts.append(index + 1)
    return starts


def user_texts(entries_or_replay: list[dict[str, Any]]) -> list[str]:
    return [
        params["update"]["content"]["text"]
        for params in entries_or_replay
        if params["update"]["sessionUpdate"] == "user_message_chunk"
    ]


# --- torn tails, by hand ----------------------------------------------------------------------


# (name, damage): damage(body, start of the last line, start of the line before) ->
# (damaged body, length of the longest valid prefix of the damaged body)
def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


Damage = Callable[[bytes, int, int], tuple[bytes, int]]
DAMAGES: list[tuple[str, Damage]] = [
    ("last record cut after one byte", lambda b, last, prev: (b[: last + 1], last)),
    ("last record cut in the middle", lambda b, last, prev: (b[: (last + len(b)) // 2], last)),
    ("last record without its newline", lambda b, last, prev: (b[:-1], last)),
    ("second-to-last record cut", lambda b, last, prev: (b[: prev + 9], prev)),
    ("last record zeroed", lambda b, last, prev: (b[:last] + bytes(len(b) - last), last)),
    ("NUL padding appended", lambda b, last, prev: (b + bytes(4096), len(b))),
    ("cut, then NUL padding", lambda b, last, prev: (b[: last + 7] + bytes(600), last)),
    ("garbage line appended", lambda b, last, prev: (b + b'{"seq": garbage\n', len(b))),
    ("binary garbage appended", lambda b, last, prev: (b + b"\xff\xfe\x00junk", len(b))),
    ("last record with a bad checksum", lambda b, last, prev: (flip(b, last + 20), last)),
]


@pytest.mark.parametrize("damage", [d for _, d in DAMAGES], ids=[n for n, _ in DAMAGES])
async def test_a_torn_tail_is_moved_aside_and_the_session_goes_on_on_a_fresh_line(
    damage: Damage, tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    sid = await clean_session(tmp_path, workspace, agent_env)
    path = journal_file(state_dir, sid)
    header, body = header_and_body(path)
    starts = line_starts(body)
    damaged, prefix_len = damage(body, starts[-1], starts[-2])
    path.write_bytes(header + damaged)
    before = path.read_bytes()
    expected_prefix = len(header) + prefix_len

    script = write_script(tmp_path / "after.jsonl", {"text": "repaired and back"})
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        await initialize(agent)
        start = len(agent.transcript.agent_frames)
        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
        replay = updates_before_response(agent, start, last_request_id(agent, "session/load"))
        outcome = assert_loaded_from(before, expected_prefix, path)
        after_load = path.read_bytes()
        response = await agent.prompt_text(sid, "still fine?")
    assert response.stop_reason == "end_turn"

    (side,) = side_files(path.parent)  # exactly one side file, holding exactly the tail
    assert side == before[expected_prefix:]
    kept_texts = [
        block.text
        for entry in outcome.entries
        if isinstance(entry.event, UserMessage)
        for block in entry.event.content
        if isinstance(block, TextContent)
    ]
    assert user_texts(replay) == kept_texts
    final = path.read_bytes()
    assert final.startswith(after_load)
    assert final[len(after_load) :].startswith(b'{"seq":%d,' % (len(outcome.entries) + 1))
    journal = check_journal(state_dir, sid, workspace)  # every line whole JSON, modes 0600
    assert journal.end_reasons()[-1] == "completed"
    if outcome.repaired:
        assert journal.end_reasons()[-2] == "interrupted"
    cli = journal_check_cli(state_dir, sid)
    assert cli.returncode == 0, cli.stdout + cli.stderr


async def test_offsets_across_the_last_two_records_load_to_their_longest_valid_prefix(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    """One process loads clones of the session cut at offsets across the last two records (and
    the same with NUL padding up to the original size), then closes each again.

    The journal unit tests cut at every offset in-process; over the wire each load costs a few
    fsyncs, so this takes every offset near the line boundaries and every 7th in between.
    """
    sid = await clean_session(tmp_path, workspace, agent_env)
    _, body = header_and_body(journal_file(state_dir, sid))
    starts = line_starts(body)
    near = [range(start - 12, start + 12) for start in (starts[-2], starts[-1], len(body))]
    cuts = {c for r in near for c in r} | set(range(starts[-2], len(body), 7))
    cuts = {c for c in cuts if starts[-2] <= c <= len(body)}
    cases: dict[str, tuple[bytes, int]] = {}
    for n, cut in enumerate(sorted(cuts)):
        good = body.rfind(b"\n", 0, cut) + 1
        cases[f"cut-{cut}"] = (body[:cut], good)
        if cut < len(body) and n % 3 == 0:
            cases[f"nul-{cut}"] = (body[:cut] + bytes(len(body) - cut), good)
    paths = {name: clone_session(state_dir, sid, name, cut) for name, (cut, _) in cases.items()}
    befores = {name: path.read_bytes() for name, path in paths.items()}

    script = write_script(tmp_path / "s.jsonl")
    async with recorded_agent(
        command=serve_command(script), env=agent_env, use_unstable_protocol=True
    ) as agent:
        await initialize(agent)
        for name, path in paths.items():
            await agent.conn.load_session(cwd=str(workspace), session_id=name)
            await agent.conn.close_session(session_id=name)
            damaged, good = cases[name]
            header_len = len(befores[name]) - len(damaged)
            outcome = assert_loaded_from(befores[name], header_len + good, path)
            tail = befores[name][header_len + good :]
            assert side_files(path.parent) == ([tail] if tail else []), name
            assert outcome.kept + outcome.repaired == len(outcome.entries)
    for name in list(paths)[:: max(1, len(paths) // 4)]:
        cli = journal_check_cli(state_dir, name)
        assert cli.returncode == 0, (name, cli.stdout + cli.stderr)


# --- injected faults --------------------------------------------------------------------------


def journal_errors(client: RecordingClient) -> list[dict[str, Any]]:
    return [params for method, params in client.ext_calls if method == "acp_agent/journal_error"]


TOOL_TURN_TYPES = [
    "turn/start", "user/message", "step/start",
    "assistant/message", "tool/call", "tool/call", "tool/result", "tool/result", "step/end",
    "step/start", "assistant/message", "step/end", "turn/end",
]  # fmt: skip

# A new journal's header costs write #1 and fsync #1. In the tool turn below the barriers are:
# #2 turn/start..step/start, #3 the tool calls (before the tools run), #4 the results, step/end
# and the next step/start, #5 the answer and turn/end.
FAULTS = [
    ("fsync:eio@3", 1, "Input/output error"),  # before the tools run
    ("fsync:eio@5", 1, "Input/output error"),  # the turn's last barrier: only when_idle retries
    ("fsync:eio@3x2", 2, "Input/output error"),  # two barriers in a row
    ("write:eio@4", 1, "Input/output error"),
    ("write:enospc@3", 1, "No space left on device"),
    ("write:short@2,write:eio@3", 1, "Input/output error"),  # half a batch, then an error
    ("write:short@2", 0, None),  # a short write alone is continued, not an error
    ("write:short@3x*", 0, None),  # every write short: still whole lines
]


@pytest.mark.parametrize(("faults", "reports", "error"), FAULTS, ids=[f[0] for f in FAULTS])
async def test_a_flush_fault_during_a_turn_is_reported_and_healed_never_an_agent_error(
    faults: str,
    reports: int,
    error: str | None,
    tmp_path: Path,
    workspace: Path,
    state_dir: Path,
    agent_env: dict[str, str],
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    script = write_script(
        tmp_path / "s.jsonl",
        {"toolCalls": [read_call("c1", "a.txt"), read_call("c2", "a.txt")]},
        {"chunks": ["all ", "read"], "delayMs": 5},
    )
    env = {**agent_env, "ACP_AGENT_JOURNAL_FAULTS": faults}
    client = RecordingClient(advertise_fs=False)
    async with recorded_agent(client, serve_command(script), env=env) as agent:
        sid = await agent.handshake(workspace)
        response = await agent.prompt_text(sid, "read a twice")
        health = await when_idle(agent, sid)
        final = journal_file(state_dir, sid).read_bytes()  # before the shutdown's own flush
    assert response.stop_reason == "end_turn"
    assert health == HEALTHY
    reported = journal_errors(client)
    assert len(reported) == reports, reported
    for report in reported:
        assert report["sessionId"] == sid and report["unflushed"] >= 1, report
        assert error is not None and error in report["error"], report
    journal = check_journal(state_dir, sid, workspace)
    assert journal.types() == TOOL_TURN_TYPES  # nothing lost, nothing doubled, no agent/error
    assert journal.end_reasons() == ["completed"]
    assert journal_file(state_dir, sid).read_bytes() == final  # durable at when_idle already
    assert final.endswith(b"\n") and all(json.loads(line) for line in final.splitlines())
    if reports:
        assert "journal_flush_failed" in agent.stderr.decode()


async def test_a_failed_idle_flush_then_a_kill_leaves_nothing_torn_behind(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    """Half of an idle injection's line reaches the file, the rest fails; SIGKILL before any
    retry. The next load moves the torn half aside; the acknowledged history is intact."""
    script = write_script(tmp_path / "s.jsonl", {"text": "first"})
    env = {**agent_env, "ACP_AGENT_JOURNAL_FAULTS": "write:short@4,write:eio@5"}
    client = RecordingClient()
    async with killable_agent(
        client, serve_command(script), env=env, validate=False, expect_exit_code=None
    ) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "hello")  # writes #2 and #3
        acknowledged = await inject(agent, sid, "durable note")  # write #4... short, #5 fails
        await wait_for_report(client)
        await sigkill(agent)
    check_frames_of_killed(agent)
    (report,) = journal_errors(client)
    assert report["unflushed"] == 1
    path = journal_file(state_dir, sid)
    before = path.read_bytes()
    prefix_len = before.rfind(b"\n") + 1
    assert prefix_len < len(before), "the torn half line should be on disk"

    script = write_script(tmp_path / "after.jsonl", {"text": "second"})
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        await initialize(agent)
        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
        outcome = assert_loaded_from(before, prefix_len, path)
        assert outcome.repaired == 0  # it ended between turns
        await agent.prompt_text(sid, "again")
    assert side_files(path.parent) == [before[prefix_len:]]
    journal = check_journal(state_dir, sid, workspace)
    ids = [m["id"] for m in journal.of_type("user/message")]
    assert acknowledged["messageId"] not in ids  # never acknowledged durable, and torn: gone
    assert journal.end_reasons() == ["completed", "completed"]


async def test_a_failed_turn_end_flush_then_a_kill_is_repaired_as_interrupted(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    """The turn's last barrier writes half its lines and fails; the client is told (journal
    error) although the prompt is answered; SIGKILL. The load keeps the whole lines, moves the
    torn one aside and closes the turn as interrupted."""
    script = write_script(tmp_path / "s.jsonl", {"text": "x" * 300})
    env = {**agent_env, "ACP_AGENT_JOURNAL_FAULTS": "write:short@3,write:eio@4"}
    client = RecordingClient()
    async with killable_agent(
        client, serve_command(script), env=env, validate=False, expect_exit_code=None
    ) as agent:
        sid = await agent.handshake(workspace)
        response = await agent.prompt_text(sid, "hello")
        await wait_for_report(client)
        await sigkill(agent)
    check_frames_of_killed(agent)
    assert response.stop_reason == "end_turn"
    assert len(journal_errors(client)) == 1
    path = journal_file(state_dir, sid)
    before = path.read_bytes()
    prefix_len = before.rfind(b"\n") + 1

    script = write_script(tmp_path / "after.jsonl", {"text": "back"})
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        await initialize(agent)
        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
        outcome = assert_loaded_from(before, prefix_len, path)
        await agent.prompt_text(sid, "again")
    assert outcome.repaired >= 1
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["interrupted", "completed"]
    assert "agent/error" not in journal.types()


async def wait_for_report(client: RecordingClient, within: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not journal_errors(client):
        assert loop.time() < deadline, "no _acp_agent/journal_error arrived"
        await asyncio.sleep(0.01)


async def test_a_faulty_session_does_not_affect_another_and_heals_when_the_fault_clears(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "s.jsonl",
        {"chunks": ["bad ", "one"], "delayMs": 5},
        {"chunks": ["good ", "one"], "delayMs": 5},
        {"text": "good two"},
    )
    # every flush of session `bad` fails three times in a row (its calls #2..#4), then works
    env = {**agent_env, "ACP_AGENT_JOURNAL_FAULTS": "bad/fsync:eio@2x3"}
    client = RecordingClient()
    async with recorded_agent(client, serve_command(script), env=env) as agent:
        await initialize(agent)
        bad = await new_session(agent, workspace, "bad")
        good = await new_session(agent, workspace, "good")
        assert (await agent.prompt_text(bad, "bad prompt")).stop_reason == "end_turn"
        assert (await agent.prompt_text(good, "good prompt")).stop_reason == "end_turn"
        await inject(agent, good, "good note")
        assert await when_idle(agent, good) == HEALTHY
        good_bytes = journal_file(state_dir, good).read_bytes()
        healths = [await when_idle(agent, bad) for _ in range(4)]
        assert (await agent.prompt_text(good, "good again")).stop_reason == "end_turn"
    reported = journal_errors(client)
    assert reported and {r["sessionId"] for r in reported} == {bad}
    assert healths[0]["journal"]["healthy"] is False
    assert "Input/output error" in healths[0]["journal"]["lastError"]
    assert healths[-1] == HEALTHY, healths
    assert good_bytes.count(b"\n") == 1 + 7  # header, a whole turn and the note: all durable
    bad_journal = check_journal(state_dir, bad, workspace)
    assert bad_journal.types() == [
        "turn/start", "user/message", "step/start", "assistant/message", "step/end", "turn/end",
    ]  # fmt: skip
    good_journal = check_journal(state_dir, good, workspace)
    assert good_journal.end_reasons() == ["completed", "completed"]
    assert "agent/error" not in bad_journal.types() + good_journal.types()


async def new_session(agent: RecordedAgent, workspace: Path, session_id: str) -> str:
    response = await agent.conn.new_session(
        cwd=str(workspace), mcp_servers=[], acp_agent={"sessionId": session_id}
    )  # the SDK sends extra keyword arguments as the request's _meta
    return response.session_id


# --- a session/new cut short ------------------------------------------------------------------

# What ``create_files`` (acp_agent/journal/opening.py) leaves when the process dies inside
# ``session/new``, before the staging file is renamed to ``journal.jsonl``: the directory, the
# lock file (naming the dead pid) and maybe the staging file. ``session/new`` was never answered,
# so no client knows the session; opening.py promises "the id stays usable".
CREATE_REMNANTS = {
    "crash-lock-only": None,
    "crash-half-header": b'{"type":"session","version":1,"id":"cra',
    "crash-whole-header": b'{"type":"session","version":1,"id":"crash-whole-header",'
    b'"createdAt":1,"cwd":"/"}\n',
}


async def test_a_session_new_cut_by_a_crash_leaves_no_session_and_its_id_usable(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (state_dir / "sessions").mkdir(mode=0o700)
    for sid, staged in CREATE_REMNANTS.items():
        directory = state_dir / "sessions" / sid
        directory.mkdir(mode=0o700)
        (directory / "lock").write_bytes(b"999999\n")
        if staged is not None:
            (directory / "journal.jsonl.new").write_bytes(staged)
        for item in directory.iterdir():
            item.chmod(0o600)

    script = write_script(tmp_path / "s.jsonl", *[{"text": "fresh start"}] * len(CREATE_REMNANTS))
    outcomes: dict[str, dict[str, Any]] = {sid: {} for sid in CREATE_REMNANTS}
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        await initialize(agent)
        listed = await agent.conn.list_sessions()
        for sid, outcome in outcomes.items():
            try:
                await agent.conn.load_session(cwd=str(workspace), session_id=sid)
                outcome["load"] = "loaded"
            except RequestError as exc:
                outcome["load"] = exc.code
            try:
                await new_session(agent, workspace, sid)
                outcome["new"] = "created"
                outcome["prompt"] = (await agent.prompt_text(sid, "hello")).stop_reason
            except RequestError as exc:
                outcome["new"] = (exc.code, str(exc))
    assert listed.sessions == []
    expected = {"load": -32002, "new": "created", "prompt": "end_turn"}
    # never acknowledged, so an unknown session; and the id stays usable
    assert outcomes == {sid: expected for sid in CREATE_REMNANTS}, outcomes
    for sid in CREATE_REMNANTS:
        journal = check_journal(state_dir, sid, workspace)
        assert journal.end_reasons() == ["completed"]
        assert not (state_dir / "sessions" / sid / "journal.jsonl.new").exists()


# --- a fault while the load repairs -----------------------------------------------------------


async def interrupted_session(tmp_path: Path, workspace: Path, agent_env: dict[str, str]) -> str:
    """A session SIGKILLed mid-turn: its journal ends with an open turn."""
    script = write_script(tmp_path / "hang.jsonl", {"chunks": ["partial "], "hang": True})
    async with killable_agent(
        command=serve_command(script), env=agent_env, validate=False, expect_exit_code=None
    ) as agent:
        sid = await agent.handshake(workspace)
        turn = asyncio.create_task(agent.prompt_text(sid, "never finishes"))
        await wait_until_said(agent, sid, "partial ")
        await sigkill(agent)
        await asyncio.gather(turn, return_exceptions=True)
    return sid


async def wait_until_said(agent: RecordedAgent, sid: str, fragment: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not any(
        u["sessionUpdate"] == "agent_message_chunk" and u["content"].get("text") == fragment
        for u in agent.transcript.session_updates(sid)
    ):
        assert loop.time() < deadline, f"the agent never said {fragment!r}"
        await asyncio.sleep(0.01)


async def torn_session(tmp_path: Path, workspace: Path, agent_env: dict[str, str]) -> str:
    """A clean session whose journal then got half a line appended (a torn tail)."""
    sid = await clean_session(tmp_path, workspace, agent_env)
    path = journal_file(Path(agent_env["ACP_AGENT_STATE_DIR"]), sid)
    path.write_bytes(path.read_bytes() + b'{"seq":21,"time":17')
    return sid


# (what the load must repair, the fault that hits the repair)
REPAIR_FAULTS = {
    "interrupted turn, its repair fsync fails": (interrupted_session, "fsync:eio@1"),
    "interrupted turn, its repair write fails": (interrupted_session, "write:enospc@1"),
    "torn tail, cutting it fails": (torn_session, "truncate:eio@1"),
    "torn tail, syncing the cut fails": (torn_session, "fsync:eio@1"),
}


@pytest.mark.parametrize(
    ("make_session", "faults"), REPAIR_FAULTS.values(), ids=REPAIR_FAULTS.keys()
)
async def test_a_failed_repair_on_load_neither_hides_the_error_nor_keeps_the_lock(
    make_session: Callable[[Path, Path, dict[str, str]], Any],
    faults: str,
    tmp_path: Path,
    workspace: Path,
    state_dir: Path,
    agent_env: dict[str, str],
) -> None:
    """The load of a damaged session repairs it before serving it: it cuts a torn tail off
    (truncate #1, fsync #1 of the opened journal) or appends the closing events of an
    interrupted turn and flushes them (write #1, fsync #1). Here that I/O fails. Either the
    session is served anyway (what is admitted stays in memory, ``_acp_agent/journal_error``
    reports the failure, a later flush retries it) or the load fails with a clear error and lets
    go of the session. What must not happen: a bare internal error, and the session staying
    locked by a process that does not serve it."""
    sid = await make_session(tmp_path, workspace, agent_env)
    path = journal_file(state_dir, sid)
    before = path.read_bytes()

    script = write_script(tmp_path / "s.jsonl")
    env = {**agent_env, "ACP_AGENT_JOURNAL_FAULTS": faults}
    client = RecordingClient()
    async with recorded_agent(client, serve_command(script), env=env) as faulty:
        await initialize(faulty)
        try:
            await faulty.conn.load_session(cwd=str(workspace), session_id=sid)
            failure = None
        except RequestError as exc:
            failure = exc
        # meanwhile, another (healthy) process tries the same session
        async with recorded_agent(command=serve_command(script), env=agent_env) as other:
            await initialize(other)
            try:
                await other.conn.load_session(cwd=str(workspace), session_id=sid)
                other_failure = None
            except RequestError as exc:
                other_failure = exc
        if failure is None:
            health = await when_idle(faulty, sid)
    if failure is None:
        # served: reported, and healed by the next flush
        assert journal_errors(client), "the failed repair flush was not reported"
        assert health == HEALTHY
        assert other_failure is not None and (other_failure.data or {}).get("reason") == (
            "journal_locked"
        )
    else:
        problems = []
        if str(failure) == "Internal error" or not failure.data:
            problems.append(f"the load failed without saying why: {failure.code} {failure}")
        if other_failure is not None:
            problems.append(
                "the faulty process refused the session but kept it locked: "
                f"{other_failure.code} {other_failure}"
            )
        assert not problems, "\n".join(problems)
    prefix_len = before.rfind(b"\n") + 1
    assert path.read_bytes().startswith(before[:prefix_len])
    # in the end, a healthy process serves the session, repaired
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        await initialize(agent)
        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons()[-1] in ("interrupted", "completed")
    assert before[prefix_len:] in side_files(path.parent) or prefix_len == len(before)
