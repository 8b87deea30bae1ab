"""A transparent stdio tap between an ACP client and the agent, for the client tests.

``python acp_tap.py [--record DIR] [--strip-resume] -- AGENT_COMMAND...`` runs the agent and
copies bytes both ways unchanged, except that with ``--strip-resume`` the ``initialize`` result
loses ``agentCapabilities.sessionCapabilities.resume``: a client that prefers ``session/resume``
(acpx does) then reconnects with ``session/load``, which is what ``test_acpx.py`` needs to drive
the agent's load path through acpx. With ``--record DIR`` every line the agent wrote goes to
``DIR/agent-<pid>.jsonl`` and every line the client sent to ``DIR/client-<pid>.jsonl``, so a test
can validate the agent's own frames even where the client hides them (acpx does not print the
updates a ``session/load`` replays). SIGTERM / SIGINT are passed on to the agent; the tap exits
with the agent's status.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any


def strip_resume(line: bytes) -> bytes:
    """The line without ``sessionCapabilities.resume`` if it is an ``initialize`` result."""
    try:
        frame = json.loads(line)
    except ValueError:
        return line
    result = frame.get("result") if isinstance(frame, dict) else None
    caps = result.get("agentCapabilities") if isinstance(result, dict) else None
    session = caps.get("sessionCapabilities") if isinstance(caps, dict) else None
    if not isinstance(session, dict) or "resume" not in session:
        return line
    del session["resume"]
    return json.dumps(frame, separators=(",", ":")).encode() + b"\n"


def pump(source: IO[bytes], sink: IO[bytes], log: IO[bytes] | None, edit: bool) -> None:
    try:
        for line in iter(source.readline, b""):
            if log is not None:
                log.write(line)
                log.flush()
            sink.write(strip_resume(line) if edit else line)
            sink.flush()
    except (BrokenPipeError, ValueError):
        pass
    finally:
        with contextlib.suppress(BrokenPipeError, ValueError):
            sink.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", type=Path)
    parser.add_argument("--strip-resume", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None

    def forward(signum: int, _frame: Any) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    logs: list[IO[bytes] | None] = [None, None]
    if args.record is not None:
        args.record.mkdir(parents=True, exist_ok=True)
        logs = [
            (args.record / f"client-{os.getpid()}.jsonl").open("wb"),
            (args.record / f"agent-{os.getpid()}.jsonl").open("wb"),
        ]
    inbound = threading.Thread(
        target=pump, args=(sys.stdin.buffer, child.stdin, logs[0], False), daemon=True
    )
    inbound.start()
    pump(child.stdout, sys.stdout.buffer, logs[1], args.strip_resume)
    status = child.wait()
    for log in logs:
        if log is not None:
            log.close()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
