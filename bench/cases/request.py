"""Bytes sent to the model for a first prompt ``hi``: the whole Chat Completions request body.

Our agent runs as a real process on the real OpenAI-compatible provider (``--model
openai:gpt-test``, a fresh state dir, an empty config file), pointed at ``bench/loopback.py``,
which answers a minimal event stream. After ``initialize``, ``session/new`` (an empty workspace:
no instruction files) and ``session/prompt`` with the one text block ``hi``, the body of the
HTTP request of the turn (the first the loopback server receives; the session's background
title request, which follows the turn, is left out) is measured: its total length, the system message and
the ``tools`` array as they appear in it (JSON, compact; checked by re-encoding the whole body
to its exact length), and the number of tools.

The size is deterministic apart from the working directory and the date in the system prompt,
so one process is enough. There is no baseline to measure in the same run: the totals are set
against the peers' published figures (``PEERS``, measured elsewhere in 2026-11, not here), and
the system message and the tools against the same request's total.
"""

from __future__ import annotations

from typing import Any

import msgspec

from bench.lab import PROTOCOL, Lab, Sizes, start_openai, text_prompt
from bench.loopback import Loopback, loopback
from bench.stats import Better, Figure
from bench.wire import WireError

PROMPT = "hi"
PEERS = (
    ("fast_agent", "fast-agent", 4_947),
    ("codex_acp", "codex-acp", 43_623),
    ("kimi_cli", "kimi-cli", 48_807),
)
ELSEWHERE = "published figure, measured elsewhere (2026-11), not in this run"


async def first_request(lab: Lab, server: Loopback, name: str) -> bytes:
    """The body of the model request of a fresh process's first prompt ``hi``."""
    client = await start_openai(lab, name, server.base_url)
    try:
        await client.request("initialize", PROTOCOL, within=60)
        created = await client.request("session/new", {"cwd": str(lab.cwd), "mcpServers": []})
        answer = await client.request("session/prompt", text_prompt(created["sessionId"], PROMPT))
        if answer.get("stopReason") != "end_turn":
            raise WireError(f"the first prompt ended with {answer}")
    finally:
        await client.close()
    requests = [r for r in server.take() if r.path.endswith("/chat/completions")]
    # The turn's request comes first; after the turn, the session asks for its title (one small
    # request without tools, once per session: turn/titles.py), which is not measured here.
    turn = [r for r in requests if b'"tools"' in r.body]
    if not turn or requests[0] is not turn[0]:
        raise WireError(f"no tool-carrying request came first among {len(requests)}")
    return turn[0].body


def parts(body: bytes) -> dict[str, Any]:
    decoded = msgspec.json.decode(body)
    encode = msgspec.json.encode
    exact = len(encode(decoded)) == len(body)
    messages = decoded["messages"]
    system = [m for m in messages if m.get("role") == "system"]
    tools = decoded.get("tools") or []
    return {
        "total": len(body),
        "system": sum(len(encode(m)) for m in system),
        "system_text": sum(len(str(m.get("content", "")).encode()) for m in system),
        "tools": len(encode(tools)) if tools else 0,
        "tool_count": len(tools),
        "messages": len(messages),
        "exact": exact,
    }


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    async with loopback() as server:
        body = await first_request(lab, server, "request-hi")
    (lab.root / "request-hi.body.json").write_bytes(body)
    p = parts(body)
    total, system, tools, count = p["total"], p["system"], p["tools"], p["tool_count"]
    rest = total - system - tools
    approx = "" if p["exact"] else " (parts re-encoded: approximate)"
    extra = {
        "system_bytes": float(system),
        "system_text_bytes": float(p["system_text"]),
        "tools_bytes": float(tools),
        "tool_count": float(count),
        "other_bytes": float(rest),
        "messages": float(p["messages"]),
    }
    breakdown = (
        f"system message {system:,} B, {count} tools {tools:,} B, "
        f"the rest (the `hi` message, model, options) {rest:,} B{approx}"
    )
    figures = [
        Figure(
            key=f"hi_request_bytes_vs_{key}",
            title=f"bytes sent to the model for a first prompt `hi`, vs {label}",
            unit="B",
            ours=float(total),
            baseline=float(bytes_),
            baseline_label=f"{label}, {ELSEWHERE}",
            better=Better.LOWER,
            samples=1,
            note=breakdown if key == PEERS[0][0] else "",
            extra=extra if key == PEERS[0][0] else {},
        )
        for key, label, bytes_ in PEERS
    ]
    figures += [
        Figure(
            key="hi_request_system_bytes",
            title="… of which the system message (JSON, with its role)",
            unit="B",
            ours=float(system),
            baseline=float(total),
            baseline_label="the whole request body, same request",
            better=Better.LOWER,
            samples=1,
            note=f"its text alone {p['system_text']:,} B, working directory path included",
        ),
        Figure(
            key="hi_request_tools_bytes",
            title=f"… of which the tool schemas ({count} tools)",
            unit="B",
            ours=float(tools),
            baseline=float(total),
            baseline_label="the whole request body, same request",
            better=Better.LOWER,
            samples=1,
            note=f"{tools / count:,.0f} B per tool" if count else "",
            extra={"tool_count": float(count)},
        ),
    ]
    return figures
