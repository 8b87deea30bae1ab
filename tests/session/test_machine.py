"""The turn machine, driven directly, state by state (no I/O, no actor)."""

from __future__ import annotations

import itertools

import pytest

from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import (
    AgentError,
    AssistantMessage,
    Compaction,
    CompactionReason,
    ErrorInfo,
    SteeringMessage,
    StepEnd,
    StepStart,
    TextPart,
    ToolCall,
    ToolCallPart,
    ToolResult,
    TurnEnd,
    TurnEndKind,
    TurnEndReason,
    TurnStart,
    UserMessage,
    source,
)
from acp_agent.turn import machine as m, vocabulary as s
from acp_agent.turn.machine import IllegalInput, State, TurnMachine
from acp_agent.turn.vocabulary import (
    Abort,
    Admitted,
    Append,
    Blocked,
    Cancel,
    CancelPrompt,
    Commit,
    CommitInBackground,
    CompactionDone,
    CompactionFailed,
    CompactRequest,
    Failed,
    Finished,
    Inject,
    ModelDone,
    ModelFailed,
    ModelStop,
    Phase,
    Placed,
    Placement,
    Prompt,
    Refused,
    Resolve,
    StartAdmission,
    StartCompaction,
    StartModelRequest,
    StartTool,
    Steer,
    Steering,
    StopReason,
    Submit,
    ToolDone,
)


def blocks(text: str) -> list[ContentBlock]:
    return [TextContent(text=text)]


def user(text: str, id_: str = "u") -> UserMessage:
    return UserMessage(id_, blocks(text), source("user"))


def ctx(text: str, id_: str = "c") -> UserMessage:
    return UserMessage(id_, blocks(text), source("client"))


def appended(effects: list[s.Effect]) -> list[object]:
    return [e.event for e in effects if isinstance(e, Append)]


CALL_A = ToolCallPart("a", "read_file", {"path": "x"})
CALL_B = ToolCallPart("b", "read_file", {"path": "y"})


def admitting(machine: TurnMachine, ref: int = 1) -> None:
    machine.feed(Submit(Prompt(ref, blocks("hi"))))


def requesting(machine: TurnMachine) -> None:
    admitting(machine)
    machine.feed(Admitted(machine.state.ticket, user("hi")))


def running_tools(machine: TurnMachine) -> None:
    requesting(machine)
    machine.feed(ModelDone(machine.state.ticket, "m1", (CALL_A, CALL_B)))


def compact_prompt(ref: int = 1, instructions: str = "") -> Prompt:
    text = f"/compact {instructions}".rstrip()
    return Prompt(ref, blocks(text), CompactRequest(instructions))


def compacting(machine: TurnMachine) -> None:
    machine.feed(Submit(compact_prompt()))


def summary(kept_from: int = 7, reason: CompactionReason = CompactionReason.MANUAL) -> Compaction:
    return Compaction("k1", blocks("the summary"), kept_from - 1, kept_from, reason)


# -- idle -----------------------------------------------------------------------------------


def test_submit_when_idle_starts_admission_without_opening_a_turn() -> None:
    machine = TurnMachine()
    effects = machine.feed(Submit(Prompt(1, blocks("hi"))))
    assert effects == [StartAdmission(1, Prompt(1, blocks("hi")))]
    assert machine.state.phase is Phase.ADMITTING
    assert machine.state.turn == 0


def test_idle_inject_appends_and_flushes_without_a_turn() -> None:
    machine = TurnMachine()
    before = machine.state
    effects = machine.feed(Inject(7, ctx("note")))
    assert effects == [Append(ctx("note")), CommitInBackground(), Placed(7, Placement.APPENDED)]
    assert machine.state == before  # no turn number, no phase change


def test_idle_cancel_does_nothing() -> None:
    machine = TurnMachine()
    assert machine.feed(Cancel()) == []
    assert machine.state == State()


