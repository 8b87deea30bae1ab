"""The session actor: the thin, effectful shell around the pure turn machine.

Theory of operation
-------------------
One actor per session, one task: it takes inputs from its mailbox *one at a time*, feeds them
to ``TurnMachine`` and executes the returned effects in order before taking the next input.
Everything that can take long — admission hooks, a model request, a tool — runs in a *worker*
task that reports back by posting an input to the same mailbox, tagged with the ticket of the
effect that started it. So the machine sees one totally ordered stream of inputs, and a cancel
can always get in between.

Effects and their execution:

- ``Append``: give the event its ``seq``/``time`` (and a tool call its client id, when the
  model reused an id: ``journal/callids.py``), add it to the in-memory history and the journal
  writer's pending buffer (no I/O), then tell the observer (which projects it to ACP) — or, for
  ``tell_after_commit`` and whatever follows it, hold it until the next ``Commit``.
- ``Commit``: a durability barrier, awaited inline (the fsync runs in a worker thread), then the
  held events are told. A failed flush is reported through the observer's journal-error channel
  and the log (before the held events are told); the events stay admitted and the next flush
  retries them. It never becomes an ``agent/error``.
- ``CommitInBackground``: an idle injection's flush, handed to the journal's thread at once;
  tracked so ``when_idle`` waits for it.
- ``Start*``: spawn a worker. The ``StartTool`` of a batch's first call also starts the
  batch's *concurrent* calls (``agent``) at once, together (``batchrun.py``); the machine's
  ``StartTool`` for such a call then waits for the outcome already on its way, and ``Abort``
  cancels them too. ``Abort``: cancel the worker holding that ticket. The compaction
  worker (``StartCompaction``) plans the cut, asks the model for the summary and reports
  progress to the observer (started / failed / cancelled; success is the appended event).
- ``Resolve`` / ``Placed``: complete the reply a caller is waiting for.

If you change the effect vocabulary in ``vocabulary.py``, change ``_execute`` here.
What the actor needs and reports (``SessionDeps``, ``SessionObserver``, ``Reply``) is in
``ports.py``; turning a model stream into message parts, in ``parts.py``; the spans of turns,
model requests and tool calls (``acp_agent/telemetry``, no-ops unless traces are on), in
``tracing.py``, told of each append and each request and tool run it starts.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, assert_never

import anyio
import msgspec
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from acp_agent import telemetry
from acp_agent.content import ContentBlock, TextContent, plain_text
from acp_agent.journal import turns
from acp_agent.journal.callids import CallIds
from acp_agent.journal.errors import JournalFlushError
from acp_agent.journal.events import (
    Compaction,
    CompactionReason,
    Entry,
    Event,
    SessionHeader,
    Source,
    SourceKind,
    StepUsage,
    ToolCallPart,
    ToolResult,
    TurnEnd,
    UserMessage,
    source,
)
from acp_agent.journal.writer import JournalHealth, JournalWriter
from acp_agent.logs import get_logger
from acp_agent.model.base import (
    ContextOverflow,
    Finish,
    ModelError,
    ModelRequest,
    Retrying,
    StreamEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallReady,
    Usage,
    UserTurn,
    context_window_of,
    learn_window,
    tokens_of,
)
from acp_agent.turn.admission import AdditionalContext, Allow
from acp_agent.turn.batchrun import EarlyRuns
from acp_agent.turn.compaction import (
    AUTO_COMPACT_AT,
    COMMAND,
    CompactionPlan,
    CompactionProgress,
    keep_budget,
    plan_compaction,
    summarize,
    summary_request,
    window_neared,
)
from acp_agent.turn.fit import fit_tool_results
from acp_agent.turn.gauge import Learned
from acp_agent.turn.history import History
from acp_agent.turn.machine import State, TurnMachine
from acp_agent.turn.parts import PartsBuilder, aclose_stream
from acp_agent.turn.ports import (
    Notice,
    NoticeKind,
    Reply,
    SessionDeps,
    SessionObserver,
    Severity,
)
from acp_agent.turn.titles import ask_title, title_from, title_request
from acp_agent.turn.toolrun import ToolRunOutcome
from acp_agent.turn.tracing import TurnTrace, counted, finished, first_token, tool_ended
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
    Effect,
    Finished,
    Inject,
    Input,
    ModelDone,
    ModelFailed,
    ModelStop,
    Outcome,
    Phase,
    Placed,
    Placement,
    Prompt,
    Queued,
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
    TurnUsage,
)

log = get_logger("acp_agent.session")


def failure(exc: ModelError) -> str:
    """What the user is told of a failed request; an overflow says so in plain words."""
    text = str(exc)
    if isinstance(exc, ContextOverflow) and "context window" not in text:
        return f"the request does not fit the model's context window: {text}"
    return text


def retry_notice(retrying: Retrying) -> Notice:
    description = (
        f"Attempt {retrying.attempt} of {retrying.max_retries + 1} failed ({retrying.reason}); "
        f"trying again in {retrying.delay_ms} ms."
    )
    return Notice(
        NoticeKind.MODEL_RETRY, Severity.WARNING, "Retrying the model request", description
    )


class _Changed(msgspec.Struct):
    """A level-triggered 'something changed' signal for quiescence waiters."""

    event: anyio.Event = msgspec.field(default_factory=anyio.Event)

    def fire(self) -> None:
        self.event.set()
        self.event = anyio.Event()


class SessionActor:
    def __init__(
        self,
        header: SessionHeader,
        writer: JournalWriter,
        entries: list[Entry],
        deps: SessionDeps,
        observer: SessionObserver,
        title: str | None = None,
    ) -> None:
        self.header = header
        self.id = header.id
        self.writer = writer
        self.entries = entries
        self._history = History()
        """What the model sees, derived from ``entries`` (``history.py``)."""
        self.deps = deps
        self.observer = observer
        last_turn = turns.last_turn(entries)
        self.machine = TurnMachine(State(turn=last_turn, max_steps=deps.max_steps))
        self._send: MemoryObjectSendStream[Input]
        self._receive: MemoryObjectReceiveStream[Input]
        self._send, self._receive = anyio.create_memory_object_stream[Input](math.inf)
        self._refs = 0
        self._replies: dict[int, Reply[object]] = {}
        self._workers: dict[int, anyio.CancelScope] = {}
        self._background_flushes = 0
        self._changed = _Changed()
        self._tg: TaskGroup | None = None
        self._log = log.bind(session_id=self.id)
        self.title = title
        self._cancel_pending = False
        self._turn_usage: TurnUsage | None = None
        """The open turn's usage so far; given to its outcome (``Finished.usage``)."""
        self._overflowed = False
        """The last request was refused as too long for the window: compact before the next
        turn, whatever the estimate says (the provider counts better than we do)."""
        self.usage_total: TurnUsage | None = None
        self.cost_total = 0.0
        """What the session's requests cost in this process, in dollars, where reported."""
        """What this session's requests used since this process opened it (``/status``)."""
        self.context_used: int | None = None
        """What the context held at the last request that reported usage (``usage_update``)."""
        self._stopped = False
        self.learned = deps.learned or Learned()
        """What the session learned of its model's window and tokens (``gauge.py``)."""
        self._fixed_tokens = 0
        self._upcoming_tokens = 0
        """The estimate of the prompt waiting for the compaction before its turn."""
        self._declared = context_window_of(deps.model)
        """The window the provider declared when last looked at (a probe may change it)."""
        self._early = EarlyRuns()
        """The running batch's concurrent calls (``batchrun.py``)."""
        self._trace = TurnTrace(self.id, telemetry.current())
        """The session's spans (``tracing.py``); a subagent's turns are its span's children."""

    # -- public API (also the Python API's backbone) ------------------------------------------

    @property
    def state(self) -> State:
        return self.machine.state

    async def submit(
        self, content: list[ContentBlock], *, read_only: bool = False
    ) -> Reply[Outcome]:
        """Queue a prompt and return at once; the reply resolves when its turn ends.

        ``read_only``: the turn's tools are decided as in read-only mode (``Prompt``).
        """
        return await self._queue(content, None, read_only)

    async def compact(self, instructions: str = "") -> Reply[Outcome]:
        """Queue a manual compaction (the command ``/compact instructions``), FIFO with prompts."""
        content: list[ContentBlock] = [TextContent(text=f"{COMMAND} {instructions}".rstrip())]
        return await self._queue(content, CompactRequest(instructions), read_only=False)

    async def _queue(
        self, content: list[ContentBlock], compact: CompactRequest | None, read_only: bool
    ) -> Reply[Outcome]:
        ref, reply = self._reply()
        await self._post(Submit(Prompt(ref, content, compact, read_only)))
        return reply  # type: ignore[return-value]

    async def inject(self, content: list[ContentBlock], src: Source) -> tuple[str, Placement]:
        message = UserMessage(id=self.deps.ids(), content=content, source=src)
        ref, reply = self._reply()
        await self._post(Inject(ref, message))
        placement = await reply.wait()
        assert isinstance(placement, Placement)
        return message.id, placement

    async def steer(
        self, content: list[ContentBlock], src: Source | None = None, *, start_turn: bool = True
    ) -> Placement:
        steering = Steering(self.deps.ids(), content, src or source(SourceKind.USER))
        ref, reply = self._reply()
        await self._post(Steer(ref, steering, start_turn))
        placement = await reply.wait()
        assert isinstance(placement, Placement)
        return placement

    async def cancel(self) -> None:
        # Seen at once, before the machine gets the input: a prompt answered while this cancel
        # waits in the mailbox (say, during the turn-end fsync) is answered ``cancelled``.
        self._cancel_pending = True
        await self._post(Cancel())

    async def cancel_prompt(self, reply: Reply[Outcome]) -> None:
        """Cancel the one prompt ``reply`` answers (``CancelPrompt``): nothing once answered."""
        ref = next((r for r, waiting in self._replies.items() if waiting is reply), None)
        if ref is not None:
            await self._post(CancelPrompt(ref))

    async def commit_repair(self) -> None:
        """Make load-time repairs durable; a failure is reported (log + observer), not raised:
        the repaired events stay admitted and the next flush retries them."""
        await self._commit()

    def quiescent(self) -> bool:
        return (
            self.state.phase is Phase.IDLE
            and not self.state.queue
            and self._background_flushes == 0
            and self._receive.statistics().current_buffer_used == 0
        )

    async def when_idle(self) -> JournalHealth:
        """Wait until no turn is open or queued and no flush is unfinished.

        Lines a failed flush left behind are retried once here, so a caller that waits for
        quiescence after the fault cleared gets them durable.
        """
        while not self.quiescent():
            await self._changed.event.wait()
        if self.writer.health.unflushed:
            await self._commit()
        return self.writer.health

    # -- the loop -----------------------------------------------------------------------------

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            async with self._receive:
                async for input_ in self._receive:
                    for effect in self.machine.feed(input_):
                        await self._execute(effect)
                    if isinstance(input_, Cancel):
                        self._cancel_pending = False
                    self._changed.fire()
            tg.cancel_scope.cancel()

    async def stop(self) -> None:
        """Stop taking inputs (after those already posted) and end the loop."""
        self._stopped = True
        self._send.close()

    async def _post(self, input_: Input) -> None:
        await self._send.send(input_)

    async def _report(self, input_: Input) -> None:
        """A worker's result. After ``stop`` nobody takes it, and nobody needs it: the session
        was quiescent when it was closed, so the result is stale (a prompt whose admission
        finished just as a cancel answered it, say). Dropped, and logged at debug."""
        try:
            await self._send.send(input_)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._log.debug("worker_result_after_stop", input=type(input_).__name__)

    def _reply(self) -> tuple[int, Reply[object]]:
        self._refs += 1
        reply: Reply[object] = Reply()
        self._replies[self._refs] = reply
        return self._refs, reply

    # -- effects --------------------------------------------------------------------------------

    _held: tuple[Entry, ...] = ()
    """Appended, not yet told: waiting for the next ``Commit`` (``Append.tell_after_commit``)."""
    _call_ids: CallIds | None = None
    """The session's client ids of tool calls, learnt from ``entries`` when first needed."""

    async def _execute(self, effect: Effect) -> None:
        match effect:
            case Append(event=event, tell_after_commit=later):
                await self._append(event, later)
            case Commit():
                await self._commit()
                await self._tell_held()
            case CommitInBackground():
                self._start_background_commit()
            case StartAdmission(ticket=ticket, prompt=prompt):
                self._spawn_worker(ticket, lambda: self._admit(ticket, prompt))
            case StartCompaction(ticket=ticket, reason=reason, instructions=instructions):
                self._spawn_worker(ticket, lambda: self._compact(ticket, reason, instructions))
            case StartModelRequest(ticket=ticket, turn=turn, step=step):
                if step == 1:
                    self._turn_usage = None
                self._spawn_worker(ticket, lambda: self._request_model(ticket, turn, step))
            case StartTool(ticket=ticket, turn=turn, step=step, call=call):
                if self.state.batch_index == 0:
                    self._start_concurrent(turn, step)
                client_call = self._client_call(turn, step, call)
                self._spawn_worker(ticket, lambda: self._run_tool(ticket, client_call))
            case Abort(ticket=ticket):
                scope = self._workers.get(ticket)
                if scope is not None:
                    scope.cancel()
                self._early.cancel()
            case Resolve(ref=ref, outcome=outcome):
                if self._cancel_pending:  # the cancel raced the natural end: it wins
                    outcome = Finished(StopReason.CANCELLED)
                if isinstance(outcome, Finished) and self._turn_usage is not None:
                    outcome = Finished(outcome.stop, self._turn_usage)
                self._turn_usage = None
                self._replies.pop(ref).set(outcome)
            case Placed(ref=ref, placement=placement):
                self._replies.pop(ref).set(placement)
            case Queued(kind=kind, depth=depth):
                self._log.info("agent_queued", kind=kind, depth=depth, turn=self.state.turn)
            case _:
                assert_never(effect)

    async def _append(self, event: Event, tell_after_commit: bool = False) -> None:
        seq = self.entries[-1].seq + 1 if self.entries else 1
        entry = Entry(seq=seq, time=self.deps.clock(), event=self._ids().stamp(event))
        self.entries.append(entry)
        self.writer.append(entry)
        self._trace.appended(event, self._turn_usage)
        if tell_after_commit or self._held:
            self._held = (*self._held, entry)
        else:
            await self.observer.appended(entry)
        if isinstance(event, TurnEnd) and event.turn == 1 and self.deps.model_titles:
            self._spawn(self._model_title)

    async def _tell_held(self) -> None:
        held, self._held = self._held, ()
        for entry in held:
            await self.observer.appended(entry)

    def _ids(self) -> CallIds:
        """The client ids, up to date with ``entries``."""
        if self._call_ids is None:
            self._call_ids = CallIds()
        self._call_ids.learn(self.entries)
        return self._call_ids

    def _client_call(self, turn: int, step: int, call: ToolCallPart) -> ToolCallPart:
        """``call`` as the tool, its hooks and the client know it: by its client id."""
        client_id = self._ids().of(turn, step, call.id)
        return call if client_id == call.id else msgspec.structs.replace(call, id=client_id)

    async def _commit(self) -> None:
        try:
            await self.writer.flush()
        except JournalFlushError as exc:
            await self._report_flush_failure(exc)

    def _start_background_commit(self) -> None:
        """The flush's lines go to the journal's thread now, before the effects that follow
        (the injection's answer) are executed; a task waits for the outcome."""
        self._background_flushes += 1
        try:
            flushed = self.writer.flush_now()
        except BaseException:
            self._background_flushes -= 1
            raise

        async def background_commit() -> None:
            try:
                await flushed
            except JournalFlushError as exc:
                await self._report_flush_failure(exc)
            finally:
                self._background_flushes -= 1
                self._changed.fire()

        self._spawn(background_commit)

    async def _report_flush_failure(self, exc: JournalFlushError) -> None:
        """The writer already logged ``journal_flush_failed``; tell the client too."""
        await self.observer.journal_error(exc.error, self.writer.health.unflushed)

    def _spawn(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        assert self._tg is not None
        self._tg.start_soon(fn)

    def _spawn_worker(self, ticket: int, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``fn`` as the worker for ``ticket``; it enters ``self._workers[ticket]``."""
        self._workers[ticket] = anyio.CancelScope()

        async def worker() -> None:
            try:
                await fn()
            finally:
                self._workers.pop(ticket, None)

        self._spawn(worker)

    # -- workers ----------------------------------------------------------------------------

    async def _admit(self, ticket: int, prompt: Prompt) -> None:
        scope = self._workers[ticket]
        decision = None
        with scope:
            decision = await self.deps.admission.admit(self.id, prompt.content)
        if scope.cancelled_caught or decision is None:
            return
        self.deps.tools.permissions.read_only_turn = prompt.read_only
        if isinstance(decision, Allow):
            await self._maybe_title(decision.content)
            message = UserMessage(self.deps.ids(), decision.content, source(SourceKind.USER))
            contexts = tuple(self._context_message(c) for c in decision.additional_contexts)
            compact_first = self._nears_window([message, *contexts]) or self._overflowed
            self._overflowed = False
            await self._report(Admitted(ticket, message, contexts, compact_first))
        else:
            await self._report(Blocked(ticket, decision.reason))

    async def _maybe_title(self, content: list[ContentBlock]) -> None:
        if self.title is not None or self.deps.remember_title is None:
            return
        self.title = title_from(plain_text(content)) or "untitled"
        try:
            await anyio.to_thread.run_sync(self.deps.remember_title, self.title)
        except OSError as exc:  # the title file is a listing aid: the turn goes on without it
            self._log.warning("session_title_unsaved", error=str(exc))
        await self.observer.titled(self.title)

    def _context_message(self, context: AdditionalContext) -> UserMessage:
        return UserMessage(self.deps.ids(), context.content, context.source)

    def _nears_window(self, admitted: list[UserMessage]) -> bool:
        """Would the next request (history + the admitted messages + the system message and
        tools) near the context window, counted as the server counts (``gauge.py``)?"""
        upcoming = [UserTurn(message.content, message.source) for message in admitted]
        chars = self._history.json_chars(self.entries, upcoming)  # not the history encoded again
        self._upcoming_tokens = tokens_of(len(msgspec.json.encode(upcoming)))
        tokens = self._gauge().tokens(tokens_of(chars) + self._fixed_tokens)
        return window_neared(tokens, self.window())

    # -- what the session learned of the window and the tokens (gauge.py) ----------------------

    def _gauge(self) -> Learned:
        return self.learned.of(self.deps.model.name)

    def window(self) -> int:
        """The model's window: learned from the server, else configured."""
        return self._gauge().window(self.deps.context_window)

    async def _learn(self, learned: Learned) -> None:
        before, self.learned = self._gauge(), learned
        if learned == before:
            return
        self._log.info(
            "model_window_learned",
            model=learned.model,
            context_window=learned.window(self.deps.context_window),
            token_ratio=learned.token_ratio,
        )
        if self.deps.remember_learned is not None and _worth_saving(before, learned):
            await self.deps.remember_learned(learned)

    async def _learn_declared(self) -> None:
        """A window the provider learned since (its server named it: ``openai/probe.py``)."""
        declared = context_window_of(self.deps.model)
        if declared != self._declared:
            self._declared = declared
            await self._learn(self._gauge().windowed(declared))

    async def _learn_overflow(self, exc: ContextOverflow, estimated: int) -> None:
        learned = self._gauge().windowed(exc.window)
        if exc.prompt_tokens is not None:
            learned = learned.calibrated(estimated, exc.prompt_tokens)
        await self._learn(learned)

    async def _compact(self, ticket: int, reason: CompactionReason, instructions: str) -> None:
        scope = self._workers[ticket]
        plan = plan_compaction(self.entries, keep_tokens=self._keep_tokens(reason))
        if plan is None:
            self._log.info("compaction_skipped", reason=str(reason), why="nothing to summarize")
            await self._report(CompactionDone(ticket, None))
            return
        compaction_id, progress = self.deps.ids(), self.observer.compaction_progress
        self._log.info("compaction_started", reason=str(reason), through_seq=plan.through_seq)
        await progress(compaction_id, CompactionProgress.STARTED, None)
        summary = None
        try:
            with scope:
                summary = await self._summarize(plan, instructions)
        except ModelError as exc:
            self._log.warning("compaction_failed", reason=str(reason), error=str(exc))
            await progress(compaction_id, CompactionProgress.FAILED, str(exc))
            await self.observer.note(f"The history could not be compacted: {failure(exc)}")
            await self._report(CompactionFailed(ticket, str(exc)))
            return
        if scope.cancelled_caught or summary is None:
            await progress(compaction_id, CompactionProgress.CANCELLED, None)
            return
        event = Compaction(compaction_id, summary, plan.through_seq, plan.kept_from_seq, reason)
        await self._report(CompactionDone(ticket, event))

    def _keep_tokens(self, reason: CompactionReason) -> int:
        """What the compaction may keep verbatim (chars-÷-4 tokens): ``keep_budget`` of the
        window, and before a turn no more than leaves room, under the compaction threshold, for
        the system message, the tools and the prompt that waits."""
        gauge, window = self._gauge(), self.window()
        keep = keep_budget(window)
        if reason is CompactionReason.AUTO:
            waiting = gauge.tokens(self._fixed_tokens + self._upcoming_tokens)
            keep = min(keep, int(window * AUTO_COMPACT_AT) - waiting)
        return gauge.estimate_of(keep) if keep > 0 else 1  # 1: an empty rest ("[]") fits

    async def _summarize(self, plan: CompactionPlan, instructions: str) -> list[ContentBlock]:
        """The summary; asked again, once, after an overflow that taught the window or the
        tokens (the request is fitted to what was learned)."""
        for attempt in range(2):
            gauge, window = self._gauge(), self.window()
            request = summary_request(
                self.id, plan, instructions, self._system(), window, gauge.ratio
            )
            try:
                return await summarize(self.deps.model, request)
            except ContextOverflow as exc:
                await self._learn_overflow(exc, request_estimate(request))
                if attempt or self._gauge() == gauge:
                    raise
        raise AssertionError("unreachable")

    async def _request_model(self, ticket: int, turn: int, step: int) -> None:
        span = self._trace.model_request(self.deps.model.name, turn, step)
        try:
            await self._stream_model(ticket, turn, step, span)
        finally:
            span.end()

    async def _stream_model(self, ticket: int, turn: int, step: int, span: telemetry.Span) -> None:
        scope = self._workers[ticket]
        message_id = self.deps.ids()
        parts = PartsBuilder()
        stop = ModelStop.END_TURN
        details: tuple[msgspec.Raw, ...] = ()
        used: StepUsage | None = None
        events: AsyncIterator[StreamEvent] | None = None
        try:
            with scope:
                request = await self._fitted_request(turn, step)
                events = first_token(self.deps.model.stream(request), span)
                async for item in events:
                    match item:
                        case TextDelta(text=chunk):
                            parts.text(chunk)
                            await self.observer.text_delta(message_id, chunk)
                        case ThoughtDelta(text=chunk):
                            parts.thought(chunk)
                            await self.observer.thought_delta(message_id, chunk)
                        case ToolCallReady(call=call):
                            parts.tool_call(call)
                        case Usage() as usage:
                            used = _step_usage(usage, used)
                            counted(span, usage)
                            self._count(usage)
                            await self._learn_declared()
                            estimated = request_estimate(request)
                            await self._learn(
                                self._gauge().calibrated(estimated, usage.input_tokens)
                            )
                            await self.observer.usage(usage, self.window())
                        case Finish(stop=finish, reasoning_details=details):
                            stop = ModelStop(finish.value)
                        case Retrying() as retrying:
                            await self.observer.notice(retry_notice(retrying))
        except ContextOverflow as exc:
            await aclose_stream(events)
            events = None
            span.fail(failure(exc))
            if await self._refit(exc, request, parts):
                await self._request_model(ticket, turn, step)
                return
            await self._failed(ticket, turn, step, message_id, parts, exc)
            return
        except ModelError as exc:
            span.fail(failure(exc))
            await self._failed(ticket, turn, step, message_id, parts, exc)
            return
        finally:
            await aclose_stream(events)
        if scope.cancelled_caught:
            stop = ModelStop.CANCELLED
        finished(span, stop)
        await self._report(ModelDone(ticket, message_id, parts.build(), stop, details, used))

    async def _failed(
        self,
        ticket: int,
        turn: int,
        step: int,
        message_id: str,
        parts: PartsBuilder,
        exc: ModelError,
    ) -> None:
        self._log.warning("model_request_failed", turn=turn, step=step, error=str(exc))
        self._overflowed = isinstance(exc, ContextOverflow)
        await self._report(ModelFailed(ticket, message_id, parts.build(), failure(exc)))

    async def _fitted_request(self, turn: int, step: int) -> ModelRequest:
        """The next request of the turn, its tool results fitted to the window as learned:
        the oldest of the turn's are left out first (``fit.fit_tool_results``)."""
        await learn_window(self.deps.model)
        await self._learn_declared()
        messages = self._history.messages(self.entries)
        compact = self._compact_prompt()
        specs = await self.deps.tools.prepare(compact)  # MCP servers connect at the first one
        system = self._system(compact)
        self._fixed_tokens = tokens_of(len(system) + len(msgspec.json.encode(specs)))
        gauge, window = self._gauge(), self.window()
        recent = turn_tool_results(self.entries)
        if recent:
            budget = gauge.estimate_of(int(window * (1 - REPLY_SHARE))) - self._fixed_tokens
            messages = fit_tool_results(messages, recent, max(budget, 1))
        effort = self.deps.reasoning_effort
        return ModelRequest(
            self.id,
            turn,
            step,
            messages,
            specs,
            system,
            effort,
            context_window=window,
            token_ratio=gauge.ratio,
        )

    async def _refit(
        self, exc: ContextOverflow, request: ModelRequest, parts: PartsBuilder
    ) -> bool:
        """After an overflow before any output: learn from it; ask again when that changed what
        the next request would carry (its tool results fitted tighter)."""
        if parts.build():
            return False
        gauge = self._gauge()
        await self._learn_declared()
        await self._learn_overflow(exc, request_estimate(request))
        if self._gauge() == gauge or not turn_tool_results(self.entries):
            return False
        again = await self._fitted_request(request.turn, request.step)
        return again.messages != request.messages

    def _count(self, usage: Usage) -> None:
        counts = TurnUsage(
            usage.input_tokens, usage.output_tokens, usage.reasoning_tokens, usage.cached_tokens
        )
        self._turn_usage = counts if self._turn_usage is None else self._turn_usage.plus(counts)
        self.usage_total = counts if self.usage_total is None else self.usage_total.plus(counts)
        self.cost_total += usage.cost or 0.0
        used = usage.input_tokens + usage.output_tokens - (usage.reasoning_tokens or 0)
        self.context_used = used

    async def _model_title(self) -> None:
        """After the first turn, off its path: the model's title replaces the first-prompt one
        (``titles.py``); any failure keeps the old title and never reaches the session."""
        try:
            await self._write_model_title()
        except Exception as exc:  # a title is never worth a session
            self._log.warning("title_not_written", reason="error", error=repr(exc))

    async def _write_model_title(self) -> None:
        request = title_request(self.id, self.entries)
        if request is None:
            return
        started_from = self.title
        try:
            title = await ask_title(self.deps.model, request)
        except ModelError as exc:
            self._log.warning("title_not_written", reason="model_failed", error=str(exc))
            return
        if title is None or self._stopped or self.title != started_from:
            self._log.info("title_not_written", reason="no title" if title is None else "stale")
            return
        self.title = title
        if self.deps.remember_title is not None:
            await anyio.to_thread.run_sync(self.deps.remember_title, title)
        await self.observer.titled(title)
        self._log.info("title_written", by="model")

    def _compact_prompt(self) -> bool:
        decide = self.deps.compact_for
        return decide is not None and decide(self.window())

    def _system(self, compact: bool | None = None) -> str:
        """The system message for a request now: of the open turn's start (a journaled time,
        so a replayed journal asks the same), else of now (a compaction between turns)."""
        render = self.deps.system_prompt
        if render is None:
            return ""
        started = turns.open_turn_started(self.entries)
        compact = self._compact_prompt() if compact is None else compact
        return render(started if started is not None else self.deps.clock(), compact)

    def _start_concurrent(self, turn: int, step: int) -> None:
        """A new batch: its concurrent calls start now, together (``batchrun.py``)."""
        batch = (self._client_call(turn, step, c) for c in self.state.batch)
        calls = [c for c in batch if self.deps.tools.concurrent(c.name)]
        self._early.start(calls, self._run_early, self._spawn)

    async def _run_early(self, call: ToolCallPart) -> ToolRunOutcome:
        await self.observer.tool_started(call)
        return await self._traced_run(call)

    async def _traced_run(self, call: ToolCallPart) -> ToolRunOutcome:
        """The tool's run in its ``tool.call`` span (``current()`` there: a subagent's parent)."""
        span, outcome = self._trace.tool_call(call), None
        try:
            with telemetry.inside(span):
                outcome = await self.deps.tools.run(self.id, call)
            return outcome
        finally:
            tool_ended(span, outcome)

    async def _run_tool(self, ticket: int, call: ToolCallPart) -> None:
        scope = self._workers[ticket]
        early = self._early.has(call.id)
        if not early:
            await self.observer.tool_started(call)
        outcome = None
        if early:  # an ``Abort`` cancels the run itself: its outcome (if any) is waited for
            with anyio.CancelScope(shield=True):
                outcome = await self._early.take(call.id)
        else:
            with scope:
                outcome = await self._traced_run(call)
        if scope.cancelled_caught or outcome is None:
            cancelled: list[ContentBlock] = [TextContent(text="cancelled while running")]
            changed = self.deps.tools.take_checkpoints()
            await self._report(
                ToolDone(ticket, cancelled, is_error=True, cancelled=True, checkpoints=changed)
            )
            return
        contexts = tuple(self._context_message(c) for c in outcome.contexts)
        done = ToolDone(
            ticket, outcome.content, outcome.is_error, contexts, checkpoints=outcome.checkpoints
        )
        await self._report(done)


REPLY_SHARE = 0.15
"""The share of the window a fitted request leaves for the answer."""


def request_estimate(request: ModelRequest) -> int:
    """A request's chars-÷-4 estimate: its messages, system message and tools."""
    chars = len(msgspec.json.encode(request.messages)) + len(request.system)
    return tokens_of(chars + len(msgspec.json.encode(request.tools)))


def turn_tool_results(entries: list[Entry]) -> int:
    """How many tool results the open turn holds (the last ones of the history)."""
    return sum(isinstance(event, ToolResult) for event in turns.open_turn_events(entries))


def _worth_saving(before: Learned, after: Learned) -> bool:
    """A new window, or a ratio that moved by a tenth: not every request's rewrite."""
    if before.context_window != after.context_window:
        return True
    old, new = before.token_ratio or 1.0, after.token_ratio or 1.0
    return abs(new - old) > 0.1 * old


__all__ = ["Finished", "SessionActor", "StopReason"]


def _step_usage(usage: Usage, before: StepUsage | None) -> StepUsage:
    """A request's usage for its journaled message (added up, should a provider report twice)."""
    counts = (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens, usage.cached_tokens)
    now = StepUsage(*counts, cost=usage.cost)
    return now if before is None else before.plus(now)
