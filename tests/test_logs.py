"""``logs.Logger`` writes an event as the structlog set-up of ``logs.configure`` would, without
importing structlog until an event needs it (a traceback), and drops what is below the level.

Run in a fresh interpreter: the test process has structlog imported, and then every event goes
to structlog (which is what ``capture_logs`` relies on).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import io, json, sys
from pathlib import Path
from acp_agent import logs

def events(log):
    log.debug("below_the_level")
    log.info("an_event", n=1, path=Path("/a"), nested={"k": [1, 2]})
    log.warning("a_warning", level_word="kept")

plain = io.StringIO()
logs.configure("info", stream=plain)
log = logs.get_logger("t").bind(session_id="s1")
events(log)
before = "structlog" in sys.modules
try:
    raise ValueError("boom")
except ValueError:
    log.exception("with_a_traceback")
after = "structlog" in sys.modules
# the same events through structlog itself, configured by logs.configure
again = io.StringIO()
logs.configure("info", stream=again)
events(logs.get_logger("t").bind(session_id="s1"))
print(json.dumps({"before": before, "after": after, "plain": plain.getvalue(),
                  "structlog": again.getvalue()}))
"""


def run() -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=30
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def without_time(line: str) -> tuple[list[str], dict[str, object]]:
    event = json.loads(line)
    assert str(event.pop("timestamp")).endswith("Z")
    return list(event), event


def test_plain_events_are_written_as_structlog_writes_them_without_importing_it() -> None:
    result = run()
    assert result["before"] is False  # two events written, one dropped: no structlog
    assert result["after"] is True  # a traceback is structlog's to render
    plain = str(result["plain"]).splitlines()
    structlogs = str(result["structlog"]).splitlines()
    assert len(plain) == 3 and len(structlogs) == 2  # below the level: nothing, either way
    for mine, theirs in zip(plain[:2], structlogs, strict=True):
        # the same keys in the same order, the same values, the same separators
        assert without_time(mine) == without_time(theirs)
        assert mine.split('"timestamp"')[0] == theirs.split('"timestamp"')[0]
    assert json.loads(plain[0])["path"] == "PosixPath('/a')"  # repr, as structlog's fallback
    traceback = json.loads(plain[2])
    assert traceback["event"] == "with_a_traceback" and traceback["level"] == "error"
    assert traceback["exception"][0]["exc_type"] == "ValueError"


EXIT_WITHOUT_SHUTDOWN = r"""
import sys
from acp_agent import logs

logs.configure("info", sys.argv[1])
log = logs.get_logger("t")
for n in range(2000):
    log.info("line", n=n)
"""


def test_a_process_that_exits_without_shutdown_keeps_its_log_lines(tmp_path: Path) -> None:
    # The log file is written by a daemon thread (logs.QueuedSink): a host process of the
    # Python API that never calls logs.shutdown still has every line written at its exit.
    log = tmp_path / "host.log"
    subprocess.run([sys.executable, "-c", EXIT_WITHOUT_SHUTDOWN, str(log)], check=True, timeout=30)
    numbers = [json.loads(line)["n"] for line in log.read_text().splitlines()]
    assert numbers == list(range(2000))
