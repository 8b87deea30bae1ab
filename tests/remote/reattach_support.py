"""What a reattaching client does and assembles (docs/contract.md §13), for ``test_reattach.py``.

``assemble`` folds ``session/update``s into what a client shows: the agent's text and thoughts
(consecutive chunks joined, whatever their boundaries: a replay sends a finished message as one
chunk), each tool call by id with its final status and output. Two runs that show the same are
equal, and a duplicated or missing chunk is not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.support import read_call
from tests.remote.support import WsPeer, prompt_params
from tests.support.acp_schema import JsonObject

TEXT_KINDS = ("agent_message_chunk", "agent_thought_chunk")


def seq_of(update: JsonObject) -> int:
    value = update["_meta"]["acp_agent"]["seq"]
    assert isinstance(value, int)
    return value


def ours(update: JsonObject) -> JsonObject:
    meta = update.get("_meta") or {}
    found: JsonObject = meta.get("acp_agent") or {}
    return found


def assemble(updates: list[JsonObject]) -> tuple[list[list[str]], dict[str, tuple[str, str]]]:
    """(text and tool items in order, each tool call's (final status, output text))."""
    items: list[list[str]] = []
    tools: dict[str, tuple[str, str]] = {}
    for update in updates:
        kind = update["sessionUpdate"]
        if kind in TEXT_KINDS and not ({"note", "command"} & ours(update).keys()):
            text = update["content"]["text"]
            if items and items[-1][0] == kind:
                items[-1][1] += text
            else:
                items.append([kind, text])
        elif kind == "tool_call":
            items.append(["tool", update["toolCallId"]])
            tools[update["toolCallId"]] = (update.get("status", "pending"), "")
        elif kind == "tool_call_update":
            status, text = tools.get(update["toolCallId"], ("pending", ""))
            content = update.get("content") or []
            texts = [c["content"]["text"] for c in content if c.get("type") == "content"]
            tools[update["toolCallId"]] = (update.get("status") or status, "".join(texts) or text)
    return items, tools


def long_turn(trial: int) -> list[JsonObject]:
    """One turn of the script model: three steps of streamed chunks, two tool calls."""
    words = [f"w{trial}.{i} " for i in range(40)]
    return [
        {"chunks": words[:12], "delayMs": 2, "toolCalls": [read_call(f"t{trial}a", "notes.txt")]},
        {
            "thought": f"thinking {trial}",
            "chunks": words[12:24],
            "delayMs": 2,
            "toolCalls": [read_call(f"t{trial}b", "notes.txt")],
        },
        {"chunks": words[24:], "delayMs": 2},
    ]


@dataclass
class Collected:
    updates: list[JsonObject] = field(default_factory=list)
    answer: JsonObject | None = None
    ended: JsonObject | None = None
    others: list[JsonObject] = field(default_factory=list)


async def prompt_until(peer: WsPeer, session_id: str, count: int | None) -> Collected:
    """Prompt, then read ``count`` of the turn's updates (``None``: up to the answer); the
    commands a ``session/new`` is followed by are not the turn's."""
    got = Collected()
    request_id = await peer.request("session/prompt", prompt_params(session_id, "go"))
    while count is None or len(got.updates) < count:
        frame = await peer.receive()
        if frame.get("method") == "session/update":
            update = frame["params"]["update"]
            if update["sessionUpdate"] != "available_commands_update":
                got.updates.append(update)
        elif frame.get("id") == request_id:
            got.answer = frame
            break
    return got


async def attach(peer: WsPeer, method: str, session_id: str, cwd: Path, after: int | None) -> Any:
    """``session/load`` or ``session/resume`` (``afterSeq``), then everything up to the
    answer, and (while a turn was running) up to its ``_acp_agent/turn_ended``."""
    params: JsonObject = {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
    if after is not None:
        params["_meta"] = {"acp_agent": {"afterSeq": after}}
    request_id = await peer.request(method, params)
    got = Collected()
    while got.answer is None or (running(got.answer) and got.ended is None):
        frame = await peer.receive()
        if frame.get("method") == "session/update":
            got.updates.append(frame["params"]["update"])
        elif frame.get("method") == "_acp_agent/turn_ended":
            got.ended = frame["params"]
        elif frame.get("id") == request_id:
            got.answer = frame
        else:
            got.others.append(frame)
    return got


def running(answer: JsonObject) -> JsonObject | None:
    meta = answer.get("result", {}).get("_meta") or {}
    found: JsonObject | None = (meta.get("acp_agent") or {}).get("runningTurn")
    return found
