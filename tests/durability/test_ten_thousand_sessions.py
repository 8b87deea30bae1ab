"""10,000 idle sessions in one process under a 1,024 descriptor limit (issue 16 point 5).

A real subprocess (``ten_thousand.py``, the Python API: the wire run with fewer sessions is
``test_many_idle_sessions.py``), started with ``RLIMIT_NOFILE`` soft limit 1,024 in
``preexec_fn``. The expectations come from ``docs/journal.md`` "Sessions per process": journal
descriptors are a cache of at most a quarter of the limit (``journal/descriptors.py``), the
locks of a state dir one shared file (``journal/lock.py``); memory per idle session stays at most
64 KiB (issue 16's target, also measured by ``bench/cases/memory.py``); and running out of
descriptors anyway is a clear refusal (``SessionUnavailable``, reason ``too_many_open_files``),
never a crash.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from acp_agent.journal.descriptors import MAX_CAPACITY
from tests.support.descriptors import FD_LIMIT, at_most_fd_limit
from tests.support.durability import REPO_ROOT

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(300)]

COUNT = 10_000


def test_ten_thousand_idle_sessions_under_a_1024_descriptor_limit(
    shm_state: Path, workspace: Path
) -> None:
    argv = [sys.executable, "-m", "tests.durability.ten_thousand"]
    child = subprocess.run(
        [*argv, str(shm_state), str(workspace), str(COUNT)],
        cwd=REPO_ROOT,
        preexec_fn=at_most_fd_limit,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-4000:]
    report = json.loads(child.stdout)
    assert report["limit"] == FD_LIMIT
    # every session/new succeeded, and the descriptors did not grow with them
    assert report["fds_after"] - report["fds_before"] <= MAX_CAPACITY
    assert report["fds_prompted"] < FD_LIMIT // 2
    assert report["kib_per_session"] <= 64, report["kib_per_session"]
    # the oldest sessions (their journals closed 10,000 sessions ago) prompt and reopen intact
    assert report["stops"] == ["end_turn"] * 3
    assert report["reopened"] == [[f"question {n}", f"answer {n}"] for n in range(3)]
    # out of descriptors: idle journals give theirs back to a new session; with none left, a
    # refusal that says so; a prompt then runs but its flush fails (reported, retried: the
    # writer's durability promise), and succeeds once descriptors are free again
    assert report["rescued"] == "rescued"
    refused = report["refused"]
    assert refused is not None and refused["reason"] == "too_many_open_files", refused
    assert "run out of file descriptors" in refused["message"]
    assert f"RLIMIT_NOFILE {FD_LIMIT}" in refused["message"]
    assert report["exhausted_prompt"] == "end_turn"
    health = report["exhausted_health"]
    assert not health["healthy"] and health["unflushed"] > 0, health
    assert "Too many open files" in health["lastError"], health
    assert report["healed"] == {"healthy": True, "unflushed": 0, "lastError": None}
    assert report["middle"] == ["while exhausted", "answer 3"]
    assert report["after_exhaustion"] == "one-too-many"
    assert (shm_state / "sessions" / "one-too-many" / "journal.jsonl").is_file()
