"""``make run``: drive a real ``acp-agent`` process over stdio and show the design note's idea.

The design note this project implements is *separate context injection from turn execution*.
The demo shows it in three labelled steps, printing every frame and then the journal:

1. an idle ``_acp_agent/inject`` (no turn running) is answered ``appended`` and opens no turn:
   its ``user/message`` sits between turns, with no ``turn/start`` around it;
2. a prompt whose turn runs a tool batch (two ``read_file`` calls in one step); context injected
   while the batch runs is answered ``staged`` and lands after the *whole* batch's results,
   before the next ``step/start``;
3. ``acp-agent journal check`` passes on the journal the session left.

The demo is the ACP client. It writes one frame at a time and reads until the frame it waits
for, with one hard deadline for the whole session. It advertises ``fs.readTextFile``, so the
agent's ``read_file`` tool asks *it* for each file (``fs/read_text_file``): the demo sends the
injection while the batch's first read waits on its answer, which makes step 2 deterministic
without sleeps (the same flow as ``fixtures/replays/inject-during-tool-batch``).

The model: a real provider when one is configured (``ACP_AGENT_MODEL``, ``OPENAI_API_KEY``,
``DEEPSEEK_API_KEY``), else the bundled ``script.jsonl``; ``--model SPEC`` overrides both. A
real model may answer without a tool batch; the demo then says that step 2 had no batch to
inject into, and still checks the journal. ``--state-dir DIR`` (a fresh directory) keeps the
journal instead of a temporary one.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import IO, Any

from acp_agent.model.registry import BadModelSpec, ModelCatalog, ProviderKind

SESSION_ID = "demo"
SCRIPTED_TIMEOUT_S = 30.0
REAL_MODEL_TIMEOUT_S = 180.0
CLIP = 240

WORKSPACE = {
    "notes.txt": "Ship the journal first; everything else builds on it.\n",
    "todo.txt": "1. journal\n2. turn machine\n3. ACP router\n",
}
IDLE_CONTEXT = "The user prefers short answers."
PROMPT = "Read notes.txt and todo.txt (both at once), then tell me what to do first."
STAGED_CONTEXT = "CI: main is green (lint and tests passed)."
STAGED_SOURCE = {"kind": "x-ci", "job": "main"}

Frame = dict[str, Any]


class DemoError(Exception):
    """The agent did not do what the demo waits for (in time)."""


def is_script(spec: str) -> bool:
    """Whether ``spec`` names the script model (a spec the agent refuses is no script)."""
    try:
        return ModelCatalog(spec).parse(spec).kind is ProviderKind.SCRIPT
    except BadModelSpec:
        return False


def real_model() -> str | None:
    """The real provider to use when one is configured: ``ACP_AGENT_MODEL`` (if it is not a
    script), else OpenAI or DeepSeek when their key is in the environment."""
    spec = os.environ.get("ACP_AGENT_MODEL", "")
    if spec and not is_script(spec):
        return spec
    if os.environ.get("OPENAI_API_KEY"):
        return "openai:gpt-4o-mini"
    if os.environ.get("DEEPSEEK_API_KEY"):
        return "deepseek:deepseek-flash"
    return None


# -- printing -------------------------------------------------------------------------------------


class Printer:
    """Prints frames readably: the temporary workspace path as ``<workspace>``, long JSON clipped."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = str(workspace)

    def json(self, value: object) -> str:
        text = json.dumps(value, ensure_ascii=False).replace(self.workspace, "<workspace>")
        return text if len(text) <= CLIP else text[: CLIP - 1] + "…"

    def frame(self, arrow: str, frame: Frame) -> None:
        if "method" not in frame:
            body = frame["error"] if "error" in frame else frame.get("result")
            what = "error" if "error" in frame else "response"
            print(f"  {arrow} {what} id={frame.get('id')} {self.json(body)}")
            return
        params = frame.get("params")
        if frame["method"] == "session/update" and isinstance(params, dict):
            update = dict(params["update"])
            kind = update.pop("sessionUpdate", "?")
            print(f"  {arrow} session/update {kind} {self.json(update)}")
        elif "id" in frame:
            print(f"  {arrow} {frame['method']} (request id={frame['id']}) {self.json(params)}")
        else:
            print(f"  {arrow} {frame['method']} {self.json(params)}")


