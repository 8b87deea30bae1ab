"""reliability.md's twelve scenarios and the ones added since (13, issue 14), each mapped to the
tests that hold its pass criteria.

One source of truth for three readers: ``test_scenarios.py`` checks that every test named here
exists (so the map cannot rot), ``make test-reliability`` runs exactly these tests plus the
fuzzers at full size (``python -m tests.reliability.scenarios`` prints their node ids), and
``docs/reliability.md`` reports on them scenario by scenario. Scenarios 1-5 live in
``tests/durability`` and ``tests/journal``, 6-10 partly in ``tests/integration``; this suite adds
what was missing (8-12) and the fuzzers (``tests/fuzz``, for 6 and 7 at scale). 13 (named pipes,
sockets and devices in the workspace) is not in reliability.md: issue 14 found file tools blocking
on a named pipe for ever, and the scenario keeps every file tool honest about it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Scenario:
    number: int
    title: str
    criteria: str
    tests: tuple[str, ...]
    """``path::function`` node ids (a parametrized function runs all its cases)."""


DUR, INT, REL = "tests/durability/", "tests/integration/", "tests/reliability/"

SCENARIOS = (
    Scenario(
        1,
        "kill -9 at random moments during streaming and injection",
        "every event acknowledged as durable is there after restart; seq contiguous; load ok",
        (
            f"{DUR}test_kill9.py::test_kill9_loop_loses_nothing_acknowledged",
            f"{REL}test_kill_inside_a_batch.py::test_a_kill_after_a_tools_result_keeps_every_result_reported_completed",
        ),
    ),
    Scenario(
        2,
        "torn tail at every offset of the last records, NUL padding, garbage",
        "longest valid prefix; the next append starts on a fresh line",
        (
            f"{DUR}test_torn_and_faults.py::test_a_torn_tail_is_moved_aside_and_the_session_goes_on_on_a_fresh_line",
            f"{DUR}test_torn_and_faults.py::test_offsets_across_the_last_two_records_load_to_their_longest_valid_prefix",
            "tests/journal/test_open.py::test_a_torn_tail_at_every_offset_of_the_last_two_records",
            "tests/journal/test_open.py::test_nul_padding_and_garbage_after_the_last_good_line_are_moved_aside",
        ),
    ),
    Scenario(
        3,
        "one flipped byte mid-file",
        "load refuses, names the seq, file unchanged",
        (
            f"{DUR}test_load_roundtrip.py::test_loading_a_journal_with_a_flipped_byte_fails_clearly_and_leaves_it_unchanged",
            "tests/journal/test_open.py::test_any_flipped_byte_inside_the_history_is_refused_naming_seq_and_offset",
        ),
    ),
    Scenario(
        4,
        "short write, write error, fsync error, disk full, injected",
        "reported, no fake agent/error, other sessions unaffected, retry works once it clears",
        (
            f"{DUR}test_torn_and_faults.py::test_a_flush_fault_during_a_turn_is_reported_and_healed_never_an_agent_error",
            f"{DUR}test_torn_and_faults.py::test_a_faulty_session_does_not_affect_another_and_heals_when_the_fault_clears",
            f"{DUR}test_torn_and_faults.py::test_a_failed_idle_flush_then_a_kill_leaves_nothing_torn_behind",
            f"{DUR}test_torn_and_faults.py::test_a_failed_turn_end_flush_then_a_kill_is_repaired_as_interrupted",
            "tests/journal/test_writer_faults.py::test_a_short_write_alone_is_not_an_error",
        ),
    ),
    Scenario(
        5,
        "two processes open the same session",
        "the second fails fast with a clear error",
        (
            f"{DUR}test_load_roundtrip.py::test_a_second_process_cannot_load_a_session_the_first_holds_open",
        ),
    ),
    Scenario(
        6,
        "a corpus of malformed frames interleaved with valid requests",
        "exact codes; every valid request answered in order; the process stays up",
        (
            f"{INT}test_input_table.py::test_a_corpus_of_bad_lines_between_valid_requests",
            "tests/fuzz/test_findings.py::test_deeply_nested_json_is_answered_and_serving_goes_on",
            "tests/fuzz/test_findings.py::test_an_id_beyond_int64_is_not_echoed_outside_the_schema",
        ),
    ),
    Scenario(
        7,
        "an 80 MiB line",
        "rejected, next request answered, memory bounded",
        (f"{INT}test_input_table.py::test_an_80_mib_line_is_rejected_in_bounded_memory",),
    ),
    Scenario(
        8,
        "the client stops reading stdout for seconds while a turn streams, then cancels",
        "memory bounded, cancel honoured, all updates before the cancelled response",
        (
            f"{INT}test_process.py::test_a_client_that_pauses_reading_then_cancels",
            f"{REL}test_stalled_client.py::test_a_cancel_is_honoured_while_the_client_is_not_reading",
        ),
    ),
    Scenario(
        9,
        "stderr piped and never read, debug logging on",
        "no deadlock",
        (
            f"{INT}test_process.py::test_stderr_that_nobody_reads_never_blocks_the_agent",
            f"{REL}test_endings.py::test_sigterm_while_a_tool_waits_for_the_client_and_stderr_is_full",
        ),
    ),
    Scenario(
        10,
        "stdin EOF mid-turn; SIGTERM mid-turn; the client dies (EPIPE)",
        "clean exit, journal consistent",
        (
            f"{INT}test_process.py::test_stdin_eof_mid_turn_lets_the_turn_finish",
            f"{INT}test_process.py::test_a_signal_mid_turn_cancels_answers_and_exits_0",
            f"{INT}test_process.py::test_client_closing_our_stdout_mid_turn_ends_the_process_cleanly",
            f"{REL}test_endings.py::test_stdin_eof_with_a_queued_prompt_and_staged_context",
            f"{REL}test_endings.py::test_epipe_while_a_tool_batch_waits_keeps_the_staged_context",
            f"{REL}test_endings.py::test_sigterm_while_a_prompt_hook_runs_leaves_no_hook_behind",
            f"{REL}test_signal_in_every_state.py::test_sigterm_after_stdin_eof_cancels_the_turn_the_server_was_draining",
            f"{REL}test_signal_in_every_state.py::test_sigterm_with_a_worker_thread_stuck_for_ever_still_exits_0_within_3s",
            f"{REL}test_signal_in_every_state.py::test_stdin_eof_does_not_wait_for_an_abandoned_thread",
        ),
    ),
    Scenario(
        11,
        "cancel at random points of a turn with tool batches and injections",
        "invariant holds every time",
        (f"{REL}test_cancel_anywhere.py::test_cancel_at_random_points_keeps_every_promise",),
    ),
    Scenario(
        12,
        "many sessions at once with concurrent prompts, injections and cancels",
        "invariant holds for each",
        (f"{REL}test_many_sessions.py::test_many_sessions_at_once_each_keep_the_invariant",),
    ),
    Scenario(
        13,
        "named pipes, sockets and devices in the workspace, given to every file tool",
        "refused with a clear error naming the kind, never opened blocking; the turn goes on",
        (
            f"{REL}test_non_regular_files.py::test_file_tools_refuse_non_regular_files_and_the_turn_goes_on",
            f"{REL}test_non_regular_files.py::test_listing_and_searching_walk_past_non_regular_files",
        ),
    ),
    Scenario(
        14,
        "a client that answers late, never, or oddly: a held terminal/release, an answer with a"
        " lone surrogate, a process that exits while its terminals run",
        "no other session waits on it; the turn completes; every terminal is killed and released",
        (
            f"{INT}test_close_off_the_reader.py::test_close_during_a_client_terminal_command_leaves_the_reader_free",
            f"{INT}test_close_off_the_reader.py::test_a_load_pipelined_behind_a_close_waits_for_it_then_reopens",
            f"{INT}test_wire_edges.py::test_a_lone_surrogate_in_the_clients_fs_answer_completes_the_turn",
            f"{INT}test_terminal_release.py::test_a_signal_kills_and_releases_the_running_terminal",
            f"{INT}test_terminal_release.py::test_stdin_eof_kills_and_releases_the_running_terminal",
        ),
    ),
)

EXTRA = ("tests/fuzz/",)
"""Run with the scenarios by ``make test-reliability``: the in-process fuzzers too."""


def node_ids() -> list[str]:
    """Every test of the map, once, then ``EXTRA`` (tests inside it are not named twice)."""
    ids = [test for scenario in SCENARIOS for test in scenario.tests]
    outside = [test for test in ids if not test.startswith(EXTRA)]
    return [*dict.fromkeys(outside), *EXTRA]


if __name__ == "__main__":
    sys.stdout.write(" ".join(node_ids()) + "\n")
