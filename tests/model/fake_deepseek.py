"""A fake DeepSeek on 127.0.0.1: the loopback server, plus DeepSeek's thinking-mode check.

DeepSeek's thinking mode ("Thinking Mode" guide, "Tool Calls":
https://api-docs.deepseek.com/guides/thinking_mode) wants every assistant message that made
tool calls back with its ``reasoning_content`` in all later requests, "otherwise the API will
return a 400 error". This server answers exactly that 400, with DeepSeek's own body (as its
users quote it: github.com/dataelement/Clawith#570, github.com/endolith/open-interpreter#215),
whenever an assistant message with ``tool_calls`` lacks ``reasoning_content``; otherwise it
plays the next scripted reply, like ``LoopbackServer``.

``deepseek_stream`` writes a reply in DeepSeek's streamed shape (create-chat-completion:
``reasoning_content`` deltas, then ``content`` or ``tool_calls``, usage on the finish chunk).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.model.loopback import LoopbackServer, Received, Reply, serving

MISSING_REASONING = {
    "error": {
        "message": "The `reasoning_content` in the thinking mode must be passed back to the API.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }
}


def lacks_reasoning(body: dict[str, Any]) -> bool:
    """An assistant message with tool calls and no ``reasoning_content`` (absent or null)."""
    return any(
        message.get("role") == "assistant"
        and message.get("tool_calls")
        and message.get("reasoning_content") is None
        for message in body.get("messages", [])
    )


@dataclass
class FakeDeepSeek(LoopbackServer):
    rejected: list[Received] = field(default_factory=list)

    def refusal(self, request: Received) -> tuple[int, bytes] | None:
        if not lacks_reasoning(request.json()):
            return None
        self.rejected.append(request)
        return 400, json.dumps(MISSING_REASONING).encode()


@asynccontextmanager
async def fake_deepseek(*replies: Reply) -> AsyncIterator[FakeDeepSeek]:
    async with serving(FakeDeepSeek(list(replies))) as server:
        yield server


def deepseek_stream(
    path: Path,
    thought: list[str],
    *,
    text: str = "",
    call: tuple[str, str, dict[str, Any]] | None = None,
) -> Reply:
    """One streamed answer: the thought in pieces, then the text or one tool call."""
    head = {"id": "5f1c1a9e", "object": "chat.completion.chunk", "created": 1767225600}
    head["model"] = "deepseek-flash"

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return "data: " + json.dumps({**head, "choices": [choice], **extra}) + "\n\n"

    events = [chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    events += [chunk({"content": None, "reasoning_content": piece}) for piece in thought]
    if call is not None:
        call_id, name, arguments = call
        fragment = {"index": 0, "id": call_id, "type": "function"}
        fragment["function"] = {"name": name, "arguments": ""}
        events.append(chunk({"tool_calls": [fragment]}))
        rest = {"index": 0, "function": {"arguments": json.dumps(arguments)}}
        events.append(chunk({"tool_calls": [rest]}))
    if text:
        events.append(chunk({"content": text, "reasoning_content": None}))
    usage: dict[str, Any] = {"prompt_tokens": 200, "completion_tokens": 40, "total_tokens": 240}
    usage["completion_tokens_details"] = {"reasoning_tokens": 20}
    events.append(chunk({"content": ""}, "tool_calls" if call else "stop", usage=usage))
    path.write_text("".join(events) + "data: [DONE]\n\n", "utf-8")
    return Reply(str(path))
