"""A toy router and an exchange helper: the transport driven in memory, no ACP involved."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from acp_agent.errors import InvalidParams
from acp_agent.transport.connection import (
    Connection,
    Deferred,
    NotificationHandler,
    RequestHandler,
    ServeEnd,
)
from acp_agent.transport.memory import MemoryClient

BIG = 1 << 20


def _maybe_fail(params: msgspec.Raw | None) -> None:
    decoded = None if params is None else msgspec.json.decode(params)
    fail = decoded.get("fail") if isinstance(decoded, dict) else None
    if fail == "rpc":
        raise InvalidParams("Invalid params", {"path": "$.fail"})
    if fail == "bug":
        raise ValueError("a bug in the handler")


class ToyRouter:
    """``echo`` answers its params; ``slow`` answers later, once ``release`` is set; ``set``
    and ``get`` share a value (``set`` takes a while); ``odd`` returns something unencodable;
    ``note`` is a notification. Params ``{"fail": "rpc" | "bug"}`` make echo, slow and note fail.
    """

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.notes: list[Any] = []
        self.value: msgspec.Raw | None = None
        self._requests: dict[str, RequestHandler] = {
            "echo": self.echo,
            "slow": self.slow,
            "set": self.set,
            "get": self.get,
            "odd": self.odd,
        }

    def request_handler(self, method: str) -> RequestHandler | None:
        return self._requests.get(method)

    def notification_handler(self, method: str) -> NotificationHandler | None:
        return self.note if method == "note" else None

    async def echo(self, params: msgspec.Raw | None) -> object:
        _maybe_fail(params)
        return params

    async def slow(self, params: msgspec.Raw | None) -> object:
        return Deferred(self._slow(params))

    async def _slow(self, params: msgspec.Raw | None) -> object:
        await self.release.wait()
        _maybe_fail(params)
        return {"slow": params}

    async def set(self, params: msgspec.Raw | None) -> object:
        await anyio.sleep(0.01)
        self.value = params
        return None

    async def get(self, params: msgspec.Raw | None) -> object:
        return self.value

    async def odd(self, params: msgspec.Raw | None) -> object:
        return object()

    async def note(self, params: msgspec.Raw | None) -> None:
        _maybe_fail(params)
        self.notes.append(None if params is None else msgspec.json.decode(params))


def request(id_: object, method: str, params: object = None) -> bytes:
    message: dict[str, object] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return msgspec.json.encode(message)


async def exchange(
    lines: list[bytes], router: ToyRouter | None = None, **options: Any
) -> list[Any]:
    """Feed ``lines`` then EOF; every frame the agent wrote, decoded (each must be JSON)."""
    router = router or ToyRouter()
    router.release.set()
    client = MemoryClient(capacity=BIG)
    async with Connection(client.agent_source, client.agent_sink, **options) as conn:
        for line in lines:
            await client.send_line(line)
        client.close_input()
        assert await conn.serve(router) is ServeEnd.EOF
        await conn.wait_deferred()
    client.close_output()
    return await client.receive_all()
