"""``serve --listen`` ends with 0 on SIGTERM whenever it comes, its start-up included.

docs/contract.md §10: SIGTERM / SIGINT in listen mode end the process with exit status 0 "as
§1", and §1 has stdio's "whenever they come". Two moments a supervisor really signals at, both
once missed (the process died of the signal, -15): right after the ``listening on`` line,
which is written before the event loop's signal receiver is installed, and during the start-up
before the loop runs. ``remote/run.py`` now holds a ``SignalLatch`` from its first line, whose
signals the hub takes first; and a signal taken before uvicorn started closes no listener.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.remote.support import TOKEN, start, stop
from tests.support.process import agent_command

pytestmark = pytest.mark.subprocess

ROUNDS = 5


@pytest.mark.parametrize("scheme", ["ws", "http"])
def test_sigterm_right_after_listening_on_exits_0(tmp_path: Path, scheme: str) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text("")
    for _ in range(ROUNDS):
        listener = start(script, tmp_path / "state", scheme=scheme)
        assert stop(listener) == 0, listener.log_text()


def test_sigterm_during_the_start_exits_0(tmp_path: Path) -> None:
    # the signal goes the moment the process logs server_starting, before its event loop runs
    script = tmp_path / "script.jsonl"
    script.write_text("")
    argv = agent_command("serve", "--listen", "ws://127.0.0.1:0", "--model", f"script:{script}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_AGENT_")}
    env.update(ACP_AGENT_STATE_DIR=str(tmp_path / "state"), ACP_AGENT_TOKEN=TOKEN)
    for _ in range(ROUNDS):
        process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert process.stderr is not None
        seen = []
        for raw in iter(process.stderr.readline, b""):
            seen.append(raw.decode(errors="replace"))
            if "server_starting" in seen[-1]:
                process.send_signal(signal.SIGTERM)
                break
        seen.append(process.stderr.read().decode(errors="replace"))
        process.stderr.close()
        assert process.wait(10) == 0, "".join(seen)