def test_idle_steer_starts_a_new_turn_through_admission() -> None:
    machine = TurnMachine()
    effects = machine.feed(Steer(3, Steering("s", blocks("go"), source("user"))))
    assert effects[0] == Placed(3, Placement.STARTED_NEW_TURN)
    assert effects[1] == StartAdmission(1, Prompt(None, blocks("go")))
    assert machine.state.phase is Phase.ADMITTING


@pytest.mark.parametrize("phase", ["idle", "admitting", "compacting"])
def test_steer_that_must_not_start_a_turn_answers_prompt_required_and_changes_nothing(
    phase: str,
) -> None:
    machine = TurnMachine()
    if phase == "admitting":
        admitting(machine)
    elif phase == "compacting":
        compacting(machine)
    before = machine.state
    steering = Steering("s", blocks("go"), source("user"))
    assert machine.feed(Steer(3, steering, start_turn=False)) == [
        Placed(3, Placement.PROMPT_REQUIRED)
    ]
    assert machine.state == before


def test_steer_that_must_not_start_a_turn_is_staged_in_a_running_one() -> None:
    machine = TurnMachine()
    requesting(machine)
    effects = machine.feed(Steer(3, Steering("s", blocks("go"), source("user")), start_turn=False))
    assert effects[0] == Placed(3, Placement.STEERED)


# -- admitting --------------------------------------------------------------------------------


def test_admitted_opens_turn_then_prompt_then_contexts_then_one_model_request() -> None:
    machine = TurnMachine()
    admitting(machine)
    effects = machine.feed(Admitted(1, user("hi"), (ctx("h1", "c1"), ctx("h2", "c2"))))
    assert appended(effects) == [
        TurnStart(1),
        user("hi"),
        ctx("h1", "c1"),
        ctx("h2", "c2"),
        StepStart(1, 1),
    ]
    assert effects[-2:] == [Commit(), StartModelRequest(2, 1, 1)]
    assert machine.state.phase is Phase.REQUESTING


def test_blocked_prompt_opens_no_turn_and_writes_nothing() -> None:
    machine = TurnMachine()
    admitting(machine)
    effects = machine.feed(Blocked(1, "nope"))
    assert effects == [Resolve(1, Refused("nope"))]
    assert machine.state.phase is Phase.IDLE
    assert machine.state.turn == 0


def test_blocked_prompt_admits_the_next_queued_prompt() -> None:
    machine = TurnMachine()
    admitting(machine)
    machine.feed(Submit(Prompt(2, blocks("second"))))
    effects = machine.feed(Blocked(1, "nope"))
    assert effects == [Resolve(1, Refused("nope")), StartAdmission(2, Prompt(2, blocks("second")))]


def test_inject_while_admitting_is_appended_out_of_turn() -> None:
    machine = TurnMachine()
    admitting(machine)
    effects = machine.feed(Inject(5, ctx("x")))
    assert appended(effects) == [ctx("x")]
    assert Placed(5, Placement.APPENDED) in effects


def test_cancel_while_admitting_answers_cancelled_and_makes_results_stale() -> None:
    machine = TurnMachine()
    admitting(machine)
    machine.feed(Submit(Prompt(2, blocks("queued"))))
    effects = machine.feed(Cancel())
    assert effects == [
        Abort(1),
        Resolve(1, Finished(StopReason.CANCELLED)),
        Resolve(2, Finished(StopReason.CANCELLED)),
    ]
    assert machine.state.phase is Phase.IDLE
    assert machine.feed(Admitted(1, user("late"))) == []  # stale: ignored


# -- requesting --------------------------------------------------------------------------------


