"""One long-lived agent process that fuzz batches are fed to, checked answer by answer.

``FuzzTarget`` runs the real agent (script model with plenty of answers) on pipes. A reader
thread collects stdout lines and answers every request the agent makes of the client with an
error (a fuzzed ``initialize`` may advertise ``fs``: a tool must not wait forever). ``feed``
writes one batch, then a sentinel request, and reads until the sentinel and every request of the
batch are answered; it returns the batch's frames, each checked to be a JSON-RPC frame the ACP
schema accepts. If the process died, the batch fails and the next one starts a new process.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

from tests.fuzz.strategies import SESSION, Expectation, as_validated, key, loads
from tests.integration.support import serve_command, write_script
from tests.support.acp_schema import AcpSchema
from tests.support.recording import child_env
from tests.support.transcript import tail

WAIT_S = 30.0


class TargetDied(AssertionError):
    pass


class FuzzTarget:
    def __init__(self, root: Path, schema: AcpSchema) -> None:
        self.root = root
        self.schema = schema
        self.workspace = root / "workspace"
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.starts = 0
        self.batches = 0
        self.frames_checked = 0
        self.issued: dict[str, str] = {}
        """key(id) -> method of every request of an earlier batch."""
        self.late: list[tuple[str, str]] = []
        """(id, method) of answers that arrived in a later batch than their request's."""
        self._ids = itertools.count(1)
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()

    # -- the process ---------------------------------------------------------------------------

    @property
    def state_dir(self) -> Path:
        return self.root / f"state-{self.starts}"

    def ensure_running(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        if self._proc is not None:
            self._release()
        self.starts += 1
        self.state_dir.mkdir()
        script = write_script(self.root / "script.jsonl", *[{"text": "ok"}] * 20_000)
        self._stderr = (self.root / f"stderr-{self.starts}.log").open("wb")
        env = child_env({"ACP_AGENT_STATE_DIR": str(self.state_dir)})
        self._proc = subprocess.Popen(
            serve_command(script),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )
        self._lines = queue.SimpleQueue()
        self._outbox = queue.SimpleQueue()
        assert self._proc.stdout is not None and self._proc.stdin is not None
        self._reader = threading.Thread(target=self._read, args=(self._proc.stdout,), daemon=True)
        self._reader.start()
        threading.Thread(target=self._write, args=(self._proc.stdin,), daemon=True).start()
        self._handshake()

    def _handshake(self) -> None:
        init = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False}}}
        self.call("initialize", init)
        params = {
            "cwd": str(self.workspace),
            "mcpServers": [],
            "_meta": {"acp_agent": {"sessionId": SESSION}},
        }
        self.call("session/new", params)

    def stop(self) -> int:
        """Close stdin; the exit status (the agent must exit on its own)."""
        assert self._proc is not None
        self._outbox.put(None)
        try:
            return self._proc.wait(20)
        finally:
            self._release()

    def _release(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(5)
        self._proc.stdout.close()
        self._stderr.close()

    def stderr_tail(self) -> str:
        return tail((self.root / f"stderr-{self.starts}.log").read_bytes())

    # -- talking ----------------------------------------------------------------------------------

    def next_id(self) -> int | str:
        n = next(self._ids)
        return 10**6 + n if n % 2 else f"fz-{n}"

    def write(self, data: bytes) -> None:
        """Queue bytes for the agent's stdin (a thread writes them: a full pipe blocks no one)."""
        self._outbox.put(data)

    def _write(self, stdin: IO[bytes]) -> None:
        with contextlib.suppress(OSError):
            while (data := self._outbox.get()) is not None:
                stdin.write(data)
                stdin.flush()
        with contextlib.suppress(OSError):
            stdin.close()

    def call(self, method: str, params: Any) -> dict[str, Any]:
        request_id = self.next_id()
        self.write(
            json.dumps(
                {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            ).encode()
            + b"\n"
        )
        frames = self._read_until({request_id}, WAIT_S)
        (answer,) = [f for f in frames if "method" not in f and f.get("id") == request_id]
        assert "result" in answer, answer
        return answer

    def feed(self, data: bytes, expected: Expectation) -> list[dict[str, Any]]:
        """Write a batch and a sentinel; the frames up to all their answers (checked)."""
        self.batches += 1
        sentinel = f"sentinel-{self.batches}"
        ping = {"jsonrpc": "2.0", "id": sentinel, "method": "_acp_agent/nope"}
        self.write(data + json.dumps(ping).encode() + b"\n")
        # A request too deep for the decoder is answered with a null id: do not wait for its id.
        awaited = {sentinel, *(i for i in expected.requests if i not in expected.too_deep)}
        frames = self._read_until(awaited, WAIT_S)
        methods: dict[Any, str] = {**expected.requests, sentinel: "_acp_agent/nope"}
        for frame in frames:
            method = methods.get(frame.get("id")) if "method" not in frame else None
            if method not in self.schema.methods.responses:
                method = None  # an extension or unstable method the v1 schema has no type for
            problem = self.schema.frame_problem(as_validated(frame, expected), method)
            assert problem is None, f"{problem}\n{json.dumps(frame)[:2000]}"
        self.frames_checked += len(frames)
        mine = []
        for frame in frames:
            answered = key(frame.get("id")) if "method" not in frame else None
            if answered is not None and answered in self.issued:
                self.late.append((answered, self.issued[answered]))
            elif frame.get("id") != sentinel:
                mine.append(frame)
        self.issued.update({key(i): m for i, m in expected.requests.items()})
        return mine

    def _read_until(self, ids: set[Any], within: float) -> list[dict[str, Any]]:
        waiting = {key(i) for i in ids}
        frames: list[dict[str, Any]] = []
        deadline = time.monotonic() + within
        while waiting:
            try:
                raw = self._lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(
                    f"no answer to {sorted(waiting)} within {within}s\n{self.stderr_tail()}"
                ) from None
            if raw is None:
                self._lines.put(None)
                raise TargetDied(f"the agent closed its stdout (it died)\n{self.stderr_tail()}")
            frame = decode_frame(raw)
            frames.append(frame)
            if "method" not in frame:
                waiting.discard(key(frame.get("id")))
        return frames

    def _read(self, stdout: io.BufferedReader) -> None:
        partial = b""
        while chunk := stdout.read1(1 << 16):
            *complete, partial = (partial + chunk).split(b"\n")
            for raw in complete:
                self._answer_agent_request(raw)
                self._lines.put(raw)
        if partial:
            self._lines.put(partial)  # decode_frame reports it
        self._lines.put(None)

    def _answer_agent_request(self, raw: bytes) -> None:
        with contextlib.suppress(ValueError):
            frame = loads(raw)
            if isinstance(frame, dict) and "method" in frame and "id" in frame:
                error = {"code": -32601, "message": "the fuzz client serves nothing"}
                self.write(
                    json.dumps({"jsonrpc": "2.0", "id": frame["id"], "error": error}).encode()
                    + b"\n"
                )


def decode_frame(raw: bytes) -> dict[str, Any]:
    """One stdout line: it must be a JSON object (a frame), never anything else."""
    try:
        frame = loads(raw)
    except ValueError:
        raise AssertionError(f"the agent wrote a non-frame to stdout: {raw[:300]!r}") from None
    assert isinstance(frame, dict), f"the agent wrote a JSON {type(frame).__name__}: {raw[:300]!r}"
    return frame