def heading(text: str) -> None:
    print(f"\n== {text} ==\n")


def note(text: str) -> None:
    print(f"  ·· {text}")


# -- the agent process ----------------------------------------------------------------------------


def is_response(frame: Frame, request_id: int) -> bool:
    return "method" not in frame and frame.get("id") == request_id


def is_request(frame: Frame, method: str | None = None) -> bool:
    return "method" in frame and "id" in frame and method in (None, frame["method"])


def update_of(frame: Frame) -> Frame:
    """A ``session/update``'s update (``{}`` for any other frame)."""
    if frame.get("method") != "session/update":
        return {}
    update: Frame = frame["params"]["update"]
    return update


class Agent:
    """One ``acp-agent`` process, driven frame by frame; every read is bounded by ``deadline``."""

    def __init__(
        self, argv: list[str], stderr: IO[bytes], workspace: Path, printer: Printer, timeout: float
    ) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
        self.workspace = workspace
        self.printer = printer
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.next_id = 1
        self.received: list[Frame] = []
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _write(self, frame: Frame) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(frame).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: Frame) -> int:
        request_id, self.next_id = self.next_id, self.next_id + 1
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.printer.frame("→", frame)
        self._write(frame)
        return request_id

    def respond(self, request: Frame, result: object = None, error: Frame | None = None) -> None:
        frame: Frame = {"jsonrpc": "2.0", "id": request["id"]}
        if error is None:
            frame["result"] = result
        else:
            frame["error"] = error
        self.printer.frame("→", frame)
        self._write(frame)

    def read(self) -> Frame:
        try:
            line = self.lines.get(timeout=max(self.deadline - time.monotonic(), 0.0))
        except queue.Empty:
            raise DemoError(f"no frame from the agent within {self.timeout:g} s") from None
        if line is None:
            raise DemoError("the agent closed stdout before answering")
        frame: Frame = json.loads(line)
        self.printer.frame("←", frame)
        self.received.append(frame)
        return frame

    def until(self, wanted: Callable[[Frame], bool]) -> Frame:
        """Read up to the first frame ``wanted`` accepts, answering the agent's other requests."""
        while True:
            frame = self.read()
            if wanted(frame):
                return frame
            if is_request(frame):
                self.answer(frame)

    def call(self, method: str, params: Frame) -> Frame:
        request_id = self.request(method, params)
        response = self.until(lambda frame: is_response(frame, request_id))
        if "error" in response:
            raise DemoError(f"{method} failed: {response['error']}")
        result: Frame = response["result"]
        return result

    def answer(self, request: Frame) -> None:
        """The demo client's side: files from the workspace; permission is never granted."""
        params = request.get("params") or {}
        if request["method"] == "fs/read_text_file":
            path = Path(str(params.get("path"))).resolve()
            if not path.is_relative_to(self.workspace.resolve()) or not path.is_file():
                self.respond(request, error={"code": -32603, "message": f"no file {path}"})
                return
            lines = path.read_text().splitlines(keepends=True)
            start = max(int(params.get("line") or 1), 1) - 1
            limit = params.get("limit")
            end = None if limit is None else start + int(limit)
            self.respond(request, {"content": "".join(lines[start:end])})
        elif request["method"] == "session/request_permission":
            options = params.get("options") or []
            rejects = [o for o in options if str(o.get("kind", "")).startswith("reject")]
            outcome: Frame = (
                {"outcome": "selected", "optionId": rejects[0]["optionId"]}
                if rejects
                else {"outcome": "cancelled"}
            )
            self.respond(request, {"outcome": outcome})
        else:
            error = {"code": -32601, "message": f"the demo client has no {request['method']}"}
            self.respond(request, error=error)

    def close(self) -> int:
        """Close stdin (the agent finishes what it received and exits) and read to the end."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        while True:
            try:
                line = self.lines.get(timeout=max(self.deadline - time.monotonic(), 0.0))
            except queue.Empty:
                raise DemoError(f"the agent did not exit within {self.timeout:g} s") from None
            if line is None:
                break
            self.printer.frame("←", json.loads(line))
        return self.proc.wait(timeout=max(self.deadline - time.monotonic(), 1.0))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# -- the journal ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Journal:
    header: Frame
    events: list[Frame]

    @classmethod
    def read(cls, path: Path) -> Journal:
        if not path.exists():
            raise DemoError(f"no journal at {path}")
        header, *events = (json.loads(line) for line in path.read_text().splitlines())
        return cls(header, events)

    def turns(self) -> list[int | None]:
        """The turn each event lies in, ``turn/start`` to ``turn/end`` (``None``: between)."""
        turns: list[int | None] = []
        current: int | None = None
        for event in self.events:
            if event["type"] == "turn/start":
                current = event["data"]["turn"]
            turns.append(current)
            if event["type"] == "turn/end":
                current = None
        return turns

    def index_of_message(self, message_id: str) -> int:
        for i, event in enumerate(self.events):
            if event["type"] == "user/message" and event["data"]["id"] == message_id:
                return i
        raise DemoError(f"no user/message {message_id} in the journal")


def summary(printer: Printer, event: Frame) -> str:
    data = event["data"]
    match event["type"]:
        case "user/message":
            text = " ".join(b.get("text", f"<{b['type']}>") for b in data["content"])
            return f"source={printer.json(data['source'])} {printer.json(text)}"
        case "assistant/message":
            parts = [
                f"calls {p['name']} ({p['id']})"
                if p["type"] == "tool-call"
                else f"{p['type']} {printer.json(p['text'])}"
                for p in data["content"]
            ]
            return "; ".join(parts)
        case "tool/call":
            return f"{data['callId']} {data['name']} {printer.json(data['arguments'])}"
        case "tool/result":
            text = " ".join(b.get("text", f"<{b['type']}>") for b in data["content"])
            return f"{data['callId']} {'error' if data['isError'] else 'ok'} {printer.json(text)}"
        case "turn/end":
            return str(data["reason"]["kind"])
        case _:
            return ""


def print_journal(
    printer: Printer, journal: Journal, marks: dict[int, str], upto: int | None = None
) -> None:
    header = journal.header
    print(f"  header  session {header['id']}  cwd {printer.json(header['cwd'])}")
    turns = journal.turns()
    for i, event in enumerate(journal.events[:upto]):
        turn, step = turns[i], event["data"].get("step")
        where = "between turns" if turn is None else f"turn {turn}"
        where += "" if turn is None or step is None else f" step {step}"
        row = f"  #{event['seq']:<4} {event['type']:<18} {where:<15} {summary(printer, event)}"
        print(row.rstrip() + (f"   ◀ {marks[i]}" if i in marks else ""))


def placement_fact(what: str, placement: str | None, expected: str) -> tuple[bool, str]:
    return placement == expected, f"{what} answered placement {placement!r}"


def idle_fact(journal: Journal, message_id: str) -> tuple[bool, str]:
    """The idle injection lies between turns: no turn/start since the last turn/end (or header)."""
    i = journal.index_of_message(message_id)
    before = [j for j in range(i) if journal.events[j]["type"] == "turn/end"]
    since = before[-1] + 1 if before else 0
    opened = [e for e in journal.events[since:i] if e["type"] == "turn/start"]
    after = "the header" if not before else f"#{journal.events[before[-1]]['seq']} turn/end"
    seq = journal.events[i]["seq"]
    if opened or journal.turns()[i] is not None:
        return False, f"idle injection #{seq} lies inside a turn"
    return True, f"idle injection #{seq}: between turns (after {after}; no turn/start around it)"


def staged_fact(journal: Journal, message_id: str) -> tuple[bool, str]:
    """The staged context lies after every tool/result of its batch and before the next
    step/start."""
    i = journal.index_of_message(message_id)
    events, seq = journal.events, journal.events[i]["seq"]
    results = [j for j in range(i) if events[j]["type"] == "tool/result"]
    if not results:
        return False, f"staged context #{seq} precedes every tool/result"
    turn, step = events[results[-1]]["data"]["turn"], events[results[-1]]["data"]["step"]

    def of_batch(event: Frame, kind: str) -> bool:
        data = event["data"]
        return bool(event["type"] == kind and data["turn"] == turn and data["step"] == step)

    calls = [j for j, e in enumerate(events) if of_batch(e, "tool/call")]
    batch = [j for j, e in enumerate(events) if of_batch(e, "tool/result")]
    starts = [j for j in range(i + 1, len(events)) if events[j]["type"] == "step/start"]
    if len(batch) != len(calls) or batch[-1] > i:
        return False, f"staged context #{seq} lies inside the tool batch of step {step}"
    if not starts or any(events[j]["type"] == "step/start" for j in range(batch[-1], i)):
        return False, f"staged context #{seq} is not followed by the next step/start"
    last, nxt = events[batch[-1]]["seq"], events[starts[0]]["seq"]
    return True, (
        f"staged context #{seq}: after #{last}, the last of step {step}'s {len(batch)} "
        f"tool/results, and before #{nxt} step/start (step {events[starts[0]]['data']['step']})"
    )


# -- the demo -------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What the session steps saw: each injection's message id and the placement answered."""

    idle_id: str | None = None
    idle_placement: str | None = None
    staged_id: str | None = None
    staged_placement: str | None = None