def test_text_answer_ends_the_turn_completed_and_resolves_end_turn() -> None:
    machine = TurnMachine()
    requesting(machine)
    effects = machine.feed(ModelDone(2, "m1", (TextPart("hello"),)))
    assert appended(effects) == [
        AssistantMessage(1, 1, "m1", [TextPart("hello")]),
        StepEnd(1, 1),
        TurnEnd(1, TurnEndReason(TurnEndKind.COMPLETED)),
    ]
    assert effects[-2:] == [Commit(), Resolve(1, Finished(StopReason.END_TURN))]
    assert machine.state.phase is Phase.IDLE


def test_max_tokens_ends_the_turn_with_max_tokens() -> None:
    machine = TurnMachine()
    requesting(machine)
    effects = machine.feed(ModelDone(2, "m1", (TextPart("tr"),), ModelStop.MAX_TOKENS))
    assert TurnEnd(1, TurnEndReason(TurnEndKind.MAX_TOKENS)) in appended(effects)
    assert effects[-1] == Resolve(1, Finished(StopReason.MAX_TOKENS))


def test_model_failure_records_agent_error_inside_the_turn() -> None:
    machine = TurnMachine()
    requesting(machine)
    effects = machine.feed(ModelFailed(2, "m1", (), "boom"))
    assert appended(effects) == [
        AgentError(1, ErrorInfo("boom"), 1),
        StepEnd(1, 1),
        TurnEnd(1, TurnEndReason(TurnEndKind.ERROR, "boom")),
    ]
    assert effects[-1] == Resolve(1, Failed("boom"))


def test_tool_calls_are_recorded_durably_before_the_first_tool_runs() -> None:
    machine = TurnMachine()
    requesting(machine)
    effects = machine.feed(ModelDone(2, "m1", (TextPart("t"), CALL_A, CALL_B)))
    assert appended(effects) == [
        AssistantMessage(1, 1, "m1", [TextPart("t"), CALL_A, CALL_B]),
        ToolCall(1, 1, "a", "read_file", {"path": "x"}),
        ToolCall(1, 1, "b", "read_file", {"path": "y"}),
    ]
    assert effects[-2:] == [Commit(), StartTool(3, 1, 1, CALL_A)]
    assert machine.state.phase is Phase.RUNNING_TOOLS


def test_inject_during_a_turn_is_staged_not_appended() -> None:
    machine = TurnMachine()
    requesting(machine)
    effects = machine.feed(Inject(9, ctx("later")))
    assert effects == [Placed(9, Placement.STAGED)]
    assert machine.state.outbox == (ctx("later"),)


def test_plain_context_does_not_force_a_step_but_is_appended_before_turn_end() -> None:
    machine = TurnMachine()
    requesting(machine)
    machine.feed(Inject(9, ctx("later")))
    effects = machine.feed(ModelDone(2, "m1", (TextPart("done"),)))
    events = appended(effects)
    assert events[-2:] == [ctx("later"), TurnEnd(1, TurnEndReason(TurnEndKind.COMPLETED))]
    assert not any(isinstance(e, StartModelRequest) for e in effects)


def test_steering_forces_another_step_seeing_everything_staged_at_the_boundary() -> None:
    machine = TurnMachine()
    requesting(machine)
    machine.feed(Inject(9, ctx("c")))
    machine.feed(Steer(10, Steering("s1", blocks("also"), source("user"))))
    effects = machine.feed(ModelDone(2, "m1", (TextPart("first"),)))
    assert appended(effects)[1:] == [
        StepEnd(1, 1),
        ctx("c"),
        SteeringMessage(1, "s1", blocks("also"), source("user")),
        StepStart(1, 2),
    ]
    assert effects[-1] == StartModelRequest(3, 1, 2)


