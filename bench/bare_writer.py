"""The streaming baseline: a bare encode-and-write loop, no protocol machinery at all.

It reads requests on stdin; ``stream {sessionId, n, text}`` makes it encode ``n``
``session/update`` notifications shaped exactly like acp-agent's ``agent_message_chunk`` (reused
msgspec encoder) and write each with one ``os.write`` on fd 1, then answer the request. Nothing
is queued, journaled or batched: the floor any agent streaming on the same pipe stands on.

Run as a script (``python bench/bare_writer.py``).
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any

import msgspec

PATH = Path(__file__).resolve()


def command() -> list[str]:
    return [sys.executable, str(PATH)]


def write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def stream(params: dict[str, Any], encode: Any) -> None:
    message_id = uuid.uuid4().hex
    for _ in range(int(params["n"])):
        update = {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": params["text"]},
            "messageId": message_id,
        }
        notification = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": params["sessionId"], "update": update},
        }
        write_all(encode(notification) + b"\n")


def main() -> None:
    encode = msgspec.json.Encoder().encode
    for line in sys.stdin.buffer:
        request = msgspec.json.decode(line)
        if request.get("method") == "stream":
            stream(request["params"], encode)
        write_all(encode({"jsonrpc": "2.0", "id": request["id"], "result": {}}) + b"\n")


if __name__ == "__main__":
    main()
