"""The per-event rules of the session invariant, and the replay state they keep.

``invariant.check`` has already checked *placement* (``SCOPES``) when a rule runs, so a rule
may rely on it: the rule of an in-step event finds a step open, the rule of a turn event a
turn. Each rule returns its problems (plain messages; the checker adds the seq) and advances
the state, also after a problem, so that one error is reported once. The grammar these rules
enforce — turns, their spans, where a cut may fall — is ``turns.py``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from acp_agent.journal.events import (
    AgentError,
    AssistantMessage,
    Compaction,
    Entry,
    Event,
    SteeringMessage,
    StepEnd,
    StepStart,
    ToolCall,
    ToolCallPart,
    ToolResult,
    TurnEnd,
    TurnEndKind,
    TurnStart,
    UserMessage,
)
from acp_agent.journal.turns import TurnSpan


@dataclass
class StepState:
    number: int
    announced: list[str] = field(default_factory=list)
    """Tool-call ids of the step's assistant message: the batch as the model asked for it."""
    calls: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)

    def unanswered_calls(self) -> list[str]:
        return [c for c in self.calls if c not in self.results]

    def unfinished_batch(self) -> list[str]:
        batch = dict.fromkeys([*self.announced, *self.calls])
        return [c for c in batch if c not in self.results]


@dataclass
class TurnState:
    number: int
    start_seq: int
    steps: int = 0
    step: StepState | None = None


@dataclass
class ReplayState:
    turns: int = 0
    turn: TurnState | None = None
    closed_turns: list[TurnSpan] = field(default_factory=list)
    """The span of every closed turn: no compaction cut may split one."""
    kept_from: int = 1
    """The ``keptFromSeq`` of the last compaction (1: the whole history is visible)."""


Rule = Callable[[ReplayState, Entry], list[str]]


def _open_turn(state: ReplayState) -> TurnState:
    assert state.turn is not None
    return state.turn


def _open_step(state: ReplayState) -> tuple[TurnState, StepState]:
    turn = _open_turn(state)
    assert turn.step is not None
    return turn, turn.step


def _turn_mismatch(type_: str, turn: int, open_turn: TurnState) -> list[str]:
    if turn == open_turn.number:
        return []
    return [f"{type_} for turn {turn} inside turn {open_turn.number}"]


def _step_mismatch(type_: str, turn: int, step: int, state: ReplayState) -> list[str]:
    open_turn, open_step = _open_step(state)
    if (turn, step) == (open_turn.number, open_step.number):
        return []
    inside = f"turn {open_turn.number} step {open_step.number}"
    return [f"{type_} for turn {turn} step {step} inside {inside}"]


def _user_message(state: ReplayState, entry: Entry) -> list[str]:
    turn = state.turn
    if turn is None or turn.step is None:
        return []
    pending = turn.step.unfinished_batch()
    if not pending:
        return []
    where = f"turn {turn.number} step {turn.step.number}"
    waiting = ", ".join(pending)
    return [
        f"user/message inside an unfinished tool batch in {where} (no result yet for {waiting})"
    ]


def _turn_start(state: ReplayState, entry: Entry) -> list[str]:
    event = entry.event
    assert isinstance(event, TurnStart)
    expected = state.turns + 1
    problems = []
    if event.turn != expected:
        problems.append(f"turn/start {event.turn} out of order (expected turn {expected})")
    state.turns = event.turn
    state.turn = TurnState(number=event.turn, start_seq=entry.seq)
    return problems


def _turn_end(state: ReplayState, entry: Entry) -> list[str]:
    event = entry.event
    assert isinstance(event, TurnEnd)
    turn = _open_turn(state)
    problems = []
    if event.turn != turn.number:
        problems.append(f"turn/end {event.turn} does not match open turn {turn.number}")
    if turn.step is not None:
        problems.append(f"turn/end while step {turn.step.number} of turn {turn.number} is open")
    if turn.steps == 0 and event.reason.kind is not TurnEndKind.INTERRUPTED:
        problems.append(f"turn {turn.number} ended without a step (the model was never asked)")
    state.closed_turns.append(TurnSpan(turn.number, turn.start_seq, entry.seq))
    state.turn = None
    return problems


