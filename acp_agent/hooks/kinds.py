"""The two small vocabularies every hook module shares: which extension point, and what a
failing hook does."""

from __future__ import annotations

from enum import StrEnum


class HookKind(StrEnum):
    """An extension point. The value is the config table name and the stdin ``"hook"`` field."""

    PROMPT_SUBMIT = "prompt_submit"
    PRE_TOOL = "pre_tool"
    POST_TOOL = "post_tool"


class FailPolicy(StrEnum):
    """What a *failed* hook (it raised, timed out, crashed, answered garbage) means.

    ``open``: as if the hook had allowed without changing anything (the failure is logged).
    ``closed``: the operation is blocked with a reason naming the hook and the failure.
    """

    OPEN = "open"
    CLOSED = "closed"
