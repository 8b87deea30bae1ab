"""``mcpServers`` as ACP sends them: decoded once at the boundary into typed configs.

Stdio (no ``type``, or ``"stdio"``) and ``"http"`` (streamable HTTP) are supported and
advertised (``mcpCapabilities.http``); ``"sse"`` is not advertised, so it is refused with -32602
naming the path, as is any other shape that does not decode. Values of ``env`` and ``headers``
are secrets: ``describe`` is what logs may show.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import msgspec

from acp_agent.content import JsonObject
from acp_agent.errors import InvalidParams


class NameValue(msgspec.Struct, frozen=True):
    """ACP ``EnvVariable`` / ``HttpHeader``."""

    name: str
    value: str
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")


class StdioServer(msgspec.Struct, frozen=True):
    name: str
    command: str
    args: list[str] = msgspec.field(default_factory=list)
    env: list[NameValue] = msgspec.field(default_factory=list)
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")


class HttpServer(msgspec.Struct, frozen=True):
    name: str
    url: str
    headers: list[NameValue] = msgspec.field(default_factory=list)
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")


McpServerConfig = StdioServer | HttpServer


def parse_servers(raw: list[JsonObject], path: str = "$.mcpServers") -> tuple[McpServerConfig, ...]:
    """Every server of ``raw`` typed, or ``InvalidParams`` naming the first bad one's path."""
    return tuple(_parse_one(item, f"{path}[{index}]") for index, item in enumerate(raw))


def _parse_one(item: JsonObject, path: str) -> McpServerConfig:
    kind = item.get("type", "stdio")
    if kind not in ("stdio", "http"):
        raise InvalidParams(
            f"MCP server transport {kind!r} is not supported (supported: stdio, http)",
            {"path": f"{path}.type"},
        )
    body = {key: value for key, value in item.items() if key != "type"}
    try:
        if kind == "http":
            return msgspec.convert(body, HttpServer)
        return msgspec.convert(body, StdioServer)
    except msgspec.ValidationError as exc:
        raise InvalidParams(f"invalid MCP server: {exc}", {"path": path}) from exc


def describe(config: McpServerConfig) -> dict[str, object]:
    """What a log line may say about a server: no env or header values."""
    match config:
        case StdioServer(name=name, command=command, env=env):
            return {"server": name, "transport": "stdio", "command": command, "env": _names(env)}
        case HttpServer(name=name, url=url, headers=headers):
            return {
                "server": name,
                "transport": "http",
                "url": _bare(url),
                "headers": _names(headers),
            }


def _names(pairs: list[NameValue]) -> list[str]:
    return [pair.name for pair in pairs]


def _bare(url: str) -> str:
    """The URL without user info, query or fragment (they may carry tokens)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def journaled(raw: list[JsonObject]) -> list[JsonObject]:
    """``mcpServers`` as the journal header keeps them: env and header values left out (the
    client states the servers again at every load, resume and fork)."""
    return [_redact(item) for item in raw]


def _redact(item: JsonObject) -> JsonObject:
    redacted = dict(item)
    for key in ("env", "headers"):
        pairs = item.get(key)
        if isinstance(pairs, list):
            redacted[key] = [
                {**pair, "value": "<redacted>"} if isinstance(pair, dict) else pair
                for pair in pairs
            ]
    return redacted
