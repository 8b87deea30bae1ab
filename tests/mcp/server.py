"""A small real MCP server for the tests, built with the ``mcp`` package's ``MCPServer``.

``python server.py stdio`` serves over stdin/stdout; ``python server.py http PORT`` serves
streamable HTTP on ``127.0.0.1:PORT`` at ``/mcp``. When ``MCP_TEST_PID_FILE`` is set, the
process writes its pid there first (the tests check that it is gone after a close).

Tools: ``echo`` (read-only), ``add``, ``slow`` (sleeps, for cancel), ``fail`` (an error
result), ``env`` (echoes one environment variable, read-only), ``header`` (echoes one request
header; http only), ``picture`` (an image block).
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ImageContent, ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)

server = MCPServer("acp-agent-test", log_level="WARNING")


@server.tool(description="Echo the text back.", annotations=READ_ONLY)
def echo(text: str) -> str:
    return f"echo: {text}"


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(description="Sleep for the given seconds, then answer.")
async def slow(seconds: float) -> str:
    marker = os.environ.get("MCP_TEST_SLOW_FILE")
    if marker:
        await anyio.Path(marker).write_text("started\n")
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(description="Always fails.")
def fail(reason: str = "it broke") -> str:
    raise RuntimeError(reason)


@server.tool(description="The value of an environment variable.", annotations=READ_ONLY)
def env(name: str) -> str:
    return os.environ.get(name, "<unset>")


@server.tool(description="The value of an HTTP request header.", annotations=READ_ONLY)
def header(name: str, ctx: Context) -> str:
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    return str(headers.get(name, "<unset>")) if headers is not None else "<no request>"


@server.tool(description="A 1x1 PNG image.", annotations=READ_ONLY)
def picture() -> list[ImageContent]:
    return [ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")]


def main() -> None:
    pid_file = os.environ.get("MCP_TEST_PID_FILE")
    if pid_file:
        with open(pid_file, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
