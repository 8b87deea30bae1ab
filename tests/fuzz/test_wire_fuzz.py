"""Hostile lines against the real agent process, in batches, one long-lived process.

Each Hypothesis example is a batch of lines (``strategies.lines``) written to the same agent
(``FuzzTarget``), followed by a sentinel request. The agent must stay up, write nothing but
JSON-RPC frames the ACP schema accepts, answer every request of the batch exactly once with its
id, and answer each junk line at most once (with a null id, or the id the line carried). At the
end it must exit 0 on EOF, and every session journal the fuzzing created must hold the
invariant. A batch that kills the process fails; the next example starts a new process.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings

from acp_agent.journal.invariant import check_file
from tests.fuzz.strategies import SETTINGS, Call, Line, check_answers, expectation, lines
from tests.fuzz.target import FuzzTarget
from tests.reliability.support import scaled
from tests.support.acp_schema import AcpSchema

pytestmark = [pytest.mark.subprocess, pytest.mark.reliability]

EXAMPLES = scaled(200, 3000)
CWD = "/tmp"


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory, acp_schema: AcpSchema) -> Iterator[FuzzTarget]:
    target = FuzzTarget(tmp_path_factory.mktemp("fuzz"), acp_schema)
    started = time.monotonic()
    yield target
    code = target.stop()
    print(
        f"wire fuzz: {target.batches} batches, {target.frames_checked} frames checked, "
        f"{target.starts} process(es), {len(target.late)} answers after their batch "
        "(deferred requests), "
        f"{time.monotonic() - started:.1f}s"
    )
    assert code == 0, f"the agent exited {code} at EOF\n{target.stderr_tail()}"
    late = [i for i, _ in target.late]
    assert len(late) == len(set(late)), (
        f"requests answered twice, the second time late: {target.late}"
    )
    for journal in sorted(target.root.glob("state-*/sessions/*/journal.jsonl")):
        assert check_file(journal) == [], journal


@pytest.mark.timeout(120 + EXAMPLES)
@settings(SETTINGS, max_examples=EXAMPLES)
@given(batch=lines(CWD))
def test_hostile_batches_never_kill_the_agent_and_every_request_is_answered_once(
    target: FuzzTarget, batch: list[Line]
) -> None:
    target.ensure_running()
    ids = [target.next_id() if isinstance(x, Call) and x.is_request else None for x in batch]
    data = b"".join(
        line.encode(request_id) if isinstance(line, Call) else line.encode()
        for line, request_id in zip(batch, ids, strict=True)
    )
    expected = expectation(batch, ids)
    frames = target.feed(data, expected)
    problems = check_answers(frames, expected)
    assert not problems, "\n".join(problems)