def session_steps(agent: Agent, workspace: Path, journal_path: Path, printer: Printer) -> Outcome:
    outcome = Outcome()
    heading("Setup: initialize, session/new")
    note("the demo client advertises fs.readTextFile: the agent's read_file asks it for files")
    agent.call(
        "initialize",
        {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}},
    )
    agent.call(
        "session/new",
        {
            "cwd": str(workspace),
            "mcpServers": [],
            "_meta": {"acp_agent": {"sessionId": SESSION_ID}},
        },
    )

    heading("Step 1: idle injection (_acp_agent/inject while no turn runs)")
    injected = agent.call("_acp_agent/inject", {"sessionId": SESSION_ID, "content": IDLE_CONTEXT})
    outcome.idle_id, outcome.idle_placement = str(injected["messageId"]), injected["placement"]
    note(f"answered {outcome.idle_placement!r}: no turn is open, so it is appended at once")
    agent.call("_acp_agent/when_idle", {"sessionId": SESSION_ID})
    note("when_idle answered: the flush is done. The journal so far (no turn, no model call):")
    so_far = Journal.read(journal_path)
    print_journal(printer, so_far, {so_far.index_of_message(outcome.idle_id): "idle injection"})

    heading("Step 2: a prompt whose turn runs a tool batch; context injected mid-batch")
    prompt_id = agent.request(
        "session/prompt",
        {"sessionId": SESSION_ID, "prompt": [{"type": "text", "text": PROMPT}]},
    )
    first = agent.until(
        lambda frame: is_request(frame, "fs/read_text_file") or is_response(frame, prompt_id)
    )
    if is_response(first, prompt_id):
        note("the model answered without a tool batch: there was no batch to inject into")
        return outcome
    note("the batch's first read waits on this client's answer: inject now, mid-batch")
    staged = agent.call(
        "_acp_agent/inject",
        {"sessionId": SESSION_ID, "content": STAGED_CONTEXT, "source": STAGED_SOURCE},
    )
    outcome.staged_id, outcome.staged_placement = str(staged["messageId"]), staged["placement"]
    note(f"answered {outcome.staged_placement!r}: held in the turn's outbox; now finish the batch")
    agent.answer(first)
    mark = len(agent.received)
    answer = agent.until(lambda frame: is_response(frame, prompt_id))
    if "error" in answer:
        raise DemoError(f"session/prompt failed: {answer['error']}")
    updates = [update_of(frame) for frame in agent.received[mark:]]
    chunks = [i for i, u in enumerate(updates) if u.get("messageId") == outcome.staged_id]
    done = [i for i, u in enumerate(updates) if u.get("status") in ("completed", "failed")]
    if chunks and done and chunks[0] > done[-1]:
        note("the client saw the staged context only after the batch's last tool result")
    return outcome


