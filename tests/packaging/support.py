"""A clean copy of the repository, a wheel built from it, and an installed ``acp-agent`` run.

Everything happens in a temporary directory: the checkout gets no ``build/``, ``*.egg-info``
or ``dist/``. The copy holds what git would commit (tracked and untracked-but-not-ignored
files), so a module not yet committed is packaged too, and a stray local file is not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROCESS_TIMEOUT_S = 120


def copy_repository(target: Path) -> Path:
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout
    for name in filter(None, listing.decode().split("\0")):
        source = ROOT / name
        if not source.is_file():  # deleted in the work tree, not yet in the index
            continue
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination)
    return target


def build_wheel(source: Path, out: Path) -> Path:
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)])
    (wheel,) = out.glob("acp_agent_server-*.whl")
    return wheel


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without this venv's traces, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    for name in [k for k in env if k.startswith("ACP_AGENT_")]:
        del env[name]
    return env | extra


def run(
    argv: list[str], *, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        argv,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, f"{argv} exited {result.returncode}:\n{result.stderr}"
    return result


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": 1, "clientCapabilities": {}},
}


def stdio_session(argv: list[str], env: dict[str, str], state_dir: Path) -> dict[str, object]:
    """Send ``initialize`` on stdin, close it, return the one frame answered on stdout."""
    result = run(
        [*argv, "--state-dir", str(state_dir), "--log-level", "warning"],
        env=env,
        stdin=json.dumps(INITIALIZE) + "\n",
    )
    (line,) = result.stdout.splitlines()
    frame: dict[str, object] = json.loads(line)
    return frame
