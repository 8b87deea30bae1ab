"""Reading the script model's request log (``ACP_AGENT_SCRIPT_REQUESTS``), one JSON line a request.

Every request begins with exactly one system message (docs/contract.md §8). ``read_requests``
checks that of every request it reads, then sets the message aside under ``"system"``, so a
test compares ``messages`` with the history it expects and a missing or doubled system message
fails every test that reads requests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_requests(path: Path) -> list[dict[str, Any]]:
    """Every logged request, its system message moved to ``"system"`` (``[]``: none made)."""
    if not path.exists():
        return []
    return [split_system(json.loads(line)) for line in path.read_text("utf-8").splitlines()]


def split_system(request: dict[str, Any]) -> dict[str, Any]:
    first, *rest = request["messages"]
    assert first["role"] == "system" and isinstance(first["content"], str), first
    assert all(m["role"] != "system" for m in rest), "more than one system message"
    return {**request, "system": first["content"], "messages": rest}