def check_steps(printer: Printer, state: Path, journal_path: Path, outcome: Outcome) -> bool:
    heading("Step 3: the journal on disk, and `acp-agent journal check`")
    journal = Journal.read(journal_path)
    facts: list[tuple[bool, str]] = []
    marks: dict[int, str] = {}
    if outcome.idle_id is not None:
        facts.append(placement_fact("idle injection", outcome.idle_placement, "appended"))
        facts.append(idle_fact(journal, outcome.idle_id))
        marks[journal.index_of_message(outcome.idle_id)] = "step 1: idle injection, no turn"
    if outcome.staged_id is not None:
        facts.append(placement_fact("mid-batch injection", outcome.staged_placement, "staged"))
        facts.append(staged_fact(journal, outcome.staged_id))
        marks[journal.index_of_message(outcome.staged_id)] = (
            "step 2: staged mid-batch, drained after the whole batch"
        )
    print_journal(printer, journal, marks)
    print()
    for ok, text in facts:
        print(f"  {'ok  ' if ok else 'FAIL'} {text}")
    argv = [sys.executable, "-m", "acp_agent", "journal", "check", SESSION_ID]
    argv += ["--state-dir", str(state)]
    print(f"\n  $ acp-agent journal check {SESSION_ID} --state-dir <state>")
    check = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    for line in (check.stdout + check.stderr).splitlines():
        print(f"  {line}")
    verdict = "passes" if check.returncode == 0 else "FAILS"
    print(f"  (exit {check.returncode}: the journal check {verdict})")
    return check.returncode == 0 and all(ok for ok, _ in facts)


