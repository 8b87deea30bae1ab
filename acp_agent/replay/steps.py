"""The client side of a fixture: ``client.jsonl``, one step per line.

Each line is an object with exactly one key, the step's kind::

    {"send": <frame>}                      write one JSON-RPC frame to the agent's stdin
    {"wait": {"response": <id>}}           until the agent answered request <id>
    {"wait": {"update": {...subset}}}      until a session/update whose `update` holds the subset
    {"wait": {"request": "<method>"}}      until the agent sent a request (fs/read_text_file ...)
    {"wait": {"notification": "<method>"}} until the agent sent a notification
    {"wait": {"frame": {...subset}}}       until any frame holds the subset
    {"respond": {"result": ...}}           answer the oldest awaited, unanswered agent request
    {"respond": {"error": {...}}}          ... or fail it
    {"sleep_ms": N}                        pause (avoid: a wait is deterministic, a sleep is not)
    {"restart": {}}                        close stdin, wait for the exit, start a new server
    {"kill": {}}                           SIGKILL the server (a later restart starts a new one)

A wait also takes ``"timeoutMs"`` (default 10 000). A wait claims the frame it matched, so two
identical waits need two matching frames; it looks at every frame of the current server run
not claimed yet, including those written before the wait began. A subset matches when every
key it names is present with a matching value (objects recursively; lists element by element,
same length; anything else by equality).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeAlias

Json: TypeAlias = Any
"""A decoded JSON value: frames are open-ended, so the replay layer keeps them as JSON."""

DEFAULT_WAIT_MS = 10_000


class StepError(ValueError):
    """A line of ``client.jsonl`` is not a valid step."""


class StepKind(StrEnum):
    SEND = "send"
    WAIT = "wait"
    RESPOND = "respond"
    SLEEP_MS = "sleep_ms"
    RESTART = "restart"
    KILL = "kill"


class WaitKind(StrEnum):
    RESPONSE = "response"
    UPDATE = "update"
    REQUEST = "request"
    NOTIFICATION = "notification"
    FRAME = "frame"


@dataclass(frozen=True)
class Send:
    frame: Json


@dataclass(frozen=True)
class Wait:
    kind: WaitKind
    target: Json
    timeout_ms: int = DEFAULT_WAIT_MS

    def describe(self) -> str:
        return f"{self.kind} {_short(self.target)}"

    def matches(self, frame: Json) -> bool:
        if not isinstance(frame, dict):
            return False
        match self.kind:
            case WaitKind.RESPONSE:
                return "method" not in frame and frame.get("id") == self.target
            case WaitKind.UPDATE:
                update = frame.get("params", {}).get("update") if _is_update(frame) else None
                return update is not None and subset_matches(self.target, update)
            case WaitKind.REQUEST:
                return "id" in frame and frame.get("method") == self.target
            case WaitKind.NOTIFICATION:
                return "id" not in frame and frame.get("method") == self.target
            case WaitKind.FRAME:
                return subset_matches(self.target, frame)


@dataclass(frozen=True)
class Respond:
    reply: Mapping[str, Json]
    """``{"result": ...}`` or ``{"error": ...}``."""


@dataclass(frozen=True)
class Sleep:
    ms: int


@dataclass(frozen=True)
class Restart:
    pass


@dataclass(frozen=True)
class Kill:
    pass


Step = Send | Wait | Respond | Sleep | Restart | Kill


def parse_step(line: Json, where: str) -> Step:
    """One decoded ``client.jsonl`` line as a step; ``StepError`` names ``where`` otherwise."""
    if not isinstance(line, dict) or len(line) != 1:
        raise StepError(f"{where}: a step is an object with exactly one key, got {_short(line)}")
    [(key, value)] = line.items()
    try:
        kind = StepKind(key)
    except ValueError:
        known = ", ".join(kind.value for kind in StepKind)
        raise StepError(f"{where}: unknown step {key!r} (one of {known})") from None
    match kind:
        case StepKind.SEND:
            if not isinstance(value, dict):
                raise StepError(f"{where}: send takes a JSON-RPC frame object")
            return Send(value)
        case StepKind.WAIT:
            return _parse_wait(value, where)
        case StepKind.RESPOND:
            if not isinstance(value, dict) or len({"result", "error"} & value.keys()) != 1:
                raise StepError(f"{where}: respond takes {{'result': ...}} or {{'error': ...}}")
            return Respond(value)
        case StepKind.SLEEP_MS:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise StepError(f"{where}: sleep_ms takes a non-negative integer")
            return Sleep(value)
        case StepKind.RESTART:
            return Restart()
        case StepKind.KILL:
            return Kill()


def _parse_wait(value: Json, where: str) -> Wait:
    if not isinstance(value, dict):
        raise StepError(f"{where}: wait takes an object such as {{'response': 3}}")
    options = dict(value)
    timeout = options.pop("timeoutMs", DEFAULT_WAIT_MS)
    if len(options) != 1 or not isinstance(timeout, int):
        raise StepError(f"{where}: wait names exactly one of {', '.join(WaitKind)}")
    [(key, target)] = options.items()
    try:
        kind = WaitKind(key)
    except ValueError:
        raise StepError(f"{where}: unknown wait {key!r} (one of {', '.join(WaitKind)})") from None
    if kind in (WaitKind.REQUEST, WaitKind.NOTIFICATION) and not isinstance(target, str):
        raise StepError(f"{where}: wait {kind} takes a method name")
    if kind in (WaitKind.UPDATE, WaitKind.FRAME) and not isinstance(target, dict):
        raise StepError(f"{where}: wait {kind} takes an object (a subset to match)")
    return Wait(kind, target, timeout)


def subset_matches(subset: Json, value: Json) -> bool:
    if isinstance(subset, dict):
        return isinstance(value, dict) and all(
            key in value and subset_matches(item, value[key]) for key, item in subset.items()
        )
    if isinstance(subset, list):
        return (
            isinstance(value, list)
            and len(subset) == len(value)
            and all(subset_matches(a, b) for a, b in zip(subset, value, strict=True))
        )
    return bool(subset == value) and type(subset) is type(value)


def _is_update(frame: dict[str, Json]) -> bool:
    return frame.get("method") == "session/update" and "id" not in frame


def _short(value: Json, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."