def test_cancel_during_request_aborts_and_closes_on_the_partial_answer() -> None:
    machine = TurnMachine()
    requesting(machine)
    machine.feed(Submit(Prompt(2, blocks("queued"))))
    assert machine.feed(Cancel()) == [Abort(2), Resolve(2, Finished(StopReason.CANCELLED))]
    assert machine.feed(Cancel()) == []  # a second cancel is a no-op
    effects = machine.feed(ModelDone(2, "m1", (TextPart("par"), CALL_A), ModelStop.CANCELLED))
    assert appended(effects) == [
        AssistantMessage(1, 1, "m1", [TextPart("par")]),  # the never-run call is not recorded
        StepEnd(1, 1),
        TurnEnd(1, TurnEndReason(TurnEndKind.CANCELLED)),
    ]
    assert effects[-1] == Resolve(1, Finished(StopReason.CANCELLED))
    assert machine.state.phase is Phase.IDLE


def test_queued_prompt_is_admitted_when_the_turn_ends() -> None:
    machine = TurnMachine()
    requesting(machine)
    machine.feed(Submit(Prompt(2, blocks("next"))))
    effects = machine.feed(ModelDone(2, "m1", (TextPart("ok"),)))
    assert effects[-2:] == [
        Resolve(1, Finished(StopReason.END_TURN)),
        StartAdmission(3, Prompt(2, blocks("next"))),
    ]
    assert machine.state.phase is Phase.ADMITTING


def test_step_limit_ends_the_turn_with_max_turn_requests() -> None:
    machine = TurnMachine(State(max_steps=1))
    requesting(machine)
    machine.feed(ModelDone(2, "m1", (CALL_A,)))
    effects = machine.feed(ToolDone(3, blocks("r"), False))
    assert TurnEnd(1, TurnEndReason(TurnEndKind.MAX_TURN_REQUESTS)) in appended(effects)
    assert effects[-1] == Resolve(1, Finished(StopReason.MAX_TURN_REQUESTS))


# -- running tools --------------------------------------------------------------------------


def test_tools_run_in_order_and_contexts_wait_for_the_whole_batch() -> None:
    machine = TurnMachine()
    running_tools(machine)
    hook_ctx = UserMessage("h", blocks("from hook"), source("tool", callId="a"))
    machine.feed(Inject(9, ctx("mid-batch")))
    first = machine.feed(ToolDone(3, blocks("ra"), False, (hook_ctx,)))
    assert appended(first) == [ToolResult(1, 1, "a", blocks("ra"), False)]
    assert first[-1] == StartTool(4, 1, 1, CALL_B)
    second = machine.feed(ToolDone(4, blocks("rb"), False))
    assert appended(second) == [
        ToolResult(1, 1, "b", blocks("rb"), False),
        StepEnd(1, 1),
        ctx("mid-batch"),
        hook_ctx,
        StepStart(1, 2),
    ]
    assert second[-2:] == [Commit(), StartModelRequest(5, 1, 2)]


def test_each_result_is_durable_before_the_next_tool_and_told_after_its_barrier() -> None:
    machine = TurnMachine()
    running_tools(machine)
    first = machine.feed(ToolDone(3, blocks("ra"), False))
    assert [type(e).__name__ for e in first] == ["Append", "Commit", "StartTool"]
    assert getattr(first[0], "tell_after_commit", False) is True
    last = machine.feed(ToolDone(4, blocks("rb"), False))
    # the last result shares the step boundary's barrier, before the next model request
    assert getattr(last[0], "tell_after_commit", False) is True
    assert [type(e).__name__ for e in last].count("Commit") == 1
    assert isinstance(last[-1], StartModelRequest)


def test_cancel_mid_batch_gives_every_call_a_result_before_turn_end() -> None:
    machine = TurnMachine()
    running_tools(machine)
    machine.feed(Inject(9, ctx("staged")))
    assert machine.feed(Cancel()) == [Abort(3)]
    effects = machine.feed(ToolDone(3, blocks("cancelled"), True, cancelled=True))
    assert appended(effects) == [
        ToolResult(1, 1, "a", blocks("cancelled"), True),
        ToolResult(1, 1, "b", [TextContent(text=m.CANCELLED_TOOL_TEXT)], True),
        StepEnd(1, 1),
        ctx("staged"),
        TurnEnd(1, TurnEndReason(TurnEndKind.CANCELLED)),
    ]
    assert effects[-1] == Resolve(1, Finished(StopReason.CANCELLED))


