"""The session invariant: one passing and one failing journal per rule, with exact messages."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from acp_agent.journal import invariant
from acp_agent.journal.events import (
    Entry,
    Event,
    SessionHeader,
    SourceKind,
    StepEnd,
    StepStart,
    TurnEndKind,
    TurnStart,
    UnknownEvent,
)
from acp_agent.journal.invariant import Violation, check, check_file

from .builders import (
    HEADER,
    assistant,
    call,
    end,
    error,
    journal_bytes,
    numbered,
    result,
    simple_turn,
    steering,
    tool_turn,
    user,
    write_journal,
)


def problems(events: list[Event], **options: bool) -> list[str]:
    return [str(v) for v in check(HEADER, numbered(events), **options)]


def open_step(turn: int = 1, step: int = 1) -> list[Event]:
    return [TurnStart(turn), user("go"), StepStart(turn, step)]


def title(text: str) -> UnknownEvent:
    return UnknownEvent("session/title", msgspec.Raw(msgspec.json.encode({"title": text})))


def test_a_full_session_passes() -> None:
    events: list[Event] = [
        user("before anything", kind=SourceKind.CLIENT),
        *tool_turn(1, ["c1", "c2"]),
        user("between turns", kind=SourceKind.SESSION_REF),
        user("and another", kind=SourceKind.PLUGIN),
        TurnStart(2),
        user("prompt"),
        user("hook context", kind=SourceKind.HOOK),
        StepStart(2, 1),
        assistant(2, 1, "reading", ["r1"]),
        call(2, 1, "r1"),
        result(2, 1, "r1", error=True),
        user("post-tool context", kind=SourceKind.TOOL),
        StepEnd(2, 1),
        steering(2),
        user("staged injection", kind=SourceKind.CLIENT),
        StepStart(2, 2),
        error(2, 2),
        StepEnd(2, 2),
        error(2),
        end(2, TurnEndKind.ERROR),
        *simple_turn(3),
        user("after the last turn", kind=SourceKind.CLIENT),
    ]
    assert problems(events) == []


# -- seqs -------------------------------------------------------------------------------------------------


def test_seqs_are_contiguous_from_one() -> None:
    entries = numbered([user("a"), user("b"), user("c")])
    gapped = [entries[0], Entry(3, 0, entries[1].event), Entry(4, 0, entries[2].event)]
    assert [str(v) for v in check(HEADER, gapped)] == [
        "seq 3: expected seq 2",
        "seq 4: expected seq 3",
    ]
    assert check(HEADER, entries) == []


# -- outside a turn -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (StepStart(1, 1), "seq 1: step/start outside a turn"),
        (StepEnd(1, 1), "seq 1: step/end outside a turn"),
        (end(1), "seq 1: turn/end outside a turn"),
        (assistant(1, 1), "seq 1: assistant/message outside a turn"),
        (call(1, 1, "c1"), "seq 1: tool/call outside a turn"),
        (result(1, 1, "c1"), "seq 1: tool/result outside a turn"),
        (steering(1), "seq 1: steering/message outside a turn"),
        (error(1), "seq 1: agent/error outside a turn"),
        (title("x"), "seq 1: session/title outside a turn"),
    ],
)
def test_outside_a_turn_only_user_messages_may_appear(event: Event, message: str) -> None:
    assert problems([event]) == [message]
    assert problems([user("fine"), user("also fine")]) == []


def test_standalone_metadata_types_are_an_explicit_seam(monkeypatch: pytest.MonkeyPatch) -> None:
    assert frozenset({"session/compaction"}) == invariant.STANDALONE_TYPES
    assert problems([*open_step(), title("in a turn is fine"), StepEnd(1, 1), end(1)]) == []
    monkeypatch.setattr(invariant, "STANDALONE_TYPES", frozenset({"session/title"}))
    assert problems([title("named"), *simple_turn(1), title("renamed")]) == []


# -- turns ---------------------------------------------------------------------------------------------------


def test_turn_start_only_between_turns() -> None:
    assert problems([*open_step(), StepEnd(1, 1), TurnStart(2), end(1)]) == [
        "seq 5: turn/start while turn 1 is open"
    ]
    assert problems([*simple_turn(1), *simple_turn(2)]) == []


def test_turn_numbers_are_contiguous() -> None:
    assert problems([*simple_turn(1), *simple_turn(3)]) == [
        "seq 7: turn/start 3 out of order (expected turn 2)"
    ]
    assert problems(simple_turn(2)) == ["seq 1: turn/start 2 out of order (expected turn 1)"]


def test_turn_end_matches_the_open_turn() -> None:
    assert problems([*open_step(), StepEnd(1, 1), end(2)]) == [
        "seq 5: turn/end 2 does not match open turn 1"
    ]


def test_turn_end_closes_the_open_step_first() -> None:
    assert problems([*open_step(), end(1)]) == ["seq 4: turn/end while step 1 of turn 1 is open"]


def test_a_final_open_turn_is_reported_unless_allowed() -> None:
    events = [*simple_turn(1), *open_step(2)]
    assert problems(events) == ["seq 7: turn 2 is open (no turn/end)"]
    assert problems(events, allow_open_tail=True) == []


def test_a_turn_asks_the_model_at_least_once() -> None:
    assert problems([TurnStart(1), user("go"), end(1)]) == [
        "seq 3: turn 1 ended without a step (the model was never asked)"
    ]
    assert problems([TurnStart(1), user("go"), end(1, TurnEndKind.CANCELLED)]) == [
        "seq 3: turn 1 ended without a step (the model was never asked)"
    ]
    # a crash can cut a turn before its first step: load closes it as interrupted
    assert problems([TurnStart(1), user("go"), end(1, TurnEndKind.INTERRUPTED)]) == []


# -- steps ---------------------------------------------------------------------------------------------------


def test_steps_are_numbered_from_one_per_turn() -> None:
    assert problems([TurnStart(1), StepStart(1, 2), StepEnd(1, 2), end(1)]) == [
        "seq 2: step/start 2 out of order in turn 1 (expected step 1)"
    ]
    assert (
        problems(
            [
                *simple_turn(1),
                TurnStart(2),
                StepStart(2, 1),
                StepEnd(2, 1),
                StepStart(2, 2),
                StepEnd(2, 2),
                end(2),
            ]
        )
        == []
    )


def test_step_start_belongs_to_the_open_turn() -> None:
    assert problems([TurnStart(1), StepStart(2, 1), StepEnd(1, 1), end(1)]) == [
        "seq 2: step/start for turn 2 inside turn 1"
    ]


def test_steps_do_not_nest() -> None:
    assert problems([*open_step(), StepStart(1, 2), StepEnd(1, 1), end(1)]) == [
        "seq 4: step/start inside step 1 of turn 1"
    ]


def test_step_end_closes_the_open_step() -> None:
    assert problems([TurnStart(1), StepStart(1, 1), StepEnd(1, 1), StepEnd(1, 1), end(1)]) == [
        "seq 4: step/end outside a step"
    ]
    assert problems([*open_step(), StepEnd(1, 2), end(1)]) == [
        "seq 4: step/end for turn 1 step 2 inside turn 1 step 1"
    ]


# -- inside a step -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "name"),
    [
        (assistant(1, 1), "assistant/message"),
        (call(1, 1, "c1"), "tool/call"),
        (result(1, 1, "c1"), "tool/result"),
    ],
)
def test_step_events_need_an_open_step(event: Event, name: str) -> None:
    assert problems([TurnStart(1), StepStart(1, 1), StepEnd(1, 1), event, end(1)]) == [
        f"seq 4: {name} outside a step"
    ]


def test_step_events_carry_the_open_step() -> None:
    assert problems([*open_step(), assistant(1, 2), StepEnd(1, 1), end(1)]) == [
        "seq 4: assistant/message for turn 1 step 2 inside turn 1 step 1"
    ]
    assert problems(
        [*open_step(), call(2, 1, "c1"), result(1, 1, "c1"), StepEnd(1, 1), end(1)]
    ) == ["seq 4: tool/call for turn 2 step 1 inside turn 1 step 1"]


# -- tool batches ----------------------------------------------------------------------------------------------


def test_a_result_needs_its_call() -> None:
    events = [*simple_turn(1), *open_step(2), call(2, 1, "c1"), result(2, 1, "c9")]
    assert problems(events, allow_open_tail=True) == [
        "seq 11: tool/result for unknown callId c9 in turn 2"
    ]


def test_the_example_message_of_the_brief() -> None:
    events: list[Event] = [
        TurnStart(1),
        StepStart(1, 1),
        StepEnd(1, 1),
        end(1),
        TurnStart(2),
        StepStart(2, 1),
        result(2, 1, "c9"),
    ]
    assert problems(events, allow_open_tail=True) == [
        "seq 7: tool/result for unknown callId c9 in turn 2"
    ]


def test_a_call_has_at_most_one_result() -> None:
    events = [
        *open_step(),
        call(1, 1, "c1"),
        result(1, 1, "c1"),
        result(1, 1, "c1"),
        StepEnd(1, 1),
        end(1),
    ]
    assert problems(events) == ["seq 6: duplicate tool/result for callId c1 in turn 1"]


def test_call_ids_are_unique_in_a_step() -> None:
    events = [
        *open_step(),
        call(1, 1, "c1"),
        call(1, 1, "c1"),
        result(1, 1, "c1"),
        StepEnd(1, 1),
        end(1),
    ]
    assert problems(events) == ["seq 5: duplicate tool/call callId c1 in turn 1"]


def test_results_come_in_call_order() -> None:
    calls = [call(1, 1, "c1"), call(1, 1, "c2")]
    wrong = [*open_step(), *calls, result(1, 1, "c2"), result(1, 1, "c1"), StepEnd(1, 1), end(1)]
    assert problems(wrong) == [
        "seq 6: tool/result for callId c2 out of order in turn 1 (expected c1)"
    ]
    interleaved = [
        *open_step(),
        call(1, 1, "c1"),
        result(1, 1, "c1"),
        call(1, 1, "c2"),
        result(1, 1, "c2"),
        StepEnd(1, 1),
        end(1),
    ]
    assert problems(interleaved) == []


def test_a_step_ends_only_after_every_result() -> None:
    events = [
        *open_step(),
        call(1, 1, "c1"),
        call(1, 1, "c2"),
        result(1, 1, "c1"),
        StepEnd(1, 1),
        end(1),
    ]
    assert problems(events) == ["seq 7: step/end 1 of turn 1 with tool calls lacking results: c2"]


# -- messages inside a turn --------------------------------------------------------------------------------------


def test_steering_is_inside_a_turn_but_outside_a_step() -> None:
    assert problems([*open_step(), steering(1), StepEnd(1, 1), end(1)]) == [
        "seq 4: steering/message inside step 1 of turn 1"
    ]
    assert problems([*open_step(), StepEnd(1, 1), steering(2), end(1)]) == [
        "seq 5: steering/message for turn 2 inside turn 1"
    ]
    assert (
        problems([*open_step(), StepEnd(1, 1), steering(1), StepStart(1, 2), StepEnd(1, 2), end(1)])
        == []
    )


def test_agent_error_is_inside_a_turn_naming_a_step_it_had() -> None:
    assert problems([*open_step(), error(1, 1), StepEnd(1, 1), error(1), end(1)]) == []
    assert problems([*open_step(), error(1, 3), StepEnd(1, 1), end(1)]) == [
        "seq 4: agent/error for step 3 but turn 1 has 1 steps"
    ]
    assert problems([*open_step(), StepEnd(1, 1), error(2), end(1)]) == [
        "seq 5: agent/error for turn 2 inside turn 1"
    ]


def test_user_messages_wait_for_the_whole_batch() -> None:
    head: list[Event] = [
        *open_step(),
        assistant(1, 1, "two reads", ["c1", "c2"]),
        call(1, 1, "c1"),
        call(1, 1, "c2"),
        result(1, 1, "c1"),
    ]
    tail: list[Event] = [result(1, 1, "c2"), StepEnd(1, 1), end(1)]
    assert problems([*head, user("ctx", kind=SourceKind.TOOL), *tail]) == [
        "seq 8: user/message inside an unfinished tool batch in turn 1 step 1 (no result yet for c2)"
    ]
    assert problems([*head, *tail[:1], user("ctx", kind=SourceKind.TOOL), *tail[1:]]) == []


def test_the_batch_is_what_the_assistant_announced() -> None:
    """Calls recorded one at a time: a context may not slip in before the next call either."""
    events = [
        *open_step(),
        assistant(1, 1, "two reads", ["c1", "c2"]),
        call(1, 1, "c1"),
        result(1, 1, "c1"),
        user("too early", kind=SourceKind.CLIENT),
        call(1, 1, "c2"),
        result(1, 1, "c2"),
        StepEnd(1, 1),
        end(1),
    ]
    assert problems(events) == [
        "seq 7: user/message inside an unfinished tool batch in turn 1 step 1 (no result yet for c2)"
    ]


def test_one_misplaced_event_is_one_violation() -> None:
    assert problems([result(1, 1, "c1"), *simple_turn(1)]) == ["seq 1: tool/result outside a turn"]


# -- the header and files ----------------------------------------------------------------------------------------


def test_header_problems() -> None:
    bad = SessionHeader(id="../x", created_at=1, cwd="relative/dir", type="sess", version=2)
    assert [str(v) for v in check(bad, [])] == [
        "header: type is 'sess', expected 'session'",
        "header: unsupported version 2",
        "header: invalid session id '../x'",
        "header: cwd 'relative/dir' is not absolute",
    ]


def test_check_file_reports_load_problems_as_violations(sdir: Path) -> None:
    entries = numbered([*simple_turn(1), *open_step(2)])
    data = journal_bytes(entries)
    path = write_journal(sdir, data)
    assert check_file(sdir) == [Violation(7, "turn 2 is open (no turn/end)")]
    assert check_file(path, allow_open_tail=True) == []

    path.write_bytes(data + b'{"seq":10,')
    assert check_file(path, allow_open_tail=True) == [
        Violation(10, f"damaged tail at byte {len(data)} (10 bytes): no trailing newline")
    ]
    damaged = bytearray(data)
    header_end = data.index(b"\n") + 1
    damaged[header_end + 5] ^= 0x01
    path.write_bytes(bytes(damaged))
    [violation] = check_file(path)
    assert violation.seq == 1
    assert str(violation).startswith(
        f"seq 1: journal corrupt at byte {header_end}: checksum mismatch"
    )
    assert check_file(sdir / "nope.jsonl")[0].message.startswith("cannot read journal: [Errno 2]")
    assert path.read_bytes() == bytes(damaged)  # checking never writes
