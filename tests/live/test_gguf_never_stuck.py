"""A session on the real ``gguf:`` model (SmolLM2-135M in llama.cpp, in process) is never stuck
(issue 28 point 2), with the text characters ÷ 4 undercounts: CSV numbers, hex, JSON log lines
and Chinese. The Python API (``acp_agent.api.Agent``) drives the real session layer and the
real provider; only the window is made small (2,048 tokens) so that each request is cheap.

What is asserted is what the agent does — a refused request teaches the session the real count,
the next prompts fit, a tool loop that outgrew the window goes on, a broken tool call goes back
to the model — never what the 135M model says."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.api import Agent
from acp_agent.journal.events import ToolResult, TurnEnd
from acp_agent.model.gguf import GgufModel, GgufSettings
from acp_agent.tools.base import ToolContext, ToolOutput
from acp_agent.tools.read_file import ReadFile
from acp_agent.turn.vocabulary import Finished, StopReason
from tests.live.conftest import record_timing
from tests.model.undercounted import KINDS

pytestmark = [pytest.mark.live, pytest.mark.timeout(600)]

WINDOW = 2048
TOOLS_TEMPLATE = Path(__file__).with_name("chatml_tools.jinja")
SIZES = {"csv": 5000, "hex": 5000, "json-logs": 5000, "chinese": 1500}
"""Characters: under the window by chars ÷ 4, over it by llama.cpp's count."""
BRIEF = "You are a helpful assistant. Keep every answer to one line."


def model(path: Path, output: int = 32, **settings: object) -> GgufModel:
    chosen = GgufSettings(context_window=WINDOW, max_output_tokens=output, **settings)  # type: ignore[arg-type]
    return GgufModel(path, chosen)


def answered(outcome: object) -> bool:
    return isinstance(outcome, Finished) and outcome.stop in (
        StopReason.END_TURN,
        StopReason.MAX_TOKENS,
    )


@pytest.mark.parametrize("kind", list(SIZES))
async def test_an_undercounted_prompt_teaches_the_count_and_the_next_prompts_fit(
    kind: str, smollm2: Path, tmp_path: Path
) -> None:
    gguf = model(smollm2)
    try:
        async with Agent.open(tmp_path / "state", gguf) as agent:
            session = await agent.new_session(tmp_path)
            first = await (await session.send(f"Look:\n{KINDS[kind](SIZES[kind])}")).outcome()
            taught = session.actor.learned
            later = [await (await session.send(text)).outcome() for text in ("Say hi.", "Bye.")]
    finally:
        await gguf.aclose()
    record_timing(f"never_stuck_{kind}", ratio=taught.token_ratio or 0.0)
    assert not answered(first), "llama.cpp counted the prompt over the window"
    assert taught.token_ratio is not None and taught.token_ratio > 1.2, taught
    assert all(answered(outcome) for outcome in later), later


class ReadsTheBigFile(ReadFile):
    """The real ``read_file``, whatever path the 135M model names: always ``big.csv`` (64 KiB),
    so the tool loop outgrows the window on its first result."""

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        return await super().run({"path": "big.csv"}, ctx)


async def test_a_64_kib_tool_result_is_trimmed_and_the_loop_goes_on(
    smollm2: Path, tmp_path: Path
) -> None:
    (tmp_path / "big.csv").write_text(KINDS["csv"](64 * 1024))
    gguf = model(smollm2, 96, chat_template=TOOLS_TEMPLATE, tool_choice="required")
    try:
        async with Agent.open(
            tmp_path / "state", gguf, tools=lambda _: [ReadsTheBigFile()], max_steps=3
        ) as agent:
            session = await agent.new_session(tmp_path)
            outcome = await (await session.send("Call read_file to read big.csv.")).outcome()
            entries = session.entries
    finally:
        await gguf.aclose()
    results = [e.event for e in entries if isinstance(e.event, ToolResult)]
    assert len(results) >= 2, (outcome, [type(e.event).__name__ for e in entries])
    (end,) = [e.event for e in entries if isinstance(e.event, TurnEnd)]
    assert "context window" not in str(end), end  # the steps ran out, not the window
    assert max(len(str(r.content)) for r in results) > 40_000  # the journal keeps it whole


async def test_tool_call_json_cut_off_goes_back_to_the_model_as_a_failed_result(
    smollm2: Path, tmp_path: Path
) -> None:
    """Arguments cut off by the output bound (24 tokens: inside the arguments) are no JSON
    object: the model is told so in a failed tool result and asked again, the turn does not
    fail."""
    gguf = model(smollm2, 24, chat_template=TOOLS_TEMPLATE, tool_choice="required")
    try:
        async with Agent.open(tmp_path / "state", gguf, max_steps=2) as agent:
            session = await agent.new_session(tmp_path)
            outcome = await (await session.send("Call read_file to read a.txt.")).outcome()
            entries = session.entries
    finally:
        await gguf.aclose()
    results = [e.event for e in entries if isinstance(e.event, ToolResult)]
    told = [r for r in results if "not a JSON object" in str(r.content)]
    assert told and told[0].is_error, (outcome, results)


@pytest.mark.parametrize("window", [4096, 8192])
async def test_the_first_request_of_a_small_window_is_at_most_15_percent_of_it(
    window: int, smollm2: Path, tmp_path: Path
) -> None:
    """As llama.cpp counts it (its ``usage``), with the coding tools and the built-in prompt,
    the tools rendered (``chatml_tools.jinja``: SmolLM2's own template drops them)."""
    from acp_agent.tools.registry import coding_tools

    chosen = GgufSettings(
        context_window=window,
        max_output_tokens=96,
        chat_template=TOOLS_TEMPLATE,
        tool_choice="required",  # the template's grammar: a well-formed call, one step
    )
    gguf = GgufModel(smollm2, chosen)
    try:
        async with Agent.open(
            tmp_path / "state", gguf, tools=lambda _: coding_tools(), max_steps=1
        ) as agent:
            session = await agent.new_session(tmp_path)
            outcome = await (await session.send("Read notes.txt.")).outcome()
    finally:
        await gguf.aclose()
    assert isinstance(outcome, Finished) and outcome.usage is not None, outcome
    record_timing(f"first_request_{window}", prompt_tokens=outcome.usage.input_tokens)
    assert outcome.usage.input_tokens <= 0.15 * window, outcome.usage
