"""The turn table's destinations are honest: each row ends only in, and in every one of, the
phases it declares (``Row.may_end_in`` in ``machine._TABLE``).

The machine is explored breadth-first from the states the ``test_machine`` helpers build
(IDLE, ADMITTING, REQUESTING, RUNNING_TOOLS, manual and automatic COMPACTING), under step
limits that do and do not bite, feeding every legal input of a small alphabet. Every transition
taken is checked against its row (``checked``), and per row the phases reached must equal the
declared set: a phase reached but not declared fails at the step, one declared but never
reached fails the row's test (the declaration is too broad, or the alphabet too small). A
hypothesis random walk then checks the same inclusion on longer, deeper runs. The check lives
here, not in ``transition``: the machine stays as it was.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Final

import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from acp_agent.journal.events import TextPart, source
from acp_agent.turn import machine as m, vocabulary as s
from acp_agent.turn.machine import State, TurnMachine
from acp_agent.turn.vocabulary import (
    Admitted,
    Blocked,
    Cancel,
    CancelPrompt,
    CompactionDone,
    CompactionFailed,
    Inject,
    ModelDone,
    ModelFailed,
    ModelStop,
    Phase,
    Prompt,
    Steer,
    Steering,
    Submit,
    ToolDone,
)
from tests.session.test_machine import (
    CALL_A,
    CALL_B,
    admitting,
    auto_compacting,
    blocks,
    compact_prompt,
    compacting,
    ctx,
    requesting,
    running_tools,
    summary,
    user,
)

Key = tuple[Phase, type[s.Input]]
Reached = dict[Key, set[Phase]]

STEERING = Steering("s", blocks("steer"), source("user"))
TEXT = (TextPart("t"),)

# Every input the table knows, in the variants that take different paths; a worker result
# carries the current ticket (a stale one never reaches the table).
INPUTS: Final[tuple[Callable[[int], s.Input], ...]] = (
    lambda ticket: Submit(Prompt(1, blocks("p"))),
    lambda ticket: Submit(compact_prompt(2)),
    lambda ticket: Admitted(ticket, user("p"), (ctx("h"),)),
    lambda ticket: Admitted(ticket, user("p"), compact_first=True),
    lambda ticket: Blocked(ticket, "no"),
    lambda ticket: Inject(3, ctx("c")),
    lambda ticket: Steer(4, STEERING),
    lambda ticket: Steer(4, STEERING, start_turn=False),
    lambda ticket: ModelDone(ticket, "m", TEXT),
    lambda ticket: ModelDone(ticket, "m", TEXT, ModelStop.MAX_TOKENS),
    lambda ticket: ModelDone(ticket, "m", (*TEXT, CALL_A), ModelStop.CANCELLED),
    lambda ticket: ModelDone(ticket, "m", (CALL_A,)),
    lambda ticket: ModelDone(ticket, "m", (CALL_A, CALL_B)),
    lambda ticket: ModelFailed(ticket, "m", TEXT, "boom"),
    lambda ticket: ToolDone(ticket, blocks("r"), False),
    lambda ticket: ToolDone(ticket, blocks("r"), False, (ctx("hook"),)),
    lambda ticket: ToolDone(ticket, blocks("r"), True, cancelled=True),
    lambda ticket: CompactionDone(ticket, summary()),
    lambda ticket: CompactionDone(ticket, None),
    lambda ticket: CompactionFailed(ticket, "down"),
    lambda ticket: Cancel(),
    lambda ticket: CancelPrompt(1),
    lambda ticket: CancelPrompt(2),
)

SETUPS: Final[tuple[Callable[[TurnMachine], None], ...]] = (
    lambda machine: None,
    admitting,
    requesting,
    running_tools,
    compacting,
    auto_compacting,
)
STEP_LIMITS: Final = (1, 2, 64)
DEPTH: Final = 4  # the roots already sit mid-turn; 4 inputs reach every destination


def key_of(state: State, input_: s.Input) -> Key:
    return state.phase, type(input_)


def legal_inputs(state: State) -> list[s.Input]:
    candidates = [make(state.ticket) for make in INPUTS]
    return [input_ for input_ in candidates if key_of(state, input_) in m._TABLE]


def checked(state: State, input_: s.Input) -> State:
    """One legal transition, failing if it ends in a phase its row does not declare."""
    row = m._TABLE[key_of(state, input_)]
    new, _ = m.transition(state, input_)
    where = f"({state.phase}, {type(input_).__name__})"
    assert new.phase in row.may_end_in, f"{where} ended in {new.phase}: not in {{{names(row)}}}"
    return new


def names(row: m.Row) -> str:
    return ", ".join(sorted(row.may_end_in))


def fingerprint(state: State) -> str:
    """States equal but for the ticket and turn counters behave alike (inputs carry the ticket)."""
    return repr(msgspec.structs.replace(state, ticket=0, turn=0))


def roots() -> list[State]:
    states = []
    for limit, setup in ((limit, setup) for limit in STEP_LIMITS for setup in SETUPS):
        machine = TurnMachine(State(max_steps=limit))
        setup(machine)
        states.append(machine.state)
    return states


def successors(state: State, reached: Reached, seen: set[str]) -> Iterator[State]:
    for input_ in legal_inputs(state):
        new = checked(state, input_)
        reached[key_of(state, input_)].add(new.phase)
        if fingerprint(new) not in seen:
            seen.add(fingerprint(new))
            yield new


@functools.cache
def explore() -> Reached:
    """Breadth-first, DEPTH inputs deep from every root: the phases each row reached."""
    reached: Reached = {key: set() for key in m._TABLE}
    frontier = roots()
    seen = {fingerprint(state) for state in frontier}
    for _ in range(DEPTH):
        frontier = [new for state in frontier for new in successors(state, reached, seen)]
    return reached


def test_the_roots_cover_every_phase() -> None:
    assert {state.phase for state in roots()} == set(Phase)


@pytest.mark.parametrize("key", list(m._TABLE), ids=lambda key: f"{key[0]}-{key[1].__name__}")
def test_row_ends_in_exactly_its_declared_phases(key: Key) -> None:
    declared = m._TABLE[key].may_end_in
    reached = explore()[key]
    assert not reached - declared, f"reached but not declared: {', '.join(reached - declared)}"
    assert not declared - reached, f"declared but never reached: {', '.join(declared - reached)}"


def test_tool_done_and_model_done_may_end_in_every_phase() -> None:
    """The reviewer's example: a finished tool can end, continue or hand over the session."""
    assert m._TABLE[(Phase.RUNNING_TOOLS, ToolDone)].may_end_in == set(Phase)
    assert m._TABLE[(Phase.REQUESTING, ModelDone)].may_end_in == set(Phase)


@settings(max_examples=300, deadline=None)
@given(limit=st.integers(1, 4), choices=st.lists(st.integers(0, len(INPUTS) - 1), max_size=80))
def test_random_walks_end_every_transition_in_a_declared_phase(
    limit: int, choices: list[int]
) -> None:
    state = State(max_steps=limit)
    for choice in choices:
        legal = legal_inputs(state)
        state = checked(state, legal[choice % len(legal)])
