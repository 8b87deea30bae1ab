"""The command-hook dialect, parsed without processes: native answers and Claude Code's."""

from __future__ import annotations

import msgspec
import pytest

from acp_agent.content import EmbeddedResource, ResourceContents, TextContent
from acp_agent.hooks import AdditionalContext, HookFailure, HookKind, PromptAllow, PromptBlock
from acp_agent.hooks.protocol import parse_answer
from acp_agent.journal.events import source

DEFAULT = source("hook", hook="prompt_submit", command="hook.py")
PROMPT, PRE, POST = HookKind.PROMPT_SUBMIT, HookKind.PRE_TOOL, HookKind.POST_TOOL


def parse(stdout: str | bytes, kind: HookKind = PROMPT) -> object:
    data = stdout.encode() if isinstance(stdout, str) else stdout
    return parse_answer(kind, data, DEFAULT, "hook.py")


def text_ctx(value: str, src: dict[str, object] = DEFAULT) -> AdditionalContext:
    return AdditionalContext([TextContent(text=value)], src)


@pytest.mark.parametrize(
    "stdout", ["", "  \n\n", '{"decision": "allow"}', '{"decision": "approve"}']
)
@pytest.mark.parametrize("kind", list(HookKind))
def test_allow_unchanged(stdout: str, kind: HookKind) -> None:
    assert parse(stdout, kind) == PromptAllow()


@pytest.mark.parametrize(
    ("stdout", "reason"),
    [
        ('{"decision": "block", "reason": "nope"}', "nope"),
        ('{"decision": "block"}', "blocked by prompt_submit hook 'hook.py'"),
        ('{"continue": false, "stopReason": "halt"}', "halt"),
        ('{"continue": false, "reason": "fallback"}', "fallback"),
        ('{"decision": "allow", "continue": false, "stopReason": "block wins"}', "block wins"),
    ],
)
def test_block_signals(stdout: str, reason: str) -> None:
    assert parse(stdout) == PromptBlock(reason)


def test_replaced_content_and_contexts_in_order() -> None:
    answer = {
        "content": [{"type": "text", "text": "new prompt"}],
        "additionalContexts": [
            {"content": "as a string"},
            {"content": [{"type": "text", "text": "blocks"}], "source": {"kind": "x-mine", "n": 1}},
        ],
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "last"},
    }
    assert parse(msgspec.json.encode(answer)) == PromptAllow(
        [TextContent(text="new prompt")],
        (
            text_ctx("as a string"),
            text_ctx("blocks", {"kind": "x-mine", "n": 1}),
            text_ctx("last"),
        ),
    )


def test_context_content_blocks_are_decoded_as_acp_blocks() -> None:
    answer = {
        "additionalContexts": [
            {"content": [{"type": "resource", "resource": {"uri": "f", "text": "t"}}]}
        ]
    }
    resource = EmbeddedResource(ResourceContents(uri="f", text="t"))
    assert parse(msgspec.json.encode(answer)) == PromptAllow(
        additional_contexts=(AdditionalContext([resource], DEFAULT),)
    )


def test_empty_contexts_are_dropped() -> None:
    answer = '{"additionalContexts": [{"content": ""}, {"content": []}], "hookSpecificOutput": {"additionalContext": ""}}'
    assert parse(answer) == PromptAllow()


def test_plain_text_is_one_context_for_prompt_submit() -> None:
    assert parse("Today is Tuesday.\n") == PromptAllow(
        additional_contexts=(text_ctx("Today is Tuesday."),)
    )


@pytest.mark.parametrize("kind", [PRE, POST])
def test_plain_text_is_a_failure_for_tool_hooks(kind: HookKind) -> None:
    with pytest.raises(HookFailure, match="not a JSON object"):
        parse("hello", kind)


def test_permission_deny_blocks_pre_tool() -> None:
    answer = '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "secret file"}}'
    assert parse(answer, PRE) == PromptBlock("secret file")


@pytest.mark.parametrize("decision", ["allow", "ask"])
def test_permission_allow_and_ask_allow(decision: str) -> None:
    answer = f'{{"hookSpecificOutput": {{"permissionDecision": "{decision}"}}}}'
    assert parse(answer, PRE) == PromptAllow()


def test_permission_deny_is_ignored_outside_pre_tool() -> None:
    assert parse('{"hookSpecificOutput": {"permissionDecision": "deny"}}', POST) == PromptAllow()


def test_post_tool_additional_context_gets_the_default_source() -> None:
    answer = (
        '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "lint: ok"}}'
    )
    assert parse(answer, POST) == PromptAllow(additional_contexts=(text_ctx("lint: ok"),))


def test_unknown_members_are_ignored() -> None:
    assert parse('{"suppressOutput": true, "systemMessage": "hi", "x": [1]}') == PromptAllow()


@pytest.mark.parametrize(
    ("stdout", "kind", "message"),
    [
        ("{not json", PROMPT, "not valid JSON"),
        ('{"decision": "maybe"}', PROMPT, r"\$\.decision"),
        ('{"reason": 3}', PROMPT, r"\$\.reason"),
        (
            '{"additionalContexts": [{"content": [{"type": "bogus"}]}]}',
            PROMPT,
            "additionalContexts",
        ),
        ('{"additionalContexts": [{"content": "x", "source": {"no": "kind"}}]}', PROMPT, "kind"),
        ('{"content": [{"type": "text", "text": "x"}]}', PRE, "not accepted from a pre_tool hook"),
        ('{"hookSpecificOutput": {"updatedInput": {"path": "y"}}}', PRE, "updatedInput"),
        (b"\xff\xfe", PROMPT, "UTF-8"),
    ],
)
def test_failures(stdout: str | bytes, kind: HookKind, message: str) -> None:
    with pytest.raises(HookFailure, match=message):
        parse(stdout, kind)
