"""``stable_boundaries`` and ``boundary_problem``: where a fork may cut a history."""

from __future__ import annotations

import pytest

from acp_agent.content import TextContent
from acp_agent.journal.events import (
    AssistantMessage,
    Entry,
    Event,
    StepEnd,
    StepStart,
    TextPart,
    TurnEnd,
    TurnEndKind,
    TurnEndReason,
    TurnStart,
    UserMessage,
    source,
)
from acp_agent.session.errors import ForkRefused
from acp_agent.session.fork import boundary_problem, fork_point, stable_boundaries


def user(text: str, kind: str = "user") -> UserMessage:
    return UserMessage(id=text, content=[TextContent(text=text)], source=source(kind))


def turn(number: int, prompt: str) -> list[Event]:
    """A complete one-step turn: 6 events."""
    return [
        TurnStart(number),
        user(prompt),
        StepStart(number, 1),
        AssistantMessage(number, 1, f"a{number}", [TextPart("ok")]),
        StepEnd(number, 1),
        TurnEnd(number, TurnEndReason(TurnEndKind.COMPLETED)),
    ]


def entries(*events: Event) -> list[Entry]:
    return [Entry(seq, 1000 + seq, event) for seq, event in enumerate(events, start=1)]


def test_an_empty_history_has_only_the_empty_boundary() -> None:
    assert stable_boundaries([]) == {0}
    assert fork_point("s", [], None) == 0


def test_turn_ends_are_boundaries_and_turn_insides_are_not() -> None:
    history = entries(*turn(1, "one"), *turn(2, "two"))
    assert stable_boundaries(history) == {0, 6, 12}
    assert fork_point("s", history, None) == 12


def test_out_of_turn_messages_are_boundaries_also_at_the_tail() -> None:
    history = entries(
        user("before", "client"), *turn(1, "one"), user("between", "client"), user("tail", "hook")
    )
    assert stable_boundaries(history) == {0, 1, 7, 8, 9}
    assert fork_point("s", history, None) == 9
    assert boundary_problem(history, 8) is None


def test_an_open_turn_contributes_no_boundary() -> None:
    history = entries(*turn(1, "one"), user("between", "client"), *turn(2, "two")[:4])
    assert stable_boundaries(history) == {0, 6, 7}
    assert fork_point("s", history, None) == 7
    problem = boundary_problem(history, 9)
    assert problem == "seq 9 is inside turn 2 (turn/start at seq 8, no turn/end yet)"


def test_a_seq_inside_a_closed_turn_names_the_turn_and_its_ends() -> None:
    history = entries(*turn(1, "one"), *turn(2, "two"))
    assert boundary_problem(history, 7) == (
        "seq 7 is inside turn 2 (turn/start at seq 7, turn/end at seq 12)"
    )
    assert boundary_problem(history, 3) == (
        "seq 3 is inside turn 1 (turn/start at seq 1, turn/end at seq 6)"
    )


def test_seqs_outside_the_journal_are_refused() -> None:
    history = entries(*turn(1, "one"))
    assert boundary_problem(history, 7) == "seq 7 is past the end of the journal (last seq 6)"
    assert boundary_problem(history, -1) == "seq -1 is negative (0 forks the empty history)"


def test_fork_point_refuses_a_non_boundary_with_the_reason() -> None:
    history = entries(*turn(1, "one"))
    with pytest.raises(ForkRefused) as refused:
        fork_point("p", history, 4)
    assert refused.value.seq == 4
    assert str(refused.value) == (
        "cannot fork session 'p' at seq 4: "
        "seq 4 is inside turn 1 (turn/start at seq 1, turn/end at seq 6)"
    )
    assert fork_point("p", history, 6) == 6
    assert fork_point("p", history, 0) == 0
