"""The turn machine's vocabulary: its phases, the inputs it is fed and the effects it answers.

Closed vocabularies as frozen structs (style.md): ``machine.py`` holds the state, the
transitions and the table over these; the actor (``actor.py``) produces the inputs and executes
the effects. If you add an input or effect: add it here, to the ``Input`` / ``Effect`` union, a
row to ``machine._TABLE``, and a case to the actor's effect executor.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from acp_agent.content import ContentBlock
from acp_agent.journal.events import (
    AssistantPart,
    Checkpoint,
    Compaction,
    CompactionReason,
    Event,
    Source,
    StepUsage,
    ToolCallPart,
    UserMessage,
)


class Phase(StrEnum):
    IDLE = "idle"
    ADMITTING = "admitting"
    REQUESTING = "requesting"
    RUNNING_TOOLS = "running_tools"
    COMPACTING = "compacting"


class StopReason(StrEnum):
    """ACP ``stopReason`` values a prompt can be answered with."""

    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    MAX_TURN_REQUESTS = "max_turn_requests"
    REFUSAL = "refusal"
    CANCELLED = "cancelled"


class ModelStop(StrEnum):
    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    CANCELLED = "cancelled"


class Placement(StrEnum):
    APPENDED = "appended"
    STAGED = "staged"
    STEERED = "steered"
    STARTED_NEW_TURN = "startedNewTurn"
    PROMPT_REQUIRED = "promptRequired"


# -- values carried by inputs ---------------------------------------------------------------


class CompactRequest(msgspec.Struct, frozen=True):
    """The ``/compact`` command; ``instructions`` is the text typed after it."""

    instructions: str = ""


class Prompt(msgspec.Struct, frozen=True):
    """A direct prompt waiting for its turn. ``ref`` names the request to answer (None: steer).

    ``compact``: the prompt is the ``/compact`` command, served by a compaction instead of a turn.
    ``read_only``: its turn runs as in read-only mode, whatever the session's mode (``/review``).
    """

    ref: int | None
    content: list[ContentBlock]
    compact: CompactRequest | None = None
    read_only: bool = False


class Steering(msgspec.Struct, frozen=True):
    id: str
    content: list[ContentBlock]
    source: Source


OutboxItem = UserMessage | Steering

# -- inputs -----------------------------------------------------------------------------------


class Submit(msgspec.Struct, frozen=True):
    prompt: Prompt


class Admitted(msgspec.Struct, frozen=True):
    ticket: int
    prompt: UserMessage
    contexts: tuple[UserMessage, ...] = ()
    compact_first: bool = False
    """The history (with this prompt) nears the context window: compact before the turn."""


class Blocked(msgspec.Struct, frozen=True):
    ticket: int
    reason: str


class Inject(msgspec.Struct, frozen=True):
    ref: int
    message: UserMessage


class Steer(msgspec.Struct, frozen=True):
    ref: int
    steering: Steering
    start_turn: bool = True
    """What steering does when no turn is running: start one with it (the default), or, when
    ``False``, nothing but say so (``Placement.PROMPT_REQUIRED``): the client sends a prompt."""


class ModelDone(msgspec.Struct, frozen=True):
    ticket: int
    message_id: str
    parts: tuple[AssistantPart, ...]
    stop: ModelStop = ModelStop.END_TURN
    reasoning_details: tuple[msgspec.Raw, ...] = ()
    """What the provider wants back with this answer (``Finish.reasoning_details``)."""
    usage: StepUsage | None = None
    """What the request used, as reported (``Usage``); journaled with the assistant message."""


class ModelFailed(msgspec.Struct, frozen=True):
    ticket: int
    message_id: str
    parts: tuple[AssistantPart, ...]
    error: str


class ToolDone(msgspec.Struct, frozen=True):
    ticket: int
    content: list[ContentBlock]
    is_error: bool
    contexts: tuple[UserMessage, ...] = ()
    cancelled: bool = False
    checkpoints: tuple[Checkpoint, ...] = ()
    """What the call changed (``tool/result.checkpoints``)."""


class CompactionDone(msgspec.Struct, frozen=True):
    ticket: int
    compaction: Compaction | None
    """The event to append; None: nothing could be compacted (nothing is appended)."""


class CompactionFailed(msgspec.Struct, frozen=True):
    ticket: int
    error: str


class Cancel(msgspec.Struct, frozen=True):
    pass


class CancelPrompt(msgspec.Struct, frozen=True):
    """Cancel one prompt (the client's ``$/cancel_request`` naming it): queued, it is answered
    ``cancelled`` and leaves the queue; running, its turn ends as with ``Cancel``; the other
    prompts of the queue stay where they were."""

    ref: int


Input = (
    Submit
    | Admitted
    | Blocked
    | Inject
    | Steer
    | ModelDone
    | ModelFailed
    | ToolDone
    | CompactionDone
    | CompactionFailed
    | Cancel
    | CancelPrompt
)

# -- effects ----------------------------------------------------------------------------------


class Append(msgspec.Struct, frozen=True):
    event: Event
    tell_after_commit: bool = False
    """Tell the observer (so the client) of the event only once the next ``Commit`` has made it
    durable, and of every event appended after it too (the wire keeps the journal's order). A
    tool result says a side effect happened: a client told ``completed`` must never find the
    call ``interrupted`` after a crash."""


class Commit(msgspec.Struct, frozen=True):
    """A durability barrier: make every appended event durable before the next effect, then
    tell the observer of the events held for it (``Append.tell_after_commit``)."""


class CommitInBackground(msgspec.Struct, frozen=True):
    """Start a flush without waiting for it (idle injection); quiescence waits for it."""


class StartAdmission(msgspec.Struct, frozen=True):
    ticket: int
    prompt: Prompt


class StartCompaction(msgspec.Struct, frozen=True):
    ticket: int
    reason: CompactionReason
    instructions: str = ""


class StartModelRequest(msgspec.Struct, frozen=True):
    ticket: int
    turn: int
    step: int


class StartTool(msgspec.Struct, frozen=True):
    ticket: int
    turn: int
    step: int
    call: ToolCallPart


class Abort(msgspec.Struct, frozen=True):
    ticket: int


class TurnUsage(msgspec.Struct, frozen=True):
    """What a turn's model requests used, added up (the providers' own counts)."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None

    def plus(self, more: TurnUsage) -> TurnUsage:
        return TurnUsage(
            self.input_tokens + more.input_tokens,
            self.output_tokens + more.output_tokens,
            _add(self.reasoning_tokens, more.reasoning_tokens),
            _add(self.cached_tokens, more.cached_tokens),
        )


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


class Finished(msgspec.Struct, frozen=True):
    stop: StopReason
    usage: TurnUsage | None = None
    """What the turn's requests used (``None``: no provider reported any, or no turn ran)."""


class Refused(msgspec.Struct, frozen=True):
    reason: str


class Failed(msgspec.Struct, frozen=True):
    message: str


Outcome = Finished | Refused | Failed


class Resolve(msgspec.Struct, frozen=True):
    ref: int
    outcome: Outcome


class Placed(msgspec.Struct, frozen=True):
    ref: int
    placement: Placement


class Queued(msgspec.Struct, frozen=True):
    """Observation only: a prompt waits for its turn, or steering waits in the outbox."""

    kind: str
    depth: int


Effect = (
    Append
    | Commit
    | CommitInBackground
    | StartAdmission
    | StartCompaction
    | StartModelRequest
    | StartTool
    | Abort
    | Resolve
    | Placed
    | Queued
)
