"""The turn machine: one session's turn loop as a pure state machine.

Theory of operation
-------------------
A *turn* is exactly one execution of the model loop. The machine is fed *inputs* (a prompt was
submitted, admission allowed it, the model answered, a tool finished, the caller injected
context, ...) and answers each with a list of *effects* (append this event, make the journal
durable, start a model request, answer that prompt, ...). It does no I/O, never awaits, and
never reads a clock: the session actor (``actor.py``) feeds inputs and executes effects, in
order.

Phases::

    IDLE ──Submit──► ADMITTING ──Admitted──► REQUESTING ◄──(batch done)── RUNNING_TOOLS
      ▲                  │                      │   └──ModelDone with tool calls──►┘
      └──────Blocked─────┘◄────────(turn/end)───┘

    compaction, with no turn open (a queued prompt is taken when its phase ends, as above):

    IDLE ──Submit(/compact)──► COMPACTING ──CompactionDone | CompactionFailed──► IDLE
    ADMITTING ──Admitted(compact_first)──► COMPACTING ──CompactionDone | Failed──► REQUESTING

Invariants the table keeps (they are the acceptance criteria of docs/design.md):

- ``turn/start`` is appended only in ``_open_turn``, immediately followed by the prompt, its
  admission contexts and ``step/start`` + a model request. So a turn always asks the model.
  Admission runs in ADMITTING, *before* any turn opens: a blocked prompt appends nothing.
- With no turn open (IDLE, ADMITTING, COMPACTING) an injected context is appended at once as
  its own ``user/message`` and flushed in the background; no turn number, phase or model call
  changes.
- Compaction (``compaction.py``) is not a turn: COMPACTING asks the model for a summary
  with no turn open and, on success, appends one standalone ``session/compaction`` event,
  between turns. A ``/compact`` prompt (``Prompt.compact``) waits in the FIFO like any prompt,
  skips admission, and is answered ``end_turn`` (nothing to compact: the same, nothing
  appended) or ``Failed``. Automatic compaction happens between admission and the turn: the
  admission worker measures the history and sets ``Admitted.compact_first`` (the machine never
  estimates sizes); once the summary is done *or failed* the admitted prompt's turn opens. A
  cancel during COMPACTING appends nothing and answers the prompt (and the queue) ``cancelled``.
- With a turn open, injections, steering and tool-hook contexts are *staged* in the outbox. The
  outbox is drained whole, and only at a step boundary: after the *complete* tool-result batch
  (or after a step without tools), before the next ``step/start``. So nothing lands between a
  batch's tool results, and everything staged at one boundary is seen by the same request.
- Steering forces another step; plain context does not. Whatever is still in the outbox when a
  turn ends (completed, cancelled, error) is appended before ``turn/end``: never dropped.
  Steering with no turn running starts one through admission, or, when the client asked
  (``Steer.start_turn`` false), does nothing and answers ``promptRequired``.
- A tool runs only once what led to it is durable, and each result is durable before the next
  tool of its batch starts: ``_start_batch`` commits the batch's ``tool/call``s before the first
  ``StartTool``, ``_tool_done`` commits each result before the next call's ``StartTool``, and the
  last result shares the barrier that follows it (the next ``step/start``'s, or the turn end's).
  So a batch of N tools costs N barriers, plus the step boundary after it, and a crash inside a
  batch never turns a finished tool into an interrupted one (the actor starts a batch's
  *concurrent* calls, ``agent``, as soon as the batch's calls are durable: ``batchrun.py``;
  their results are still appended and made durable in this order) (recovery answers only the calls
  without a result). Results are appended ``tell_after_commit``: the client hears ``completed``
  only of a durable result.
- ``Cancel`` (``session/cancel``) ends the open turn and answers every queued prompt
  ``cancelled``; ``CancelPrompt`` (a ``$/cancel_request`` naming one prompt) answers only that
  prompt: queued, it leaves the queue; active, its turn (or admission, or compaction) ends
  ``cancelled`` and the queue goes on as if it had never held it.
- Worker results carry the ``ticket`` of the effect that started them. A result whose ticket is
  not current (the work was aborted by a cancel) is stale and ignored — a legal race, not an
  illegal input. Any *other* input that the table has no entry for raises ``IllegalInput``
  naming the phase and the input, and leaves the state unchanged (states are immutable).

Every row of ``_TABLE`` names its handler *and* the phases that handler may end in
(``Row.may_end_in``), so the table is also the map of destinations: ``(RUNNING_TOOLS,
ToolDone)`` may end in all five phases, ``(ADMITTING, Cancel)`` only in IDLE. The declaration
assumes ``max_steps >= 1`` (with 0 a turn would open and end without a step, which the
invariant rejects). ``tests/session/test_machine_destinations.py`` explores the machine and
fails if a handler ends anywhere else, or if a declared destination is never reached.

If you add an input or effect: add the struct to ``vocabulary.py``, a row to ``_TABLE`` (with its
destinations), a case to the actor's effect executor, and a test in
``tests/session/test_machine.py``.

If you change where the barriers (``Commit``) are, also change their other homes: the
barrier list of ``docs/journal.md`` ("Durability and recovery"), the fsync counts of
``tests/integration/test_fsync_barriers.py`` (and ``docs/reliability.md``), and the kill -9
tests that rely on them (``tests/durability/test_kill9.py``,
``tests/reliability/test_kill_inside_a_batch.py``).

If you change the drain rule (when ``_drain`` runs: only after the *complete* tool-result
batch, after ``_close_step``, before ``_begin_step`` or ``turn/end``), also change its other
homes; it is one contract across layers, not a machine detail:

- ``journal/rules.py``: ``_user_message`` rejects a ``user/message`` while
  ``StepState.unfinished_batch()`` is non-empty (a call announced or recorded has no result
  yet); ``_tool_result`` wants results in call order, ``_step_end`` every call answered.
- ``journal/invariant.py``: ``SCOPES`` puts ``steering/message`` in
  ``Scope.TURN_OUTSIDE_STEP`` (drained steering must follow ``step/end``, hence
  ``_close_step`` before ``_drain``), and its header states the rule ("contexts drain after
  the whole batch's results"); ``check`` replays both.
- ``turn/history.py``: ``messages_of`` (behind ``derive_messages`` and
  ``History.messages``) maps entries to model messages one to one in journal order, so the
  journal's order *is* the request's order; nothing there moves a misplaced context.
- ``model/openai/wire.py``: ``encode_request`` / ``message_out`` keep that order, nothing
  merged or moved, and Chat Completions requires the ``tool`` messages answering an assistant
  message's ``tool_calls`` to follow it directly: a context inside the batch would be a
  rejected request, not just an untidy journal.
- the design note ("Separate context injection from turn execution", ``docs/design.md``),
  "Injection lifecycle" (context admitted during a batch "may only appear after **all** of that
  batch's results, in order"; the outbox is taken as a whole) and acceptance criterion 5.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import msgspec

from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import (
    AgentError,
    AssistantMessage,
    AssistantPart,
    Checkpoint,
    CompactionReason,
    ErrorInfo,
    Event,
    SteeringMessage,
    StepEnd,
    StepStart,
    ToolCall,
    ToolCallPart,
    ToolResult,
    TurnEnd,
    TurnEndKind,
    TurnEndReason,
    TurnStart,
)
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
    Effect,
    Failed,
    Finished,
    Inject,
    Input,
    ModelDone,
    ModelFailed,
    ModelStop,
    OutboxItem,
    Outcome,
    Phase,
    Placed,
    Placement,
    Prompt,
    Queued,
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

# -- state ----------------------------------------------------------------------------------


class State(msgspec.Struct, frozen=True):
    phase: Phase = Phase.IDLE
    turn: int = 0
    step: int = 0
    ticket: int = 0
    active: Prompt | None = None
    queue: tuple[Prompt, ...] = ()
    outbox: tuple[OutboxItem, ...] = ()
    batch: tuple[ToolCallPart, ...] = ()
    batch_index: int = 0
    cancelling: bool = False
    max_steps: int = 64
    admitted: Admitted | None = None
    """An admitted prompt waiting for an automatic compaction (COMPACTING only)."""

    @property
    def turn_open(self) -> bool:
        return self.phase in (Phase.REQUESTING, Phase.RUNNING_TOOLS)


class IllegalInput(Exception):
    def __init__(self, phase: Phase, input_: Input) -> None:
        super().__init__(f"illegal input {type(input_).__name__} in phase {phase}")
        self.phase = phase
        self.input = input_


Result = tuple[State, list[Effect]]
Transition = Callable[[State, Input], Result]

CANCELLED_TOOL_TEXT: Final = "cancelled: the turn was cancelled before this tool ran"


def _replace(state: State, **changes: object) -> State:
    return msgspec.structs.replace(state, **changes)


# -- building blocks ------------------------------------------------------------------------


def _begin_step(state: State, effects: list[Effect]) -> Result:
    if state.step >= state.max_steps:
        return _end_turn(state, effects, TurnEndKind.MAX_TURN_REQUESTS)
    step, ticket = state.step + 1, state.ticket + 1
    effects += [
        Append(StepStart(turn=state.turn, step=step)),
        Commit(),
        StartModelRequest(ticket=ticket, turn=state.turn, step=step),
    ]
    new = _replace(state, phase=Phase.REQUESTING, step=step, ticket=ticket, batch=(), batch_index=0)
    return new, effects


def _drain(state: State, effects: list[Effect]) -> State:
    for item in state.outbox:
        if isinstance(item, Steering):
            event: Event = SteeringMessage(
                turn=state.turn, id=item.id, content=item.content, source=item.source
            )
        else:
            event = item
        effects.append(Append(event))
    return _replace(state, outbox=())


_STOP_FOR: Final[dict[TurnEndKind, StopReason]] = {
    TurnEndKind.COMPLETED: StopReason.END_TURN,
    TurnEndKind.CANCELLED: StopReason.CANCELLED,
    TurnEndKind.MAX_TOKENS: StopReason.MAX_TOKENS,
    TurnEndKind.MAX_TURN_REQUESTS: StopReason.MAX_TURN_REQUESTS,
}


def _end_turn(
    state: State, effects: list[Effect], kind: TurnEndKind, error: str | None = None
) -> Result:
    state = _drain(state, effects)
    effects += [Append(TurnEnd(turn=state.turn, reason=TurnEndReason(kind, error))), Commit()]
    if state.active is not None and state.active.ref is not None:
        outcome: Outcome = Failed(error or kind) if error is not None else Finished(_STOP_FOR[kind])
        effects.append(Resolve(state.active.ref, outcome))
    idle = _replace(state, phase=Phase.IDLE, step=0, active=None, batch=(), cancelling=False)
    return _admit_next(idle, effects)


def _admit_next(state: State, effects: list[Effect]) -> Result:
    if not state.queue:
        return state, effects
    head, rest = state.queue[0], state.queue[1:]
    ticket = state.ticket + 1
    if head.compact is not None:
        reason, instructions = CompactionReason.MANUAL, head.compact.instructions
        effects.append(StartCompaction(ticket, reason, instructions))
        phase = Phase.COMPACTING
    else:
        effects.append(StartAdmission(ticket=ticket, prompt=head))
        phase = Phase.ADMITTING
    return _replace(state, phase=phase, active=head, queue=rest, ticket=ticket), effects


def _open_turn(state: State, admitted: Admitted, effects: list[Effect]) -> Result:
    turn = state.turn + 1
    effects += [Append(TurnStart(turn=turn)), Append(admitted.prompt)]
    effects += [Append(context) for context in admitted.contexts]
    return _begin_step(_replace(state, turn=turn, step=0, admitted=None), effects)


def _close_step(state: State, effects: list[Effect]) -> None:
    effects.append(Append(StepEnd(turn=state.turn, step=state.step)))


def _resolve_all(prompts: tuple[Prompt, ...], outcome: Outcome, effects: list[Effect]) -> None:
    effects.extend(Resolve(p.ref, outcome) for p in prompts if p.ref is not None)


# -- transitions ----------------------------------------------------------------------------


def _submit_idle(state: State, input_: Input) -> Result:
    assert isinstance(input_, Submit)
    return _admit_next(_replace(state, queue=(input_.prompt,)), [])


def _submit_queue(state: State, input_: Input) -> Result:
    assert isinstance(input_, Submit)
    queue = (*state.queue, input_.prompt)
    return _replace(state, queue=queue), [Queued("prompt", len(queue))]


def _admitted(state: State, input_: Input) -> Result:
    assert isinstance(input_, Admitted)
    if not input_.compact_first:
        return _open_turn(state, input_, [])
    ticket = state.ticket + 1
    compacting = _replace(state, phase=Phase.COMPACTING, ticket=ticket, admitted=input_)
    return compacting, [StartCompaction(ticket, CompactionReason.AUTO)]


def _blocked(state: State, input_: Input) -> Result:
    assert isinstance(input_, Blocked)
    effects: list[Effect] = []
    _resolve_all((state.active,) if state.active else (), Refused(input_.reason), effects)
    return _admit_next(_replace(state, phase=Phase.IDLE, active=None), effects)


def _inject_append(state: State, input_: Input) -> Result:
    assert isinstance(input_, Inject)
    effects: list[Effect] = [
        Append(input_.message),
        CommitInBackground(),
        Placed(input_.ref, Placement.APPENDED),
    ]
    return state, effects


def _inject_stage(state: State, input_: Input) -> Result:
    assert isinstance(input_, Inject)
    staged = _replace(state, outbox=(*state.outbox, input_.message))
    return staged, [Placed(input_.ref, Placement.STAGED)]


def _steer_stage(state: State, input_: Input) -> Result:
    assert isinstance(input_, Steer)
    staged = _replace(state, outbox=(*state.outbox, input_.steering))
    return staged, [Placed(input_.ref, Placement.STEERED), Queued("steering", len(staged.outbox))]


def _steer_new_turn(state: State, input_: Input) -> Result:
    assert isinstance(input_, Steer)
    if not input_.start_turn:
        return state, [Placed(input_.ref, Placement.PROMPT_REQUIRED)]
    placed: list[Effect] = [Placed(input_.ref, Placement.STARTED_NEW_TURN)]
    new, effects = (_submit_idle if state.phase is Phase.IDLE else _submit_queue)(
        state, Submit(Prompt(ref=None, content=input_.steering.content))
    )
    return new, placed + effects


def _model_done(state: State, input_: Input) -> Result:
    assert isinstance(input_, ModelDone)
    cancelled = state.cancelling or input_.stop is ModelStop.CANCELLED
    parts = tuple(p for p in input_.parts if not (cancelled and isinstance(p, ToolCallPart)))
    effects: list[Effect] = []
    if parts:
        message = AssistantMessage(
            state.turn,
            state.step,
            input_.message_id,
            list(parts),
            input_.reasoning_details,
            input_.usage,
        )
        effects.append(Append(message))
    calls = tuple(p for p in parts if isinstance(p, ToolCallPart))
    if cancelled:
        _close_step(state, effects)
        return _end_turn(state, effects, TurnEndKind.CANCELLED)
    if calls:
        return _start_batch(state, calls, effects)
    _close_step(state, effects)
    if any(isinstance(item, Steering) for item in state.outbox):
        return _begin_step(_drain(state, effects), effects)
    end = TurnEndKind.MAX_TOKENS if input_.stop is ModelStop.MAX_TOKENS else TurnEndKind.COMPLETED
    return _end_turn(state, effects, end)


def _start_batch(state: State, calls: tuple[ToolCallPart, ...], effects: list[Effect]) -> Result:
    effects += [
        Append(ToolCall(state.turn, state.step, call.id, call.name, call.arguments))
        for call in calls
    ]
    ticket = state.ticket + 1
    effects += [Commit(), StartTool(ticket, state.turn, state.step, calls[0])]
    new = _replace(state, phase=Phase.RUNNING_TOOLS, batch=calls, batch_index=0, ticket=ticket)
    return new, effects


def _model_failed(state: State, input_: Input) -> Result:
    assert isinstance(input_, ModelFailed)
    effects: list[Effect] = []
    parts: list[AssistantPart] = [p for p in input_.parts if not isinstance(p, ToolCallPart)]
    if parts:
        effects.append(Append(AssistantMessage(state.turn, state.step, input_.message_id, parts)))
    if state.cancelling:
        _close_step(state, effects)
        return _end_turn(state, effects, TurnEndKind.CANCELLED)
    error = AgentError(turn=state.turn, step=state.step, error=ErrorInfo(message=input_.error))
    effects.append(Append(error))
    _close_step(state, effects)
    return _end_turn(state, effects, TurnEndKind.ERROR, input_.error)


def _result(
    state: State,
    call: ToolCallPart,
    content: list[ContentBlock],
    error: bool,
    checkpoints: tuple[Checkpoint, ...] = (),
) -> Append:
    """A tool result, told to the client once durable (each path after it ends in a Commit)."""
    result = ToolResult(state.turn, state.step, call.id, content, error, checkpoints=checkpoints)
    return Append(result, tell_after_commit=True)


def _tool_done(state: State, input_: Input) -> Result:
    assert isinstance(input_, ToolDone)
    call = state.batch[state.batch_index]
    done = _result(state, call, input_.content, input_.is_error, input_.checkpoints)
    effects: list[Effect] = [done]
    state = _replace(state, outbox=(*state.outbox, *input_.contexts))
    if state.cancelling or input_.cancelled:
        cancelled: list[ContentBlock] = [TextContent(text=CANCELLED_TOOL_TEXT)]
        effects += [
            _result(state, rest, cancelled, True) for rest in state.batch[state.batch_index + 1 :]
        ]
        _close_step(state, effects)
        return _end_turn(state, effects, TurnEndKind.CANCELLED)
    index = state.batch_index + 1
    if index < len(state.batch):
        ticket = state.ticket + 1
        effects += [Commit(), StartTool(ticket, state.turn, state.step, state.batch[index])]
        return _replace(state, batch_index=index, ticket=ticket), effects
    _close_step(state, effects)
    return _begin_step(_drain(state, effects), effects)


def _compaction_done(state: State, input_: Input) -> Result:
    assert isinstance(input_, CompactionDone)
    effects: list[Effect] = []
    if input_.compaction is not None:
        effects += [Append(input_.compaction), Commit()]
    return _after_compaction(state, effects, Finished(StopReason.END_TURN))


def _compaction_failed(state: State, input_: Input) -> Result:
    assert isinstance(input_, CompactionFailed)
    return _after_compaction(state, [], Failed(input_.error))


def _after_compaction(state: State, effects: list[Effect], outcome: Outcome) -> Result:
    """Automatic: the admitted prompt's turn opens (a failed summary is not its failure).
    Manual: the ``/compact`` prompt is answered and the next queued prompt admitted."""
    if state.admitted is not None:
        return _open_turn(state, state.admitted, effects)
    _resolve_all((state.active,) if state.active else (), outcome, effects)
    return _admit_next(_replace(state, phase=Phase.IDLE, active=None), effects)


def _cancel_noop(state: State, input_: Input) -> Result:
    return state, []


def _cancel_before_turn(state: State, input_: Input) -> Result:
    """ADMITTING or COMPACTING: abort the worker; nothing was appended, nothing will be."""
    effects: list[Effect] = [Abort(state.ticket)]
    _resolve_all((state.active,) if state.active else (), Finished(StopReason.CANCELLED), effects)
    _resolve_all(state.queue, Finished(StopReason.CANCELLED), effects)
    idle = _replace(
        state, phase=Phase.IDLE, active=None, queue=(), admitted=None, ticket=state.ticket + 1
    )
    return idle, effects


def _cancel_turn(state: State, input_: Input) -> Result:
    if state.cancelling:
        return state, []
    effects: list[Effect] = [Abort(state.ticket)]
    _resolve_all(state.queue, Finished(StopReason.CANCELLED), effects)
    return _replace(state, cancelling=True, queue=()), effects


def _without(state: State, ref: int, effects: list[Effect]) -> State:
    """The queue without the prompt ``ref`` (answered ``cancelled``); unchanged if absent."""
    dropped = tuple(p for p in state.queue if p.ref == ref)
    _resolve_all(dropped, Finished(StopReason.CANCELLED), effects)
    return _replace(state, queue=tuple(p for p in state.queue if p.ref != ref))


def _is_active(state: State, ref: int) -> bool:
    return state.active is not None and state.active.ref == ref


def _cancel_one_early(state: State, input_: Input) -> Result:
    """ADMITTING or COMPACTING: the active prompt's work is aborted and the next one admitted;
    a queued one just leaves the queue."""
    assert isinstance(input_, CancelPrompt)
    effects: list[Effect] = []
    if not _is_active(state, input_.ref):
        return _without(state, input_.ref, effects), effects
    effects.append(Abort(state.ticket))
    _resolve_all((state.active,) if state.active else (), Finished(StopReason.CANCELLED), effects)
    idle = _replace(state, phase=Phase.IDLE, active=None, admitted=None, ticket=state.ticket + 1)
    return _admit_next(idle, effects)


def _cancel_one_in_turn(state: State, input_: Input) -> Result:
    """REQUESTING or RUNNING_TOOLS: the running prompt's turn ends cancelled (the queue runs
    after it); a queued one just leaves the queue."""
    assert isinstance(input_, CancelPrompt)
    effects: list[Effect] = []
    if not _is_active(state, input_.ref):
        return _without(state, input_.ref, effects), effects
    if state.cancelling:
        return state, effects
    return _replace(state, cancelling=True), [Abort(state.ticket)]


# -- the table --------------------------------------------------------------------------------

_IDLE, _ADMITTING, _COMPACTING = Phase.IDLE, Phase.ADMITTING, Phase.COMPACTING
_REQUESTING, _TOOLS = Phase.REQUESTING, Phase.RUNNING_TOOLS


class Row(msgspec.Struct, frozen=True):
    """One transition: its handler and every phase the handler may end in."""

    handler: Transition
    may_end_in: frozenset[Phase]


def _to(*phases: Phase) -> frozenset[Phase]:
    return frozenset(phases)


_NO_TURN: Final = _to(_IDLE, _ADMITTING, _COMPACTING)
"""Where ``_admit_next`` lands, so where every handler that ends a turn or a compaction may."""

# fmt: off
_TABLE: Final[dict[tuple[Phase, type[Input]], Row]] = {
    # (phase,     input):            Row(handler,             may end in),
    (_IDLE,       Submit):           Row(_submit_idle,        _to(_ADMITTING, _COMPACTING)),
    (_ADMITTING,  Submit):           Row(_submit_queue,       _to(_ADMITTING)),
    (_COMPACTING, Submit):           Row(_submit_queue,       _to(_COMPACTING)),
    (_REQUESTING, Submit):           Row(_submit_queue,       _to(_REQUESTING)),
    (_TOOLS,      Submit):           Row(_submit_queue,       _to(_TOOLS)),
    (_ADMITTING,  Admitted):         Row(_admitted,           _to(_REQUESTING, _COMPACTING)),
    (_ADMITTING,  Blocked):          Row(_blocked,            _NO_TURN),
    (_IDLE,       Inject):           Row(_inject_append,      _to(_IDLE)),
    (_ADMITTING,  Inject):           Row(_inject_append,      _to(_ADMITTING)),
    (_COMPACTING, Inject):           Row(_inject_append,      _to(_COMPACTING)),
    (_REQUESTING, Inject):           Row(_inject_stage,       _to(_REQUESTING)),
    (_TOOLS,      Inject):           Row(_inject_stage,       _to(_TOOLS)),
    (_IDLE,       Steer):            Row(_steer_new_turn,     _to(_IDLE, _ADMITTING)),
    (_ADMITTING,  Steer):            Row(_steer_new_turn,     _to(_ADMITTING)),
    (_COMPACTING, Steer):            Row(_steer_new_turn,     _to(_COMPACTING)),
    (_REQUESTING, Steer):            Row(_steer_stage,        _to(_REQUESTING)),
    (_TOOLS,      Steer):            Row(_steer_stage,        _to(_TOOLS)),
    (_REQUESTING, ModelDone):        Row(_model_done,         _NO_TURN | _to(_REQUESTING, _TOOLS)),
    (_REQUESTING, ModelFailed):      Row(_model_failed,       _NO_TURN),
    (_TOOLS,      ToolDone):         Row(_tool_done,          _NO_TURN | _to(_REQUESTING, _TOOLS)),
    (_COMPACTING, CompactionDone):   Row(_compaction_done,    _NO_TURN | _to(_REQUESTING)),
    (_COMPACTING, CompactionFailed): Row(_compaction_failed,  _NO_TURN | _to(_REQUESTING)),
    (_IDLE,       Cancel):           Row(_cancel_noop,        _to(_IDLE)),
    (_ADMITTING,  Cancel):           Row(_cancel_before_turn, _to(_IDLE)),
    (_COMPACTING, Cancel):           Row(_cancel_before_turn, _to(_IDLE)),
    (_REQUESTING, Cancel):           Row(_cancel_turn,        _to(_REQUESTING)),
    (_TOOLS,      Cancel):           Row(_cancel_turn,        _to(_TOOLS)),
    (_IDLE,       CancelPrompt):     Row(_cancel_noop,        _to(_IDLE)),
    (_ADMITTING,  CancelPrompt):     Row(_cancel_one_early,   _NO_TURN),
    (_COMPACTING, CancelPrompt):     Row(_cancel_one_early,   _NO_TURN),
    (_REQUESTING, CancelPrompt):     Row(_cancel_one_in_turn, _to(_REQUESTING)),
    (_TOOLS,      CancelPrompt):     Row(_cancel_one_in_turn, _to(_TOOLS)),
}
# fmt: on

_WORKER_RESULTS: Final = (
    Admitted,
    Blocked,
    ModelDone,
    ModelFailed,
    ToolDone,
    CompactionDone,
    CompactionFailed,
)


def is_stale(state: State, input_: Input) -> bool:
    """A worker result whose work was aborted (its ticket is no longer current)."""
    return isinstance(input_, _WORKER_RESULTS) and input_.ticket != state.ticket


def transition(state: State, input_: Input) -> Result:
    """The whole machine: the next state and the effects to execute, in order."""
    if is_stale(state, input_):
        return state, []
    row = _TABLE.get((state.phase, type(input_)))
    if row is None:
        raise IllegalInput(state.phase, input_)
    return row.handler(state, input_)


class TurnMachine:
    """Holds the current state; ``feed`` is the only way to change it."""

    def __init__(self, state: State | None = None) -> None:
        self.state = state or State()

    def feed(self, input_: Input) -> list[Effect]:
        self.state, effects = transition(self.state, input_)
        return effects