def test_stale_tool_result_is_ignored() -> None:
    machine = TurnMachine()
    running_tools(machine)
    before = machine.state
    assert machine.feed(ToolDone(1, blocks("old"), False)) == []
    assert machine.state == before


# -- compacting (manual: /compact) --------------------------------------------------------------


def test_compact_prompt_when_idle_starts_a_compaction_without_admission_or_turn() -> None:
    machine = TurnMachine()
    effects = machine.feed(Submit(compact_prompt(1, "keep the file names")))
    assert effects == [StartCompaction(1, CompactionReason.MANUAL, "keep the file names")]
    assert machine.state.phase is Phase.COMPACTING
    assert machine.state.turn == 0
    assert not machine.state.turn_open


def test_compaction_done_appends_the_event_commits_and_answers_end_turn() -> None:
    machine = TurnMachine(State(turn=2))
    compacting(machine)
    effects = machine.feed(CompactionDone(1, summary()))
    assert effects == [Append(summary()), Commit(), Resolve(1, Finished(StopReason.END_TURN))]
    assert machine.state == State(turn=2, ticket=1)  # idle again; no turn was opened


def test_nothing_to_compact_answers_end_turn_and_appends_nothing() -> None:
    machine = TurnMachine()
    compacting(machine)
    assert machine.feed(CompactionDone(1, None)) == [Resolve(1, Finished(StopReason.END_TURN))]
    assert machine.state.phase is Phase.IDLE


def test_failed_compaction_answers_failed_and_appends_nothing() -> None:
    machine = TurnMachine()
    compacting(machine)
    assert machine.feed(CompactionFailed(1, "model down")) == [Resolve(1, Failed("model down"))]
    assert machine.state.phase is Phase.IDLE


def test_compact_prompt_queues_fifo_behind_a_turn() -> None:
    machine = TurnMachine()
    requesting(machine)
    assert machine.feed(Submit(compact_prompt(2))) == [s.Queued("prompt", 1)]
    effects = machine.feed(ModelDone(2, "m1", (TextPart("ok"),)))
    assert effects[-2:] == [
        Resolve(1, Finished(StopReason.END_TURN)),
        StartCompaction(3, CompactionReason.MANUAL, ""),
    ]
    assert machine.state.phase is Phase.COMPACTING
    assert machine.state.active == compact_prompt(2)


def test_prompts_queued_during_a_compaction_are_admitted_after_it() -> None:
    machine = TurnMachine()
    compacting(machine)
    assert machine.feed(Submit(Prompt(2, blocks("next")))) == [s.Queued("prompt", 1)]
    effects = machine.feed(CompactionDone(1, summary()))
    assert effects[-2:] == [
        Resolve(1, Finished(StopReason.END_TURN)),
        StartAdmission(2, Prompt(2, blocks("next"))),
    ]
    assert machine.state.phase is Phase.ADMITTING


def test_inject_during_a_compaction_is_appended_out_of_turn() -> None:
    machine = TurnMachine()
    compacting(machine)
    before = machine.state
    effects = machine.feed(Inject(5, ctx("x")))
    assert effects == [Append(ctx("x")), CommitInBackground(), Placed(5, Placement.APPENDED)]
    assert machine.state == before


def test_steer_during_a_compaction_queues_a_new_turn() -> None:
    machine = TurnMachine()
    compacting(machine)
    effects = machine.feed(Steer(3, Steering("s", blocks("go"), source("user"))))
    assert effects == [Placed(3, Placement.STARTED_NEW_TURN), s.Queued("prompt", 1)]
    assert machine.state.queue == (Prompt(None, blocks("go")),)


