"""What the fuzzers found, pinned as plain tests against the real process.

Each failed when written; commit e3807d4 ("bound nesting and ids at the boundary") fixed them,
and they stay as regression tests.

1. Deep nesting kills the process. A line of about 1,000 nested arrays or objects (10 KB, far
   under the line cap) makes ``msgspec`` raise ``RecursionError`` in the envelope decoder; it is
   not a ``DecodeError``, nothing catches it, and the server exits 1 with a traceback — dropping
   every session's unflushed injections on the way. reliability.md: malformed input gets an
   error answer and "the process stays up".
2. What an injection accepts, a load may not replay. Nesting a little shallower (about 970
   levels, in ``source``) passes the wire and the journal, and is acknowledged; re-encoding it
   for the replay happens deeper in the stack and raises ``RecursionError``, so ``session/load``
   of that session answers -32603 in every later process. Both want one depth limit at the
   boundary, well under the interpreter's: the fix admits 64 levels of params (-32602 past
   that) and answers a line too deep for the decoder -32600.
3. An ``id`` beyond int64 is echoed. msgspec decodes ids up to 2**64 - 1 as integers, so the
   answer carries an id that the ACP schema's ``RequestId`` (int64) rejects: the agent writes a
   frame outside the protocol. The table says a wrong id is answered -32600 with ``id: null``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.support import new_session, request
from tests.integration.test_process import PipedAgent
from tests.support.acp_schema import AcpSchema, JsonObject
from tests.support.recording import RawAgent, agent_command

pytestmark = [pytest.mark.subprocess, pytest.mark.reliability]

INIT = {"protocolVersion": 1}
ERROR_CODES = {-32700, -32600, -32602}


def nested_text(depth: int, kind: str) -> str:
    """``depth`` levels of arrays or objects as JSON text (``json.dumps`` would recurse)."""
    if kind == "array":
        return "[" * depth + "1" + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def deep_line(depth: int, where: str) -> bytes:
    if where == "member":  # an unknown top-level member
        deep = nested_text(depth, "array")
        return f'{{"jsonrpc":"2.0","id":7,"method":"initialize","x":{deep}}}\n'.encode()
    meta = nested_text(depth, "object")
    text = f'{{"jsonrpc":"2.0","id":7,"method":"initialize","params":{{"protocolVersion":1,"_meta":{meta}}}}}'
    return text.encode() + b"\n"


def answered(request_id: Any) -> Callable[[JsonObject], bool]:
    return lambda frame: "method" not in frame and frame.get("id") == request_id


def start(agent_env: dict[str, str], tmp_path: Path, name: str) -> PipedAgent:
    """The agent on plain pipes (``RawAgent`` would parse what it sends, and recurse too)."""
    with (tmp_path / f"{name}.stderr.log").open("wb") as stderr:
        return PipedAgent(agent_command(), agent_env, stderr)


@pytest.mark.parametrize("depth", [1_000, 5_000, 100_000])
@pytest.mark.parametrize("where", ["member", "params"])
def test_deeply_nested_json_is_answered_and_serving_goes_on(
    depth: int, where: str, agent_env: dict[str, str], tmp_path: Path
) -> None:
    agent = start(agent_env, tmp_path, "deep")
    try:
        agent.send(deep_line(depth, where), request(8, "initialize", INIT))
        frame = agent.read_until(lambda f: "method" not in f, within=20)
        after = agent.read_until(answered(8), within=20)
        agent.stdin.close()
        code = agent.wait(10)
    except AssertionError as exc:
        log = (tmp_path / "deep.stderr.log").read_text(errors="replace")
        raise AssertionError(
            f"{depth} levels of nesting ({where}): {exc}; exit status {agent.proc.poll()}\n"
            f"{log[-1500:]}"
        ) from None
    finally:
        agent.kill()
    assert "error" in frame and frame["error"]["code"] in ERROR_CODES, frame
    assert frame["id"] in (None, 7), frame
    assert after["result"]["protocolVersion"] == 1
    assert code == 0


def inject_deep(sid: str, depth: int) -> bytes:
    """``_acp_agent/inject`` with ``depth`` levels of nesting inside ``source``."""
    source = f'{{"kind":"client","x":{nested_text(depth, "array")}}}'
    params = f'{{"sessionId":"{sid}","content":"nested {depth}","source":{source}}}'
    return f'{{"jsonrpc":"2.0","id":"{sid}","method":"_acp_agent/inject","params":{params}}}\n'.encode()


@pytest.fixture
def deep_recursion() -> Iterator[None]:
    """Room for this test's own ``json.loads`` of the frames that echo the nesting back."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    yield
    sys.setrecursionlimit(limit)


@pytest.mark.usefixtures("deep_recursion")
def test_what_an_injection_accepts_a_later_load_replays(
    agent_env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    """Shallow and deep (900..995) injections, each in its own session: what is acknowledged
    must load again, and what is too deep is refused at the boundary with -32602."""
    accepted: list[int] = []
    refused: list[int] = []
    agent = start(agent_env, tmp_path, "inject")
    try:
        agent.send(request(1, "initialize", INIT))
        agent.read_until(answered(1))
        for depth in (5, 20, 40, *range(900, 1000, 5)):
            sid = f"deep-{depth}"
            agent.send(new_session(2, workspace, sid), inject_deep(sid, depth))
            agent.read_until(answered(2))
            try:
                answer = agent.read_until(answered(sid))
            except AssertionError:
                break  # the agent died (finding 1); what it acknowledged so far must load
            if "result" not in answer:
                assert answer["error"]["code"] == -32602, answer
                refused.append(depth)
                continue
            agent.send(request(3, "_acp_agent/when_idle", {"sessionId": sid}))
            assert agent.read_until(answered(3))["result"]["journal"]["healthy"] is True
            accepted.append(depth)
    finally:
        agent.kill()
    assert accepted, "no depth was accepted: the test proves nothing"
    # too deep for the params limit: -32602; deeper still, the envelope answers -32600 (id null)
    assert accepted == [5, 20, 40], "deep injections must be refused, not admitted"
    assert refused and refused[0] == 900
    agent = start(agent_env, tmp_path, "load")
    failed: list[tuple[int, Any]] = []
    try:
        agent.send(request(1, "initialize", INIT))
        for depth in accepted:
            params = {"sessionId": f"deep-{depth}", "cwd": str(workspace), "mcpServers": []}
            agent.send(request(depth, "session/load", params))
            loaded = agent.read_until(answered(depth))
            if "result" not in loaded:
                failed.append((depth, loaded.get("error")))
        agent.stdin.close()
        assert agent.wait(10) == 0
    finally:
        agent.kill()
    assert not failed, f"acknowledged injections whose session no longer loads: {failed}"


@pytest.mark.parametrize("bad_id", [2**63, 2**64 - 1])
async def test_an_id_beyond_int64_is_not_echoed_outside_the_schema(
    bad_id: int, agent_env: dict[str, str], acp_schema: AcpSchema
) -> None:
    async with RawAgent(env=agent_env, validate=False) as agent:
        await agent.send(json.dumps(request(bad_id, "initialize", INIT)).encode() + b"\n")
        frame = await agent.recv()
        await agent.close_stdin()
        assert await agent.wait_exit() == 0
    problem = acp_schema.frame_problem(frame, "initialize")
    assert problem is None, f"the agent wrote a frame outside the ACP schema: {problem}\n{frame}"
    assert frame.get("id") is None and frame["error"]["code"] == -32600, frame
