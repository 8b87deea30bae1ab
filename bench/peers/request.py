"""What an agent sends the model for a first ``hi``: the body's size and what it is made of.

Both wire shapes are read: Chat Completions (``messages``; the system prompt is the text of the
``system`` and ``developer`` messages) and Responses (``instructions`` plus the text of the
``system`` and ``developer`` input items). The total is the body as sent; the system prompt is
counted as UTF-8 text and the tool schemas as the ``tools`` array re-encoded as compact JSON, so
the parts do not depend on how each agent's client happens to space its JSON.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

SYSTEM_ROLES = ("system", "developer")


@dataclass(frozen=True)
class HiRequest:
    requests: int
    """Model requests the one prompt ``hi`` caused."""
    body_bytes: int
    """The first (the main) request's body, as sent."""
    system_bytes: int
    tool_count: int
    tools_bytes: int
    items: int
    """Messages (Chat) or input items (Responses) in the body."""
    wire: str

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def analyze(paths: list[str], bodies: list[bytes]) -> HiRequest:
    """The figures of the first model request among ``bodies`` (its ``paths`` tell the wire)."""
    if not bodies:
        raise ValueError("no model request")
    body = json.loads(bodies[0])
    wire = "responses" if paths[0].endswith("/responses") else "chat"
    items = body.get("messages" if wire == "chat" else "input") or []
    system = "".join(
        _text(i.get("content"))
        for i in items
        if isinstance(i, dict) and i.get("role") in SYSTEM_ROLES
    )
    if wire == "responses":
        system = str(body.get("instructions") or "") + system
    tools = body.get("tools") or []
    return HiRequest(
        requests=len(bodies),
        body_bytes=len(bodies[0]),
        system_bytes=len(system.encode()),
        tool_count=len(tools),
        tools_bytes=len(json.dumps(tools, separators=(",", ":"), ensure_ascii=False).encode())
        if tools
        else 0,
        items=len(items),
        wire=wire,
    )
