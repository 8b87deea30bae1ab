"""``run_command`` in the real sandbox (bubblewrap), real commands: what each policy lets a
command write and reach, and that the agent's state directory is out of its sight."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_agent.options import Options
from acp_agent.process.setup import checked_setup
from acp_agent.sandbox.guard import Sandbox
from acp_agent.sandbox.policy import SandboxPolicy
from acp_agent.tools.base import ToolContext, ToolOutput
from acp_agent.tools.run_command import DETACHED_NOTE, RunCommand
from tests.integration.support import wait_until
from tests.sandbox.support import confined, needs_sandbox, text

pytestmark = needs_sandbox

CONFINED = [p for p in SandboxPolicy if p.confined]
WRITERS = [SandboxPolicy.WORKSPACE_WRITE, SandboxPolicy.WORKSPACE_WRITE_NETWORK]
NO_NETWORK = [SandboxPolicy.READ_ONLY, SandboxPolicy.WORKSPACE_WRITE]


async def run(ctx: ToolContext, command: str) -> ToolOutput:
    return await RunCommand().run({"command": command, "timeout_ms": 60_000}, ctx)


@pytest.mark.parametrize("policy", CONFINED)
async def test_each_result_names_its_policy(workspace: Path, policy: SandboxPolicy) -> None:
    output = await run(confined(workspace, policy), "echo hi")
    assert text(output) == f"sandbox: {policy}\n$ echo hi\nhi\n[exit code 0]"


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the roots and outside ``/tmp`` (which the sandbox replaces)."""
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="acp-sandbox-test-") as path:
        yield Path(path)


@pytest.mark.parametrize("policy", CONFINED)
async def test_a_write_outside_the_roots_fails(
    tmp_path: Path, workspace: Path, outside: Path, policy: SandboxPolicy
) -> None:
    output = await run(confined(workspace, policy), f"echo x > {outside}/f")
    assert output.is_error
    assert "Read-only file system" in text(output)
    assert not (outside / "f").exists()
    beside = tmp_path / "beside"  # in the host's /tmp: not even there inside
    beside.mkdir()
    output = await run(confined(workspace, policy), f"echo x > {beside}/f")
    assert output.is_error
    assert "Directory nonexistent" in text(output)
    assert not (beside / "f").exists()


@pytest.mark.parametrize("policy", WRITERS)
async def test_a_build_in_the_workspace_works(workspace: Path, policy: SandboxPolicy) -> None:
    if shutil.which("cc") is None or shutil.which("make") is None:
        pytest.skip("no C compiler or make here")
    (workspace / "hello.c").write_text('#include <stdio.h>\nint main(void){puts("built");}\n')
    (workspace / "Makefile").write_text("hello: hello.c\n\tcc -o hello hello.c\n")
    output = await run(confined(workspace, policy), "make && ./hello")
    assert not output.is_error, text(output)
    assert text(output).endswith("built\n[exit code 0]")
    assert (workspace / "hello").is_file()


@pytest.mark.parametrize("policy", WRITERS)
async def test_every_root_is_writable_and_python_writes_there(
    tmp_path: Path, workspace: Path, policy: SandboxPolicy
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    write = "import sys; open(sys.argv[1], 'w').write('made')"
    command = f'python3 -c "{write}" out.txt && python3 -c "{write}" {extra}/out.txt'
    output = await run(confined(workspace, policy, roots=(extra,)), command)
    assert not output.is_error, text(output)
    assert (workspace / "out.txt").read_text() == (extra / "out.txt").read_text() == "made"


def exists_here(path: str) -> bool:
    return Path(path).exists()


async def test_read_only_writes_nothing_but_a_private_tmp(tmp_path: Path, workspace: Path) -> None:
    (tmp_path / "host-file").write_text("on the host's /tmp")
    command = (
        f"touch /tmp/mine && echo tmp-ok; ls {tmp_path}/host-file; touch in-workspace; "
        "touch /usr/acp-sandbox-test; touch /var/tmp/acp-sandbox-test"
    )
    output = await run(confined(workspace, SandboxPolicy.READ_ONLY), command)
    said = text(output)
    assert "tmp-ok" in said
    assert said.count("Read-only file system") == 3
    assert "No such file or directory" in said, "the host's /tmp is not the sandbox's"
    assert not (workspace / "in-workspace").exists()
    assert not exists_here("/tmp/mine"), "the sandbox's /tmp is not the host's"


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on the host's loopback (connections wait in its backlog)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server


def connect_command(server: socket.socket) -> str:
    port = server.getsockname()[1]
    return f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5)\""


def accepted(server: socket.socket) -> bool:
    server.setblocking(False)
    try:
        connection, _ = server.accept()
    except BlockingIOError:
        return False
    connection.close()
    return True