def test_cancel_during_a_compaction_aborts_it_and_answers_cancelled() -> None:
    machine = TurnMachine()
    compacting(machine)
    machine.feed(Submit(Prompt(2, blocks("queued"))))
    effects = machine.feed(Cancel())
    assert effects == [
        Abort(1),
        Resolve(1, Finished(StopReason.CANCELLED)),
        Resolve(2, Finished(StopReason.CANCELLED)),
    ]
    assert machine.state.phase is Phase.IDLE
    assert machine.feed(CompactionDone(1, summary())) == []  # stale: nothing appended
    assert machine.feed(CompactionFailed(1, "late")) == []


# -- compacting (automatic, before a turn) -------------------------------------------------------


def auto_compacting(machine: TurnMachine) -> None:
    admitting(machine)
    machine.feed(Admitted(1, user("hi"), (ctx("h1"),), compact_first=True))


def test_admitted_with_compact_first_compacts_before_opening_the_turn() -> None:
    machine = TurnMachine()
    admitting(machine)
    effects = machine.feed(Admitted(1, user("hi"), (ctx("h1"),), compact_first=True))
    assert effects == [StartCompaction(2, CompactionReason.AUTO)]
    assert machine.state.phase is Phase.COMPACTING
    assert machine.state.turn == 0


def test_automatic_compaction_done_appends_it_then_opens_the_admitted_turn() -> None:
    machine = TurnMachine()
    auto_compacting(machine)
    event = summary(reason=CompactionReason.AUTO)
    effects = machine.feed(CompactionDone(2, event))
    assert effects[:2] == [Append(event), Commit()]
    assert appended(effects) == [event, TurnStart(1), user("hi"), ctx("h1"), StepStart(1, 1)]
    assert effects[-1] == StartModelRequest(3, 1, 1)
    assert machine.state.phase is Phase.REQUESTING
    assert machine.state.admitted is None


def test_failed_automatic_compaction_still_runs_the_turn() -> None:
    machine = TurnMachine()
    auto_compacting(machine)
    effects = machine.feed(CompactionFailed(2, "model down"))
    assert appended(effects) == [TurnStart(1), user("hi"), ctx("h1"), StepStart(1, 1)]
    assert not any(isinstance(e, Resolve) for e in effects)
    assert machine.state.phase is Phase.REQUESTING


def test_cancel_during_automatic_compaction_drops_the_admitted_prompt() -> None:
    machine = TurnMachine()
    auto_compacting(machine)
    effects = machine.feed(Cancel())
    assert effects == [Abort(2), Resolve(1, Finished(StopReason.CANCELLED))]
    assert machine.state.phase is Phase.IDLE
    assert machine.state.admitted is None
    assert machine.feed(CompactionDone(2, summary())) == []


# -- one prompt cancelled ($/cancel_request) -----------------------------------------------


def test_cancelling_a_queued_prompt_answers_it_and_leaves_the_turn_and_queue_running() -> None:
    machine = TurnMachine()
    requesting(machine)
    machine.feed(Submit(Prompt(2, blocks("second"))))
    machine.feed(Submit(Prompt(3, blocks("third"))))
    effects = machine.feed(CancelPrompt(2))
    assert effects == [Resolve(2, Finished(StopReason.CANCELLED))]
    assert machine.state.phase is Phase.REQUESTING and not machine.state.cancelling
    assert [p.ref for p in machine.state.queue] == [3]
    effects = machine.feed(ModelDone(2, "m1", (TextPart("ok"),)))
    assert effects[-2:] == [
        Resolve(1, Finished(StopReason.END_TURN)),
        StartAdmission(3, Prompt(3, blocks("third"))),
    ]


