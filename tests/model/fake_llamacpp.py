"""A loopback server that behaves like llama.cpp's ``llama-server`` where a small window matters.

It counts every prompt with a tokenizer of its own that is, like real ones, far from characters
÷ 4 for some text: a run of letters is one token, and every digit, punctuation mark and CJK
character is one — so CSV numbers, hex, JSON logs and Chinese count 2.7-6x their chars ÷ 4, as
they do with real tokenizers. A chat request whose prompt exceeds ``n_ctx`` is refused exactly as
llama.cpp refuses it (HTTP 400, ``exceed_context_size_error`` with ``n_prompt_tokens`` and
``n_ctx``); one that fits is answered from ``answers`` (a text, or a tool call's name and its
arguments as the model wrote them, JSON or not), streamed as llama.cpp streams, with a ``usage``
whose ``prompt_tokens`` is the count. ``GET /props`` names ``n_ctx``
(``default_generation_settings.n_ctx``) and ``POST /tokenize`` counts ``content``, as
llama.cpp's do. Title requests get a title, apart (``LoopbackServer``).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from anyio.abc import SocketStream

from tests.model.loopback import (
    SSE_HEADERS,
    LoopbackServer,
    Received,
    _head,
    _read_request,
    _send_plain,
    serving,
)

_TOKEN = re.compile(r"[A-Za-z]+|\S")
MESSAGE_OVERHEAD = 4
"""Tokens a chat template adds per message (role markers)."""


def count(text: str) -> int:
    return len(_TOKEN.findall(text))


def prompt_tokens(body: dict[str, Any]) -> int:
    """The fake tokenizer's count of a chat request: message texts, tool calls and tools."""
    total = count(json.dumps(body.get("tools") or []))
    for message in body.get("messages", []):
        content = message.get("content") or ""
        if isinstance(content, list):
            content = " ".join(str(part.get("text", "")) for part in content)
        total += MESSAGE_OVERHEAD + count(str(content))
        total += count(json.dumps(message.get("tool_calls") or []))
    return total


@dataclass(frozen=True)
class Answer:
    text: str = ""
    tool: str | None = None
    arguments: str = "{}"
    """The tool call's arguments exactly as the model wrote them (maybe no JSON)."""


def overflow_body(tokens: int, n_ctx: int) -> bytes:
    message = (
        f"request ({tokens} tokens) exceeds the available context size ({n_ctx} tokens), "
        "try increasing it"
    )
    error = {"code": 400, "message": message, "type": "exceed_context_size_error"}
    return json.dumps({"error": {**error, "n_prompt_tokens": tokens, "n_ctx": n_ctx}}).encode()


@dataclass
class FakeLlamaCpp(LoopbackServer):
    n_ctx: int = 4096
    answers: list[Answer] = field(default_factory=list)
    refused: list[int] = field(default_factory=list)
    """The prompt tokens of every chat request refused as too long."""
    counted: list[int] = field(default_factory=list)
    """The prompt tokens of every chat request answered."""
    props: bool = True
    """Serve ``/props``; ``False``: 404, as a proxy that passes only ``/v1`` would."""

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.requests if r.path.endswith("/chat/completions")]

    async def _handle(self, stream: SocketStream) -> None:
        async with stream:
            buffer = bytearray()
            while (request := await _read_request(stream, buffer)) is not None:
                await self._answer(stream, request)

    async def _answer(self, stream: SocketStream, request: Received) -> None:
        if request.path.endswith("/models"):  # llama.cpp's: the training window, not n_ctx
            models = {"object": "list", "data": [{"id": "local-model", "object": "model",
                      "owned_by": "llamacpp", "meta": {"n_ctx_train": 131072}}]}  # fmt: skip
            await _send_plain(stream, 200, json.dumps(models).encode())
            return
        if request.path.endswith("/props") and not self.props:
            await _send_plain(stream, 404, b'{"error": {"code": 404, "message": "Not Found"}}')
            return
        if request.path.endswith("/props"):
            props = {"default_generation_settings": {"n_ctx": self.n_ctx}, "total_slots": 1}
            await _send_plain(stream, 200, json.dumps(props).encode())
            return
        if request.path.endswith("/tokenize"):
            ids = list(range(count(str(request.json().get("content", "")))))
            await _send_plain(stream, 200, json.dumps({"tokens": ids}).encode())
            return
        if request.asks_title:
            self.title_requests.append(request)
            await self._stream(stream, Answer("Local work"), 10)
            return
        self.requests.append(request)
        tokens = prompt_tokens(request.json())
        if tokens > self.n_ctx:
            self.refused.append(tokens)
            await _send_plain(stream, 400, overflow_body(tokens, self.n_ctx))
            return
        self.counted.append(tokens)
        await self._stream(stream, self.answers.pop(0) if self.answers else Answer("ok"), tokens)

    async def _stream(self, stream: SocketStream, answer: Answer, tokens: int) -> None:
        head = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": "fake"}
        delta: dict[str, Any] = {"role": "assistant", "content": answer.text}
        if answer.tool is not None:
            function = {"name": answer.tool, "arguments": answer.arguments}
            delta = {"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": f"call_{len(self.requests)}", "type": "function",
                 "function": function}]}  # fmt: skip
        finish = "tool_calls" if answer.tool is not None else "stop"
        usage = {"prompt_tokens": tokens, "completion_tokens": 3, "total_tokens": tokens + 3}
        events = [
            {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**head, "choices": [], "usage": usage},
        ]
        pieces = [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]
        await stream.send(_head(200, [*SSE_HEADERS, ("Transfer-Encoding", "chunked")]))
        for piece in pieces:
            await stream.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        await stream.send(b"0\r\n\r\n")


@asynccontextmanager
async def fake_llamacpp(
    n_ctx: int, *answers: Answer, props: bool = True
) -> AsyncIterator[FakeLlamaCpp]:
    server = FakeLlamaCpp([], n_ctx=n_ctx, answers=list(answers), props=props)
    async with serving(server) as server:
        yield server
