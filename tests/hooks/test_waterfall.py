"""Listener chains with next(): what survives, what a block discards, what a failure means."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from acp_agent.content import ContentBlock, TextContent
from acp_agent.hooks import (
    AdditionalContext,
    FailPolicy,
    HookFailure,
    PromptAllow,
    PromptBlock,
    PromptDecision,
    PromptEvent,
    PromptListener,
    PromptNext,
    Registration,
    ToolAllow,
    ToolBlock,
    ToolEvent,
    ToolListener,
    ToolNext,
    ToolResultView,
    register,
    run_post_tool_chain,
    run_pre_tool_chain,
    run_prompt_chain,
)
from acp_agent.hooks.waterfall import ToolDecision
from acp_agent.journal.events import ToolCallPart, source
from acp_agent.turn.admission import Allow, Block

EVENT = PromptEvent("s1", "/work", [TextContent(text="hello")])
CALL = ToolCallPart("c1", "read_file", {"path": "x"})


def blocks(text: str) -> list[ContentBlock]:
    return [TextContent(text=text)]


def ctx(text: str, name: str) -> AdditionalContext:
    return AdditionalContext(blocks(text), source("plugin", name=name))


def adds(*contexts: AdditionalContext) -> PromptListener:
    """A well-behaved listener: its own contexts first, then downstream's."""

    async def listener(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        downstream = await next_(event)
        if isinstance(downstream, PromptBlock):
            return downstream
        return PromptAllow(downstream.content, (*contexts, *downstream.additional_contexts))

    return listener


def replaces(text: str) -> PromptListener:
    async def listener(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        return await next_(PromptEvent(event.session_id, event.cwd, blocks(text)))

    return listener


async def passes(event: PromptEvent, next_: PromptNext) -> PromptDecision:
    return await next_(event)


async def blocks_prompt(event: PromptEvent, next_: PromptNext) -> PromptDecision:
    return PromptBlock("no way")


async def raises(event: PromptEvent, next_: PromptNext) -> PromptDecision:
    raise ValueError("boom")


async def test_empty_chain_allows_unchanged() -> None:
    assert await run_prompt_chain([], EVENT) == Allow(EVENT.content)


async def test_pass_through_keeps_downstream_content_and_contexts() -> None:
    chain = [passes, replaces("rewritten"), adds(ctx("a", "down"))]
    assert await run_prompt_chain(chain, EVENT) == Allow(blocks("rewritten"), (ctx("a", "down"),))


async def test_allow_with_none_content_means_the_prompt_this_listener_saw() -> None:
    async def allow_plain(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        return PromptAllow(additional_contexts=(ctx("mine", "a"),))

    assert await run_prompt_chain([allow_plain], EVENT) == Allow(EVENT.content, (ctx("mine", "a"),))


async def test_next_results_carry_concrete_content() -> None:
    seen: list[PromptDecision] = []

    async def spy(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        seen.append(await next_(PromptEvent("s1", "/work", blocks("changed"))))
        return seen[-1]

    async def allow_plain(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        return PromptAllow()

    await run_prompt_chain([spy, allow_plain], EVENT)
    assert seen == [PromptAllow(blocks("changed"))]


async def test_deliberate_replacement_wins_over_downstream() -> None:
    async def replace_all(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        await next_(event)
        return PromptAllow(blocks("mine"), (ctx("only", "up"),))

    chain = [replace_all, replaces("theirs"), adds(ctx("dropped", "down"))]
    assert await run_prompt_chain(chain, EVENT) == Allow(blocks("mine"), (ctx("only", "up"),))


async def test_contexts_keep_fifo_chain_order_and_their_own_sources() -> None:
    first, second, third = ctx("1", "first"), ctx("2", "second"), ctx("3", "third")
    chain = [adds(first), adds(second, third)]
    result = await run_prompt_chain(chain, EVENT)
    assert isinstance(result, Allow)
    assert result.additional_contexts == (first, second, third)
    assert [c.source["name"] for c in result.additional_contexts] == ["first", "second", "third"]


async def test_a_block_anywhere_discards_everything() -> None:
    chain = [adds(ctx("up", "a")), replaces("x"), adds(ctx("mid", "b")), blocks_prompt]
    assert await run_prompt_chain(chain, EVENT) == Block("no way")


async def test_an_upstream_listener_cannot_unblock_downstream() -> None:
    async def overrides(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        await next_(event)
        return PromptAllow(additional_contexts=(ctx("sneaky", "a"),))

    assert await run_prompt_chain([overrides, blocks_prompt], EVENT) == Block("no way")


async def test_a_block_short_circuits_downstream() -> None:
    ran: list[str] = []

    async def records(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        ran.append("downstream")
        return await next_(event)

    assert await run_prompt_chain([blocks_prompt, records], EVENT) == Block("no way")
    assert ran == []


async def test_fail_open_before_next_skips_the_listener_and_logs() -> None:
    chain = [adds(ctx("a", "a")), raises, adds(ctx("c", "c"))]
    with capture_logs() as logs:
        result = await run_prompt_chain(chain, EVENT)
    assert result == Allow(EVENT.content, (ctx("a", "a"), ctx("c", "c")))
    failed = [e for e in logs if e["event"] == "hook_failed"]
    assert len(failed) == 1
    assert failed[0]["hook"] == "prompt_submit"
    assert failed[0]["fail"] == "open"
    assert "ValueError: boom" in failed[0]["error"]


async def test_fail_open_after_next_keeps_downstream_once() -> None:
    calls: list[str] = []

    async def counted(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        calls.append("down")
        return PromptAllow(blocks("down"), (ctx("d", "d"),))

    async def raises_late(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        await next_(event)
        raise RuntimeError("late")

    with capture_logs():
        result = await run_prompt_chain([raises_late, counted], EVENT)
    assert result == Allow(blocks("down"), (ctx("d", "d"),))
    assert calls == ["down"]


async def test_fail_closed_blocks_with_a_reason_naming_the_failure() -> None:
    chain: list[PromptListener | Registration[PromptListener]] = [
        adds(ctx("a", "a")),
        Registration(raises, "guard", FailPolicy.CLOSED),
    ]
    with capture_logs():
        result = await run_prompt_chain(chain, EVENT)
    assert isinstance(result, Block)
    assert "guard" in result.reason
    assert "ValueError: boom" in result.reason


async def test_hook_failure_message_is_used_verbatim() -> None:
    async def clean(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        raise HookFailure("timed out after 10 ms")

    with capture_logs() as logs:
        result = await run_prompt_chain([register(clean, "x", FailPolicy.CLOSED)], EVENT)
    assert result == Block("prompt_submit hook 'x' failed: timed out after 10 ms")
    assert logs[0]["exc_info"] is False


@pytest.mark.parametrize("fail", list(FailPolicy))
async def test_a_wrong_return_type_is_a_failure(fail: FailPolicy) -> None:
    async def wrong(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        return "yes"  # type: ignore[return-value]

    with capture_logs():
        result = await run_prompt_chain([register(wrong, "w", fail)], EVENT)
    assert isinstance(result, Allow if fail is FailPolicy.OPEN else Block)


async def test_calling_next_twice_is_a_failure_and_downstream_runs_once() -> None:
    calls: list[int] = []

    async def counted(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        calls.append(1)
        return await next_(event)

    async def twice(event: PromptEvent, next_: PromptNext) -> PromptDecision:
        await next_(event)
        return await next_(event)

    with capture_logs() as logs:
        assert await run_prompt_chain([twice, counted], EVENT) == Allow(EVENT.content)
    assert calls == [1]
    assert "more than once" in logs[0]["error"]


async def test_register_names_a_listener_by_its_qualname() -> None:
    assert register(raises).name == "raises"


# -- tool chains ---------------------------------------------------------------------------


def tool_adds(*contexts: AdditionalContext) -> ToolListener:
    async def listener(event: ToolEvent, next_: ToolNext) -> ToolDecision:
        downstream = await next_(event)
        if isinstance(downstream, ToolBlock):
            return downstream
        return ToolAllow((*contexts, *downstream.additional_contexts))

    return listener


async def tool_blocks(event: ToolEvent, next_: ToolNext) -> ToolDecision:
    return ToolBlock(f"not {event.call.name}")


async def tool_raises(event: ToolEvent, next_: ToolNext) -> ToolDecision:
    raise OSError("gone")


async def test_pre_tool_chain_fifo_and_block() -> None:
    event = ToolEvent("s1", "/work", CALL)
    allowed = await run_pre_tool_chain([tool_adds(ctx("1", "a")), tool_adds(ctx("2", "b"))], event)
    assert allowed == ToolAllow((ctx("1", "a"), ctx("2", "b")))
    blocked = await run_pre_tool_chain([tool_adds(ctx("1", "a")), tool_blocks], event)
    assert blocked == ToolBlock("not read_file")


async def test_post_tool_chain_sees_the_result_and_follows_fail_policy() -> None:
    seen: list[ToolResultView | None] = []

    async def spy(event: ToolEvent, next_: ToolNext) -> ToolDecision:
        seen.append(event.result)
        return await next_(event)

    event = ToolEvent("s1", "/work", CALL, ToolResultView(blocks("out"), is_error=False))
    with capture_logs() as logs:
        assert await run_post_tool_chain([tool_raises, spy], event) == ToolAllow()
        closed = await run_post_tool_chain(
            [Registration(tool_raises, "t", FailPolicy.CLOSED)], event
        )
    assert seen == [event.result]
    assert closed == ToolBlock("post_tool hook 't' failed: OSError: gone")
    assert logs[0]["hook"] == "post_tool"