def _step_start(state: ReplayState, entry: Entry) -> list[str]:
    event = entry.event
    assert isinstance(event, StepStart)
    turn = _open_turn(state)
    problems = _turn_mismatch("step/start", event.turn, turn)
    expected = turn.steps + 1
    if event.step != expected:
        where = f"in turn {turn.number} (expected step {expected})"
        problems.append(f"step/start {event.step} out of order {where}")
    turn.steps = event.step
    turn.step = StepState(number=event.step)
    return problems


def _step_end(state: ReplayState, entry: Entry) -> list[str]:
    event = entry.event
    assert isinstance(event, StepEnd)
    turn, step = _open_step(state)
    problems = _step_mismatch("step/end", event.turn, event.step, state)
    missing = ", ".join(step.unanswered_calls())
    if missing:
        where = f"step/end {step.number} of turn {turn.number}"
        problems.append(f"{where} with tool calls lacking results: {missing}")
    turn.step = None
    return problems


def _steering_message(state: ReplayState, entry: Entry) -> list[str]:
    event = entry.event
    assert isinstance(event, SteeringMessage)
    return _turn_mismatch("steering/message", event.turn, _open_turn(state))


def _assistant_message(state: ReplayState, entry: Entry) -> list[str]:
    event = entry.event
    assert isinstance(event, AssistantMessage)
    _, step = _open_step(state)
    step.announced += [part.id for part in event.content if isinstance(part, ToolCallPart)]
    return _step_mismatch("assistant/message", event.turn, event.step, state)


def _tool_call(state: ReplayState, entry: Entry) -> list[str]:
    event = entry.event
    assert isinstance(event, ToolCall)
    turn, step = _open_step(state)
    problems = _step_mismatch("tool/call", event.turn, event.step, state)
    if event.call_id in step.calls:
        problems.append(f"duplicate tool/call callId {event.call_id} in turn {turn.number}")
    else:
        step.calls.append(event.call_id)
    return problems


def _tool_result(state: ReplayState, entry: Entry) -> list[str]:
    event = entry.event
    assert isinstance(event, ToolResult)
    turn, step = _open_step(state)
    problems = _step_mismatch("tool/result", event.turn, event.step, state)
    call_id, where = event.call_id, f"in turn {turn.number}"
    if call_id not in step.calls:
        return [*problems, f"tool/result for unknown callId {call_id} {where}"]
    if call_id in step.results:
        return [*problems, f"duplicate tool/result for callId {call_id} {where}"]
    expected = step.unanswered_calls()[0]
    if call_id != expected:
        problems.append(
            f"tool/result for callId {call_id} out of order {where} (expected {expected})"
        )
    step.results.append(call_id)
    return problems


def _agent_error(state: ReplayState, entry: Entry) -> list[str]:
    event = entry.event
    assert isinstance(event, AgentError)
    turn = _open_turn(state)
    problems = _turn_mismatch("agent/error", event.turn, turn)
    if event.step is not None and not 1 <= event.step <= turn.steps:
        had = f"turn {turn.number} has {turn.steps} steps"
        problems.append(f"agent/error for step {event.step} but {had}")
    return problems


def _compaction(state: ReplayState, entry: Entry) -> list[str]:
    event = entry.event
    assert isinstance(event, Compaction)
    cut, through = event.kept_from_seq, event.through_seq
    problems = []
    if through != cut - 1:
        problems.append(f"compaction keptFromSeq {cut} does not follow throughSeq {through}")
    if cut > entry.seq:
        problems.append(f"compaction keeps from seq {cut}, after the compaction itself")
    if cut <= state.kept_from:
        last = state.kept_from
        problems.append(f"compaction keeps from seq {cut}, not after the last cut ({last})")
    cut_turns = [span.turn for span in state.closed_turns if span.splits(cut)]
    if cut_turns:
        problems.append(f"compaction cuts turn {cut_turns[0]} (keptFromSeq {cut} is inside it)")
    state.kept_from = max(state.kept_from, cut)
    return problems


RULES: Final[dict[type[Event], Rule]] = {
    UserMessage: _user_message,
    TurnStart: _turn_start,
    TurnEnd: _turn_end,
    StepStart: _step_start,
    StepEnd: _step_end,
    SteeringMessage: _steering_message,
    AssistantMessage: _assistant_message,
    ToolCall: _tool_call,
    ToolResult: _tool_result,
    AgentError: _agent_error,
    Compaction: _compaction,
}
