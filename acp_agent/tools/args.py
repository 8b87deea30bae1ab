"""Decoding a tool call's arguments into a typed struct; a mismatch is an error the model sees."""

from __future__ import annotations

from typing import TypeVar

import msgspec

from acp_agent.tools.base import Location, ToolContext, ToolError, shown

T = TypeVar("T")


def parse(arguments: dict[str, object], type_: type[T], tool: str) -> T:
    try:
        return msgspec.convert(arguments, type_)
    except msgspec.ValidationError as exc:
        raise ToolError(f"{tool}: bad arguments: {exc}") from exc


def string(arguments: dict[str, object], name: str) -> str | None:
    value = arguments.get(name)
    return value if isinstance(value, str) else None


def located(
    arguments: dict[str, object],
    ctx: ToolContext,
    name: str = "path",
    default: str | None = None,
) -> list[Location]:
    """The shown location of a path argument (``base.shown``), or none when it is missing or
    outside the roots. ``default``: the path a missing or empty argument stands for (``.`` for
    the tools that search or list a directory)."""
    path = string(arguments, name)
    if default is not None and not path:
        path = default
    where = shown(path, ctx) if path is not None else None
    return [Location(where)] if where is not None else []
