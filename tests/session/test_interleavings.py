"""Property: random interleavings of inject / send / steer / cancel / tool batches / blocks.

After every run, over the journal on disk: the session invariant holds; the number of turns
equals the number of model-loop executions (every turn asked the model, every model request
belongs to a turn); every injected context and every steering message is in the journal
exactly once; a blocked prompt left nothing behind.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings, strategies as st

from acp_agent.api import Agent
from acp_agent.content import ContentBlock, TextContent, plain_text
from acp_agent.journal.events import (
    SteeringMessage,
    StepStart,
    ToolCallPart,
    TurnStart,
    UserMessage,
    source_kind,
)
from acp_agent.journal.invariant import check
from acp_agent.journal.reader import load_journal
from acp_agent.model.base import (
    Capabilities,
    Finish,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCallReady,
)
from acp_agent.tools.base import Location, ToolContext, ToolKind, ToolOutput
from acp_agent.turn.admission import Allow, Block, Decision
from acp_agent.turn.vocabulary import Placement

# A step the model may take: ("text", chunks) or ("tools", batch size)
steps = st.one_of(
    st.tuples(st.just("text"), st.integers(1, 4)),
    st.tuples(st.just("tools"), st.integers(1, 3)),
)
ops = st.one_of(
    st.tuples(st.just("inject"), st.none()),
    st.tuples(st.just("send"), st.booleans()),  # True: admission blocks it
    st.tuples(st.just("steer"), st.none()),
    st.tuples(st.just("cancel"), st.none()),
    st.tuples(st.just("sleep"), st.integers(0, 3)),
)


class ProgramModel:
    """Answers requests from a drawn plan; once the plan is used up, plain text."""

    name = "program"
    capabilities = Capabilities()

    def __init__(self, plan: list[tuple[str, int]]) -> None:
        self.plan = list(plan)
        self.requests: list[ModelRequest] = []
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        kind, n = self.plan.pop(0) if self.plan else ("text", 1)
        # a step after a tool batch ends the loop, so every run terminates
        if (
            kind == "tools"
            and request.messages
            and request.messages[-1].__class__.__name__ != "ToolTurn"
        ):
            for _ in range(n):
                self.calls += 1
                await anyio.sleep(0.001)
                yield ToolCallReady(ToolCallPart(f"call-{self.calls}", "echo", {}))
        else:
            for index in range(n):
                await anyio.sleep(0.001)
                yield TextDelta(f"t{index} ")
        yield Finish()


class Echo:
    name = "echo"
    description = "echo"
    kind = ToolKind.OTHER
    parameters: dict[str, object] = {"type": "object"}  # noqa: RUF012

    def title(self, arguments: dict[str, object]) -> str:
        return "echo"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        await anyio.sleep(0.002)
        return ToolOutput([TextContent(text="echoed")])


class Gatekeeper:
    async def admit(self, session_id: str, content: list[ContentBlock]) -> Decision:
        text = plain_text(content)
        if text.startswith("BLOCK"):
            return Block("blocked by test")
        return Allow(content)


async def run_program(plan: list[tuple[str, int]], program: list[tuple[str, Any]]) -> None:
    model = ProgramModel(plan)
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        injected: list[str] = []
        steered: list[str] = []
        blocked: list[str] = []
        prompts: list[str] = []
        async with Agent.open(
            state, model, admission=Gatekeeper(), tools=lambda header: [Echo()]
        ) as agent:
            session = await agent.new_session(tmp)
            async with anyio.create_task_group() as tg:
                for index, (op, arg) in enumerate(program):
                    if op == "inject":
                        injected.append(f"ctx-{index}")
                        await session.inject(f"ctx-{index}")
                    elif op == "send":
                        text = f"BLOCK-{index}" if arg else f"prompt-{index}"
                        (blocked if arg else prompts).append(text)
                        pending = await session.send(text)
                        tg.start_soon(pending.outcome)
                    elif op == "steer":
                        placement = await session.steer(f"steer-{index}")
                        # staged steering must land; a steer that became a new prompt is a
                        # prompt like any other and may still be cancelled before its turn
                        (steered if placement is Placement.STEERED else prompts).append(
                            f"steer-{index}"
                        )
                    elif op == "cancel":
                        await session.cancel()
                    else:
                        await anyio.sleep(arg * 0.002)
            await session.when_idle()
            session_id = session.id
        loaded = load_journal(state / "sessions" / session_id / "journal.jsonl")
    assert check(loaded.header, loaded.entries) == []
    events = [entry.event for entry in loaded.entries]
    turns = sum(isinstance(e, TurnStart) for e in events)
    step_starts = sum(isinstance(e, StepStart) for e in events)
    assert step_starts == len(model.requests)  # every model request is one step of a turn
    assert turns == len({r.turn for r in model.requests})  # one model loop per turn
    assert all(r.turn >= 1 for r in model.requests)
    texts = [plain_text(e.content) for e in events if isinstance(e, UserMessage | SteeringMessage)]
    for context in injected:
        assert texts.count(context) == 1, context  # never lost, never duplicated
    for steer in steered:
        assert texts.count(steer) == 1, steer
    for prompt in blocked:
        assert prompt not in texts  # a blocked prompt wrote nothing
    for prompt in prompts:
        assert texts.count(prompt) <= 1, prompt  # admitted once, or cancelled before its turn
    kinds = {source_kind(e.source) for e in events if isinstance(e, UserMessage)}
    assert kinds <= {"user", "plugin"}


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(plan=st.lists(steps, max_size=8), program=st.lists(ops, min_size=1, max_size=14))
def test_random_interleavings_keep_every_rule(
    plan: list[tuple[str, int]], program: list[tuple[str, Any]]
) -> None:
    anyio.run(run_program, plan, program)