def test_cancelling_the_running_prompt_ends_its_turn_then_the_queue_runs() -> None:
    machine = TurnMachine()
    requesting(machine)
    machine.feed(Submit(Prompt(2, blocks("second"))))
    assert machine.feed(CancelPrompt(1)) == [Abort(2)]
    assert [p.ref for p in machine.state.queue] == [2]
    effects = machine.feed(ModelDone(2, "m1", (), ModelStop.CANCELLED))
    assert TurnEnd(1, TurnEndReason(TurnEndKind.CANCELLED)) in appended(effects)
    assert effects[-2:] == [
        Resolve(1, Finished(StopReason.CANCELLED)),
        StartAdmission(3, Prompt(2, blocks("second"))),
    ]


def test_cancelling_the_prompt_being_admitted_admits_the_next() -> None:
    machine = TurnMachine()
    admitting(machine)
    machine.feed(Submit(Prompt(2, blocks("second"))))
    effects = machine.feed(CancelPrompt(1))
    assert effects == [
        Abort(1),
        Resolve(1, Finished(StopReason.CANCELLED)),
        StartAdmission(3, Prompt(2, blocks("second"))),
    ]
    assert machine.feed(Admitted(1, user("hi"))) == []  # the aborted admission is stale


def test_cancelling_a_prompt_already_answered_does_nothing() -> None:
    machine = TurnMachine()
    requesting(machine)
    before = machine.state
    assert machine.feed(CancelPrompt(9)) == []
    assert machine.state == before


# -- every illegal transition ---------------------------------------------------------------


def sample_inputs(ticket: int) -> list[s.Input]:
    return [
        Submit(Prompt(1, blocks("p"))),
        Admitted(ticket, user("p")),
        Blocked(ticket, "r"),
        Inject(1, ctx("c")),
        Steer(1, Steering("s", blocks("s"), source("user"))),
        ModelDone(ticket, "m", ()),
        ModelFailed(ticket, "m", (), "e"),
        ToolDone(ticket, blocks("r"), False),
        CompactionDone(ticket, None),
        CompactionFailed(ticket, "e"),
        Cancel(),
        CancelPrompt(1),
    ]


PHASE_SETUP = {
    Phase.IDLE: lambda machine: None,
    Phase.ADMITTING: admitting,
    Phase.REQUESTING: requesting,
    Phase.RUNNING_TOOLS: running_tools,
    Phase.COMPACTING: compacting,
}

LEGAL = set(m._TABLE)
ALL_CASES = [
    (phase, index) for phase, index in itertools.product(Phase, range(len(sample_inputs(0))))
]


@pytest.mark.parametrize(("phase", "index"), ALL_CASES)
def test_transition_table_is_total_legal_or_raises_leaving_state_unchanged(
    phase: Phase, index: int
) -> None:
    machine = TurnMachine()
    PHASE_SETUP[phase](machine)
    assert machine.state.phase is phase
    input_ = sample_inputs(machine.state.ticket)[index]
    before = machine.state
    if (phase, type(input_)) in LEGAL:
        machine.feed(input_)
        return
    with pytest.raises(IllegalInput) as raised:
        machine.feed(input_)
    assert raised.value.phase is phase
    assert type(input_).__name__ in str(raised.value)
    assert str(phase) in str(raised.value)
    assert machine.state is before


def test_illegal_count_is_what_the_table_leaves_out() -> None:
    illegal = {(p, type(i)) for p in Phase for i in sample_inputs(0)} - LEGAL
    assert (Phase.IDLE, ModelDone) in illegal
    assert (Phase.IDLE, ToolDone) in illegal
    assert (Phase.REQUESTING, Admitted) in illegal
    assert (Phase.RUNNING_TOOLS, ModelDone) in illegal
    assert (Phase.IDLE, CompactionDone) in illegal
    assert (Phase.REQUESTING, CompactionDone) in illegal
    assert (Phase.COMPACTING, Admitted) in illegal
    assert (Phase.COMPACTING, ModelDone) in illegal
    assert (Phase.COMPACTING, ToolDone) in illegal
    assert len(illegal) == 5 * 12 - len(LEGAL)
