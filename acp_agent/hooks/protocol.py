"""The command-hook wire format: what a hook reads on stdin and what its stdout may say.

stdin is one JSON object (then a newline)::

    {"hook": "prompt_submit", "sessionId", "cwd", "prompt": ContentBlock[]}
    {"hook": "pre_tool",  "sessionId", "cwd", "toolCall": {"id", "name", "arguments"}}
    {"hook": "post_tool", "sessionId", "cwd", "toolCall": {...}, "result": {"content", "isError"}}

stdout (exit status 0) is read as follows — this is the complete accepted dialect:

- empty or only whitespace: allow, unchanged.
- text whose first non-blank character is not ``{``: for ``prompt_submit`` it is one additional
  context (one text block, trailing whitespace removed — what Claude Code does for
  ``UserPromptSubmit``); for tool hooks it is a failure.
- otherwise it must be one JSON object (anything else is a failure) with these members, all
  optional; unknown members are ignored (Claude Code's ``suppressOutput``, ``systemMessage`` …):
    - ``decision``: ``"allow"`` | ``"approve"`` (allow) | ``"block"``; ``reason``: the block reason.
    - ``continue: false`` (Claude Code): block with ``stopReason`` (else ``reason``).
    - ``content``: ContentBlock[], replaces the prompt (``prompt_submit`` only; from a tool hook it
      is a failure).
    - ``additionalContexts``: ``[{"content": ContentBlock[] | str, "source"?: {"kind", ...}}]``;
      a string becomes one text block; a ``source`` is kept exactly as given, else the hook's
      default source applies.
    - ``hookSpecificOutput`` (Claude Code): ``additionalContext`` (a string → one more context,
      after ``additionalContexts``); ``permissionDecision`` ``"deny"`` blocks a ``pre_tool`` call
      with ``permissionDecisionReason`` (``"allow"`` and ``"ask"`` allow; other hook kinds ignore
      it); ``hookEventName`` is not checked; ``updatedInput`` is not supported and is a failure
      (silently running the tool with the unmodified input would be worse).
  Any block signal wins over any allow signal. A block with no reason gets one naming the hook.
  Contexts with empty content (``""`` or ``[]``) are dropped.

Exit status 2 blocks with stderr as the reason (stdout ignored); see ``command.py`` for the rest.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from acp_agent.content import ContentBlock, TextContent
from acp_agent.hooks.decisions import PromptAllow, PromptBlock, PromptDecision
from acp_agent.hooks.kinds import HookKind
from acp_agent.hooks.waterfall import HookFailure, PromptEvent, ToolEvent
from acp_agent.journal.events import Source
from acp_agent.turn.admission import AdditionalContext

# -- stdin --------------------------------------------------------------------------------


class WireToolCall(msgspec.Struct, frozen=True):
    id: str
    name: str
    arguments: dict[str, object]


class WireToolResult(msgspec.Struct, frozen=True, rename={"is_error": "isError"}):
    content: list[ContentBlock]
    is_error: bool


class HookInput(msgspec.Struct, frozen=True, omit_defaults=True, rename="camel"):
    hook: HookKind
    session_id: str
    cwd: str
    prompt: list[ContentBlock] | None = None
    tool_call: WireToolCall | None = None
    result: WireToolResult | None = None


_encoder = msgspec.json.Encoder()


def prompt_input(event: PromptEvent) -> bytes:
    message = HookInput(HookKind.PROMPT_SUBMIT, event.session_id, event.cwd, prompt=event.content)
    return _encoder.encode(message) + b"\n"


def tool_input(kind: HookKind, event: ToolEvent) -> bytes:
    call = WireToolCall(event.call.id, event.call.name, event.call.arguments)
    view = event.result
    result = None if view is None else WireToolResult(view.content, view.is_error)
    return (
        _encoder.encode(HookInput(kind, event.session_id, event.cwd, tool_call=call, result=result))
        + b"\n"
    )


# -- stdout -------------------------------------------------------------------------------


class _Context(msgspec.Struct, frozen=True):
    content: list[ContentBlock] | str
    source: dict[str, object] | None = None


class _HookSpecific(msgspec.Struct, frozen=True, rename="camel"):
    hook_event_name: str | None = None
    additional_context: str | None = None
    permission_decision: Literal["allow", "deny", "ask"] | None = None
    permission_decision_reason: str | None = None
    updated_input: dict[str, object] | None = None


class _Answer(msgspec.Struct, frozen=True, rename="camel"):
    decision: Literal["allow", "approve", "block"] | None = None
    reason: str | None = None
    content: list[ContentBlock] | None = None
    additional_contexts: list[_Context] | None = None
    continue_: bool = msgspec.field(default=True, name="continue")
    stop_reason: str | None = None
    hook_specific_output: _HookSpecific | None = None


_decoder = msgspec.json.Decoder(_Answer)


HookOutput = _Answer
"""What a hook may print on stdout (its JSON form); ``schemas/hook-output.schema.json``."""


def parse_answer(kind: HookKind, stdout: bytes, source: Source, label: str) -> PromptDecision:
    """Interpret an exit-0 stdout. ``source`` is the default for contexts; ``label`` names the
    hook in a reason-less block. Raises ``HookFailure`` for anything outside the dialect."""
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HookFailure(f"stdout is not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
    body = text.strip()
    if not body:
        return PromptAllow()
    if not body.startswith("{"):
        if kind is HookKind.PROMPT_SUBMIT:
            return PromptAllow(additional_contexts=(_text_context(text.rstrip(), source),))
        raise HookFailure(f"stdout is not a JSON object: {_preview(body)}")
    try:
        answer = _decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise HookFailure(f"invalid answer on stdout: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise HookFailure(f"stdout is not valid JSON ({exc}): {_preview(body)}") from exc
    return _interpret(kind, answer, source, label)


def _interpret(kind: HookKind, answer: _Answer, source: Source, label: str) -> PromptDecision:
    reason = _block_reason(kind, answer)
    if reason is not None:
        return PromptBlock(reason or f"blocked by {kind} hook {label!r}")
    specific = answer.hook_specific_output
    if answer.content is not None and kind is not HookKind.PROMPT_SUBMIT:
        raise HookFailure(f"`content` (a prompt replacement) is not accepted from a {kind} hook")
    if specific is not None and specific.updated_input is not None:
        raise HookFailure("`hookSpecificOutput.updatedInput` is not supported")
    contexts = [
        _context(item, source, i) for i, item in enumerate(answer.additional_contexts or ())
    ]
    if specific is not None and specific.additional_context:
        contexts.append(_text_context(specific.additional_context, source))
    return PromptAllow(answer.content, tuple(c for c in contexts if c.content))


def _block_reason(kind: HookKind, answer: _Answer) -> str | None:
    """The reason if the answer blocks (possibly empty), else ``None``."""
    specific = answer.hook_specific_output
    if not answer.continue_:
        return answer.stop_reason or answer.reason or ""
    if answer.decision == "block":
        return answer.reason or ""
    if kind is HookKind.PRE_TOOL and specific and specific.permission_decision == "deny":
        return specific.permission_decision_reason or answer.reason or ""
    return None


def _context(item: _Context, default: Source, index: int) -> AdditionalContext:
    if item.source is not None and not isinstance(item.source.get("kind"), str):
        raise HookFailure(f"`additionalContexts[{index}].source` has no string `kind`")
    source = item.source if item.source is not None else default
    if isinstance(item.content, str):
        return _text_context(item.content, source)
    return AdditionalContext(item.content, source)


def _text_context(value: str, source: Source) -> AdditionalContext:
    return AdditionalContext([TextContent(text=value)] if value else [], source)


def _preview(text: str, limit: int = 200) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")