@contextmanager
def directories(state_dir: Path | None) -> Iterator[tuple[Path, Path]]:
    """The workspace (always temporary) and the state dir (``state_dir`` or temporary)."""
    with tempfile.TemporaryDirectory(prefix="acp-agent-demo-") as tmp:
        root = Path(tmp)
        workspace = root / "workspace"
        workspace.mkdir()
        for name, text in WORKSPACE.items():
            (workspace / name).write_text(text)
        yield workspace, (state_dir.resolve() if state_dir is not None else root / "state")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acp_agent.demo", description=__doc__)
    parser.add_argument("--model", metavar="SPEC", help="the model (default: see above)")
    parser.add_argument("--state-dir", type=Path, metavar="DIR", help="keep the journal here")
    args = parser.parse_args(argv)
    real = args.model or real_model()
    print("acp-agent demo: context injection is separate from turn execution")
    script = resources.files("acp_agent.demo").joinpath("script.jsonl")
    with resources.as_file(script) as script_path, directories(args.state_dir) as dirs:
        workspace, state = dirs
        if args.model:
            print(f"→ driving: acp-agent --model {real} (given with --model)")
        elif real:
            print(f"→ driving: acp-agent --model {real} (a real provider: it is configured)")
        else:
            print(
                "→ driving: acp-agent --model script:<bundled demo script> "
                "(no provider key set: the scripted demo)"
            )
        printer = Printer(workspace)
        journal_path = state / "sessions" / SESSION_ID / "journal.jsonl"
        command = [sys.executable, "-m", "acp_agent", "--model", real or f"script:{script_path}"]
        command += ["--state-dir", str(state), "--log-level", "warning"]
        timeout = REAL_MODEL_TIMEOUT_S if real else SCRIPTED_TIMEOUT_S
        with tempfile.TemporaryFile() as stderr:
            agent = Agent(command, stderr, workspace, printer, timeout)
            try:
                outcome = session_steps(agent, workspace, journal_path, printer)
                status = agent.close()
            except DemoError as exc:
                print(f"\ndemo failed: {exc}", file=sys.stderr)
                status = None
            finally:
                agent.kill()
                stderr.seek(0)
                logs = stderr.read().decode(errors="replace")
            if logs:
                print("== agent stderr ==\n" + logs, file=sys.stderr)
        if status is None:
            return 1
        print(f"\n  agent exit status: {status}")
        checked = check_steps(printer, state, journal_path, outcome)
    shown = ["an idle inject appended with no turn"]
    if outcome.staged_id is not None:
        shown.append("context injected mid-batch staged and drained after the whole tool batch")
    else:
        shown.append("no mid-batch injection (the model ran no tool batch)")
    shown.append("the journal check passing" if checked else "the journal check FAILING")
    print(f"\nShown: {'; '.join(shown)}.")
    return 0 if status == 0 and checked else 1


if __name__ == "__main__":
    raise SystemExit(main())
