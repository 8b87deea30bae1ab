"""Derivation after a compaction, and where a compaction cuts (pure functions, no actor)."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings, strategies as st

from acp_agent.commands.words import compact_instructions
from acp_agent.content import ContentBlock, ImageContent, TextContent
from acp_agent.journal.events import (
    Compaction,
    CompactionReason,
    Entry,
    Event,
    SourceKind,
    TurnStart,
    source,
)
from acp_agent.model.base import AssistantTurn, ModelMessage, UserTurn
from acp_agent.turn.compaction import (
    CompactionPlan,
    estimate_tokens,
    plan_compaction,
    summary_request,
    window_neared,
)
from acp_agent.turn.history import History, derive_messages, messages_of
from tests.journal.builders import blocks, numbered, simple_turn, tool_turn, user

BIG = 1_000_000


def compaction(kept_from: int, text: str = "the summary", id_: str = "k1") -> Compaction:
    return Compaction(id_, blocks(text), kept_from - 1, kept_from, CompactionReason.MANUAL)


def texts(messages: list[ModelMessage]) -> list[str]:
    """One line per message: role, source kind (user role) and text."""
    lines = []
    for message in messages:
        if isinstance(message, UserTurn):
            body = "".join(b.text for b in message.content if isinstance(b, TextContent))
            lines.append(f"user/{message.source['kind']}: {body}")
        else:
            lines.append("assistant" if isinstance(message, AssistantTurn) else "tool")
    return lines


def injected(text: str) -> Event:
    return user(text, kind=SourceKind.CLIENT)


# -- derive_messages -------------------------------------------------------------------------------


def test_without_a_compaction_every_message_is_derived() -> None:
    entries = numbered([*simple_turn(1, "a"), injected("ctx"), *simple_turn(2, "b")])
    assert texts(derive_messages(entries)) == [
        "user/user: a",
        "assistant",
        "user/client: ctx",
        "user/user: b",
        "assistant",
    ]


def test_the_summary_then_everything_from_the_cut() -> None:
    # turn 1: seqs 1-6, turn 2: 7-12, compaction at 13 keeping from 7, turn 3: 14-19
    events = [*simple_turn(1, "a"), *simple_turn(2, "b"), compaction(7), *simple_turn(3, "c")]
    entries = numbered(events)
    messages = derive_messages(entries)
    assert texts(messages) == [
        "user/compaction: the summary",
        "user/user: b",
        "assistant",
        "user/user: c",
        "assistant",
    ]
    assert messages[0] == UserTurn(
        blocks("the summary"), {"kind": "compaction", "id": "k1", "seq": 13}
    )


def test_out_of_turn_messages_follow_the_same_rule_as_any_message() -> None:
    events = [
        *simple_turn(1, "a"),  # 1-6
        injected("old ctx"),  # 7: before the cut -> summarized
        *simple_turn(2, "b"),  # 8-13
        injected("new ctx"),  # 14: after the cut, before the compaction -> kept verbatim
        compaction(8),  # 15
        injected("later ctx"),  # 16: after the compaction -> kept
    ]
    assert texts(derive_messages(numbered(events))) == [
        "user/compaction: the summary",
        "user/user: b",
        "assistant",
        "user/client: new ctx",
        "user/client: later ctx",
    ]


def test_only_the_last_compaction_counts() -> None:
    events = [
        *simple_turn(1, "a"),  # 1-6
        *simple_turn(2, "b"),  # 7-12
        compaction(7, "first", "k1"),  # 13
        *simple_turn(3, "c"),  # 14-19
        compaction(14, "second", "k2"),  # 20: summarized the first summary + turn 2
        *simple_turn(4, "d"),  # 21-26
    ]
    assert texts(derive_messages(numbered(events))) == [
        "user/compaction: second",
        "user/user: c",
        "assistant",
        "user/user: d",
        "assistant",
    ]


def test_a_compaction_summarizing_everything_leaves_the_summary_alone() -> None:
    assert texts(derive_messages(numbered([*simple_turn(1, "a"), compaction(7)]))) == [
        "user/compaction: the summary"
    ]


# -- plan_compaction ---------------------------------------------------------------------------------


def test_the_last_turn_is_kept_and_the_rest_summarized() -> None:
    entries = numbered([*simple_turn(1, "a"), *tool_turn(2, ["x"]), *simple_turn(3, "c")])
    plan = plan_compaction(entries, keep_tokens=BIG)
    assert plan is not None
    cut = next(e.seq for e in entries if e.event == TurnStart(3))
    assert (plan.through_seq, plan.kept_from_seq) == (cut - 1, cut)
    assert plan.messages == messages_of(e for e in entries if e.seq < cut)
    assert texts(plan.messages) == [
        "user/user: a",
        "assistant",
        "user/user: prompt 2",
        "assistant",
        "tool",
        "assistant",
    ]


def test_a_cut_never_parts_a_tool_call_from_its_result() -> None:
    entries = numbered([*tool_turn(1, ["x", "y"]), *tool_turn(2, ["z"])])
    plan = plan_compaction(entries, keep_tokens=BIG)
    assert plan is not None
    assert entries[plan.kept_from_seq - 1].event == TurnStart(2)


def test_trailing_out_of_turn_messages_are_kept_with_the_last_turn() -> None:
    entries = numbered([*simple_turn(1, "a"), *simple_turn(2, "b"), injected("x"), injected("y")])
    plan = plan_compaction(entries, keep_tokens=BIG)
    assert plan is not None
    assert plan.kept_from_seq == 7  # turn 2 and both injections stay verbatim
    assert texts(plan.messages) == ["user/user: a", "assistant"]


def test_a_single_turn_is_summarized_whole() -> None:
    entries = numbered(simple_turn(1, "a"))
    plan = plan_compaction(entries, keep_tokens=BIG)
    assert plan == CompactionPlan(messages_of(entries), kept_from_seq=7)


def test_a_single_turn_is_kept_when_older_messages_can_be_summarized() -> None:
    entries = numbered([injected("ctx"), *simple_turn(1, "a")])
    plan = plan_compaction(entries, keep_tokens=BIG)
    assert plan == CompactionPlan(messages_of(entries[:1]), kept_from_seq=2)


def test_nothing_to_summarize() -> None:
    assert plan_compaction([], keep_tokens=BIG) is None
    summarized = numbered([*simple_turn(1, "a"), compaction(7)])
    assert plan_compaction(summarized, keep_tokens=BIG) is None


def test_a_last_turn_too_big_to_keep_is_summarized_too() -> None:
    entries = numbered([*simple_turn(1, "a"), *simple_turn(2, "b" * 4000)])
    plan = plan_compaction(entries, keep_tokens=500)
    assert plan is not None
    assert plan.kept_from_seq == 13  # the end: nothing kept verbatim


def test_a_second_compaction_summarizes_the_first_summary_and_what_followed() -> None:
    events = [*simple_turn(1, "a"), *simple_turn(2, "b"), compaction(7), *simple_turn(3, "c")]
    entries = numbered(events)
    plan = plan_compaction(entries, keep_tokens=BIG)
    assert plan is not None
    assert plan.kept_from_seq == 14
    assert texts(plan.messages) == ["user/compaction: the summary", "user/user: b", "assistant"]


def test_the_summary_request_is_no_turn_and_offers_no_tools() -> None:
    plan = CompactionPlan([UserTurn(blocks("a"), source(SourceKind.USER))], kept_from_seq=3)
    request = summary_request("s1", plan, "keep names")
    assert (request.turn, request.step, request.tools) == (0, 0, [])
    assert request.messages[:-1] == plan.messages
    ask = request.messages[-1]
    assert isinstance(ask, UserTurn)
    assert ask.source == {"kind": "compaction", "instruction": True}
    assert "keep names" in texts([ask])[0]


# -- the command and sizes ----------------------------------------------------------------------


def test_parse_compact() -> None:
    def parse(*parts: str) -> str | None:
        content: list[ContentBlock] = [TextContent(text=p) for p in parts]
        return compact_instructions(content)

    assert parse("/compact") == ""
    assert parse("  /compact \n") == ""
    assert parse("/compact keep the API names") == "keep the API names"
    assert parse("/compact\nfocus on tests") == "focus on tests"
    assert parse("/compact", " now") == "now"
    assert parse("/compacting") is None
    assert parse("please /compact") is None
    assert parse("/other") is None
    assert compact_instructions([]) is None
    assert (
        compact_instructions([TextContent(text="/compact"), ImageContent("AA==", "image/png")])
        is None
    )


def test_size_estimate_is_json_characters_over_four() -> None:
    messages: list[ModelMessage] = [UserTurn(blocks("x" * 400), source(SourceKind.USER))]
    tokens = estimate_tokens(messages)
    assert 100 < tokens < 130
    assert window_neared(estimate_tokens(messages), context_window=tokens)  # 100% > 80%
    assert not window_neared(estimate_tokens(messages), context_window=2 * tokens)


# -- History: the incremental derivation -----------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_incremental_history_equals_derive_messages_at_every_request(
    data: st.DataObject,
) -> None:
    """Random growth of a session (turns with and without tools, injections, compactions that
    cut anywhere back), asked for its messages at random moments, as the actor does."""
    entries: list[Entry] = []
    history = History()
    for turn in range(1, data.draw(st.integers(1, 8)) + 1):
        kind = data.draw(st.sampled_from(["simple", "tools", "inject", "compact"]))
        if kind == "simple":
            events: list[Event] = simple_turn(turn, f"p{turn}")
        elif kind == "tools":
            events = tool_turn(turn, [f"c{turn}a", f"c{turn}b"])
        elif kind == "inject":
            events = [injected(f"ctx{turn}")]
        else:
            last = entries[-1].seq if entries else 0
            events = [compaction(data.draw(st.integers(1, last + 1)), f"sum{turn}", f"k{turn}")]
        for event in events:
            entries.extend(numbered([event], first_seq=len(entries) + 1))
            if data.draw(st.booleans()):
                assert history.messages(entries) == derive_messages(entries)
            if data.draw(st.booleans()):  # the admission's size check, as the actor asks it
                more = data.draw(st.sampled_from([[], [admitted], [admitted, admitted]]))
                whole = msgspec.json.encode(derive_messages(entries) + more)
                assert history.json_chars(entries, more) == len(whole)
    assert history.messages(entries) == derive_messages(entries)
    assert history.json_chars(entries) == len(msgspec.json.encode(derive_messages(entries)))


admitted = UserTurn(blocks('a prompt with "quotes", \\ and ünïcode'), source(SourceKind.USER))


def test_a_replaced_entry_list_is_derived_again() -> None:
    history = History()
    first = numbered([*simple_turn(1, "a"), injected("ctx")])
    assert texts(history.messages(first)) == ["user/user: a", "assistant", "user/client: ctx"]
    other = numbered([*simple_turn(1, "b"), injected("x"), injected("y")])  # longer, not grown
    assert history.messages(other) == derive_messages(other)
    assert history.messages(other[:2]) == derive_messages(other[:2])
