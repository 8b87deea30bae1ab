"""Group commit: one write and one ``fdatasync`` per semantic barrier, never one per chunk.

``reliability.md``: a turn's durability barriers are the prompt admitted before the model call,
the tool calls recorded before the first tool runs, each tool's result before the next tool of
its batch runs (issue 14: a crash inside a batch must not lose a finished tool's result), the
step boundary before the next model call (it also covers the batch's last result), and the turn
end. So a batch of N tools costs N syncs (its calls, then N - 1 results) plus the step boundary
after it, and a turn with one two-tool batch costs exactly five syncs, whether its model
streamed one chunk or two hundred.

The agent runs under ``bench/sync_counting_agent.py``, which records every real
``fsync``/``fdatasync`` call with the file and its size at that moment; a size maps to the last
journal line it covers, i.e. the seq the sync made durable. The ``journal_flushed`` debug log
lines must tell the same story.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import sync_counting_agent
from tests.integration.support import (
    Journal,
    check_journal,
    initialize,
    line,
    new_session,
    prompt,
    read_call,
    read_jsonl,
    session_path,
    write_script,
)
from tests.support.recording import run_agent_raw

pytestmark = pytest.mark.subprocess

SID = "barriers"
TOOLS = {
    "thought": "plan",
    "text": "reading",
    "toolCalls": [read_call("a", "a.txt"), read_call("b", "b.txt")],
}
MANY = [f"chunk {i} " for i in range(200)]


def durable_seqs_of_syncs(sync_log: Path, journal_path: Path) -> list[int]:
    """The seq each fdatasync of the journal made durable, in call order."""
    data = journal_path.read_bytes()
    seq_at: dict[int, int] = {}
    offset = 0
    for seq, raw in enumerate(data.splitlines(keepends=True)):
        offset += len(raw)
        seq_at[offset] = seq  # seq 0: the header alone
    seqs = []
    for record in read_jsonl(sync_log):
        if record["path"] != str(journal_path):
            continue
        assert record["call"] == "fdatasync", record
        assert record["size"] in seq_at, f"a sync at {record['size']}, not at a line end"
        seqs.append(seq_at[record["size"]])
    return seqs


def durable_seqs_of_logs(log_file: Path) -> list[int]:
    events = read_jsonl(log_file)
    return [
        e["durable_seq"]
        for e in events
        if e.get("event") == "journal_flushed" and e.get("session_id") == SID
    ]


def seq_of(journal: Journal, type_: str, turn: int, nth: int = -1) -> int:
    seqs: list[int] = [
        e["seq"] for e in journal.events if e["type"] == type_ and e["data"].get("turn") == turn
    ]
    return seqs[nth]


def test_fdatasyncs_per_turn_are_the_barriers_not_the_chunks(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "a.txt").write_text("A\n", encoding="utf-8")
    (workspace / "b.txt").write_text("B\n", encoding="utf-8")
    script = write_script(
        tmp_path / "script.jsonl",
        TOOLS,
        {"chunks": MANY},  # turn 1: two tools, then 200 chunks
        TOOLS,
        {"chunks": ["one"]},  # turn 2: two tools, then 1 chunk
        {"chunks": MANY},  # turn 3: no tools, 200 chunks
    )
    sync_log, log_file = tmp_path / "syncs.jsonl", tmp_path / "agent.log"
    command = sync_counting_agent.command(
        "--model", f"script:{script}", "--log-level", "debug", "--log-file", str(log_file)
    )
    env = {**agent_env, sync_counting_agent.ENV: str(sync_log)}
    lines = [
        line(initialize(1)),
        line(new_session(2, workspace, SID)),
        line(prompt(3, SID, "two hundred")),
        line(prompt(4, SID, "just one")),
        line(prompt(5, SID, "no tools")),
    ]
    frames, stderr, code = run_agent_raw(lines, env=env, command=command, timeout=30)
    assert code == 0, stderr.decode(errors="replace")[-2000:]
    assert stderr == b"", "with --log-file nothing goes to stderr"
    answers = {f["id"]: f["result"]["stopReason"] for f in frames if "result" in f and f["id"] >= 3}
    assert answers == {3: "end_turn", 4: "end_turn", 5: "end_turn"}

    journal = check_journal(state_dir, SID, workspace)
    synced = durable_seqs_of_syncs(sync_log, session_path(state_dir, SID) / "journal.jsonl")
    logged = durable_seqs_of_logs(log_file)
    assert [s for s in synced if s > 0] == logged, "journal_flushed lines disagree with fdatasyncs"

    counts = {}
    for number, turn in enumerate(journal.turns(), start=1):
        first, last = turn[0]["seq"], turn[-1]["seq"]
        in_turn = [s for s in synced if first <= s <= last]
        counts[number] = len(in_turn)
        if number in (1, 2):
            assert in_turn == [
                seq_of(journal, "step/start", number, 0),  # turn open: before the first model call
                seq_of(journal, "tool/call", number),  # the batch recorded before a tool runs
                seq_of(journal, "tool/result", number, 0),  # the first result, before tool two
                seq_of(journal, "step/start", number, 1),  # step boundary (and the last result)
                last,  # turn end
            ], f"turn {number}: syncs made seqs {in_turn} durable"
        else:
            assert in_turn == [seq_of(journal, "step/start", number, 0), last], in_turn
    chunk_events = sum(1 for f in frames if f.get("method") == "session/update")
    print(
        f"fdatasyncs per turn: 200-chunk two-tool turn {counts[1]}, 1-chunk two-tool turn "
        f"{counts[2]}, 200-chunk turn without tools {counts[3]} "
        f"({chunk_events} session/update frames in all; {len(synced)} syncs of journal.jsonl)"
    )
    assert counts == {1: 5, 2: 5, 3: 2}
    assert synced[-1] == journal.events[-1]["seq"], "the last event was never synced"