@pytest.mark.parametrize("policy", NO_NETWORK)
async def test_a_connect_to_a_loopback_port_fails_without_network(
    workspace: Path, listener: socket.socket, policy: SandboxPolicy
) -> None:
    output = await run(confined(workspace, policy), connect_command(listener))
    assert output.is_error
    assert "ConnectionRefusedError" in text(output)
    assert not accepted(listener)


async def test_a_connect_to_a_loopback_port_works_with_network(
    workspace: Path, listener: socket.socket
) -> None:
    policy = SandboxPolicy.WORKSPACE_WRITE_NETWORK
    output = await run(confined(workspace, policy), connect_command(listener))
    assert not output.is_error, text(output)
    assert accepted(listener)


def journal_in(state_dir: Path) -> Path:
    journal = state_dir / "sessions" / "s1" / "journal.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_text('{"type":"session"}\n')
    return journal


@pytest.mark.parametrize("policy", CONFINED)
@pytest.mark.parametrize("inside", [True, False], ids=["state-dir-in-workspace", "elsewhere"])
async def test_the_state_dir_is_unreachable(
    tmp_path: Path, workspace: Path, policy: SandboxPolicy, inside: bool
) -> None:
    state_dir = (workspace if inside else tmp_path) / "agent-state"
    journal = journal_in(state_dir)
    ctx = confined(workspace, policy, state_dir)
    for command in (
        f"ls {state_dir}",
        f"cat {journal}",
        f"echo x >> {journal}",
        f"touch {state_dir}/new",
        f"cd {state_dir}/sessions",
    ):
        output = await run(ctx, command)
        assert output.is_error, f"{command!r} under {policy}: {text(output)}"
        assert '"type"' not in text(output)
    assert journal.read_text() == '{"type":"session"}\n'
    assert sorted(p.name for p in state_dir.iterdir()) == ["sessions"]


async def test_without_the_sandbox_the_state_dir_is_reachable(workspace: Path) -> None:
    journal = journal_in(workspace / "agent-state")
    output = await run(
        confined(workspace, SandboxPolicy.OFF, workspace / "agent-state"), "cat " + str(journal)
    )
    assert text(output) == f'sandbox: off\n$ cat {journal}\n{{"type":"session"}}\n[exit code 0]'


async def test_the_config_file_is_unreadable(tmp_path: Path, workspace: Path) -> None:
    config = workspace / "config.toml"  # in a root, so visible but for the hiding
    config.write_text('[sandbox]\nmode = "workspace-write"\n')
    sandbox = Sandbox(tmp_path / "state", hidden_files=(config,))
    ctx = confined(workspace, SandboxPolicy.WORKSPACE_WRITE, sandbox=sandbox)
    output = await run(ctx, f"wc -c < {config}; echo x > {config}")
    assert output.is_error
    assert text(output).count("Permission denied") == 2
    assert config.read_text() == '[sandbox]\nmode = "workspace-write"\n'


async def test_a_detached_process_ends_with_the_command(workspace: Path) -> None:
    """Its own pid namespace: what the command left running, ``setsid`` or not, goes with it."""
    if shutil.which("pgrep") is None or shutil.which("setsid") is None:
        pytest.skip("no pgrep or setsid here")
    marker = "3141.5926"
    output = await run(
        confined(workspace, SandboxPolicy.WORKSPACE_WRITE),
        f"setsid -f sleep {marker}; echo started",
    )
    assert text(output).endswith("started\n[exit code 0]")
    assert DETACHED_NOTE not in text(output)

    def gone() -> bool:
        found = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True)
        return found.returncode == 1

    await wait_until(gone, "the detached sleep to be gone")


async def test_the_cwd_is_kept(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    output = await RunCommand().run(
        {"command": "pwd", "cwd": "sub"}, confined(workspace, SandboxPolicy.READ_ONLY)
    )
    assert text(output).split("\n")[2] == str(workspace / "sub")


async def test_the_process_sandbox_hides_state_config_and_token_file(
    tmp_path: Path, workspace: Path
) -> None:
    """``process.setup``'s sandbox, as both doors build it: the config file (with its
    ``[sandbox] mode``) and ``--token-file`` unreadable, the state directory unreachable."""
    config, token = workspace / "config.toml", workspace / "token"
    config.write_text('[sandbox]\nmode = "workspace-write"\n')
    token.write_text("listen-secret\n")
    state = workspace / "state"
    (state / "sessions").mkdir(parents=True)
    options = Options(None, state, config, "info", None, 1 << 20)
    setup = checked_setup(options)
    sandbox = setup.sandbox(options, (token,))
    assert sandbox.configured is SandboxPolicy.WORKSPACE_WRITE
    ctx = confined(workspace, None, sandbox=sandbox)
    output = await run(ctx, f"cat {token}; cat {config}; ls {state}; echo made > made")
    said = text(output)
    assert said.startswith("sandbox: workspace-write\n")
    assert said.count("Permission denied") == 3 and "listen-secret" not in said
    assert (workspace / "made").read_text() == "made\n"
