"""The test MCP server (``server.py``) as ACP ``mcpServers`` entries, and its HTTP fixture."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio

SERVER = Path(__file__).with_name("server.py")


def stdio_server(name: str = "test", pid_file: Path | None = None, **env: str) -> McpServerStdio:
    variables = dict(env)
    if pid_file is not None:
        variables["MCP_TEST_PID_FILE"] = str(pid_file)
    return McpServerStdio(
        name=name,
        command=sys.executable,
        args=[str(SERVER), "stdio"],
        env=[EnvVariable(name=key, value=value) for key, value in variables.items()],
    )


def http_server(url: str, name: str = "web", **headers: str) -> HttpMcpServer:
    fields = [HttpHeader(name=key, value=value) for key, value in headers.items()]
    return HttpMcpServer(type="http", name=name, url=url, headers=fields)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def running_http_server(pid_file: Path | None = None) -> Iterator[str]:
    """``server.py http PORT`` on a loopback port; yields its URL, stops it afterwards."""
    port = free_port()
    env = {**os.environ, **({"MCP_TEST_PID_FILE": str(pid_file)} if pid_file else {})}
    child = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, child)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        child.terminate()
        child.wait(10)


def _wait_listening(port: int, child: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise RuntimeError(f"the MCP test server exited with {child.returncode}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("the MCP test server did not start listening")


def pids(pid_file: Path) -> list[int]:
    if not pid_file.exists():
        return []
    return [int(text) for text in pid_file.read_text().split()]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False
