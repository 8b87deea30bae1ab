"""An exported page in a real browser: headless Chromium (Debian's ``chromium``) driven by
Playwright (``playwright-core``, pinned in the Makefile, installed by ``make install`` under
``.cache/npm-tools``; never a browser download of its own).

The page must render with no console message, no page error and no network request, show its
structure (turn blocks, out-of-turn messages with their source, tool calls, folded thoughts
that unfold, a loaded image), and leave a screenshot: under the test's tmp dir and copied to
``.cache/test-artifacts/export/`` (the path is printed; not a JUnit property: CI writes its
report as xunit2, where ``record_property`` is an error). Skipped, saying why, only where
``chromium`` or ``node`` is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from acp_agent.turn.titles import title_from
from tests.export.sample import HOSTILE_TITLE, SESSION_ID, large_events, write_sample
from tests.support.acp_schema import REPO_ROOT
from tests.support.process import agent_command

PLAYWRIGHT_CORE_VERSION = "1.65.1"  # PLAYWRIGHT_CORE_VERSION in the Makefile
PLAYWRIGHT = REPO_ROOT / ".cache" / "npm-tools" / "node_modules"
CHECK = Path(__file__).with_name("browser_check.mjs")
ARTIFACTS = REPO_ROOT / ".cache" / "test-artifacts" / "export"

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(120)]


def export(*argv: str) -> int:
    """``acp-agent journal export ...`` as a user runs it: a process of its own (run in this
    one, it would configure this process's logging and blind every later ``capture_logs``)."""
    done = subprocess.run([*agent_command("journal", "export"), *argv], check=False, timeout=60)
    return done.returncode


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium)")
    return found


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("no node on PATH (the browser test drives Chromium with playwright-core)")
    return found


def open_in_browser(
    page: Path, shot: Path, profile: Path, *, whole_page: bool = True
) -> dict[str, object]:
    browser, runtime = chromium(), node()
    package = PLAYWRIGHT / "playwright-core" / "package.json"
    if not package.is_file():
        pytest.fail(f"playwright-core is missing under {PLAYWRIGHT}: run `make install`")
    assert json.loads(package.read_text())["version"] == PLAYWRIGHT_CORE_VERSION
    argv = [runtime, str(CHECK), str(PLAYWRIGHT), browser, str(page), str(shot), str(profile)]
    argv += [] if whole_page else ["viewport"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def keep(shot: Path, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    kept = ARTIFACTS / name
    shutil.copyfile(shot, kept)
    print(f"screenshot: {kept} (and {shot})")
    return kept


def test_the_exported_page_renders_offline_with_its_structure(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_sample(state)
    page = tmp_path / "export.html"
    assert export(SESSION_ID, "--state-dir", str(state), "-o", str(page)) == 0

    shot = tmp_path / "export.png"
    report = open_in_browser(page, shot, tmp_path / "profile")

    assert report["console"] == [] and report["page_errors"] == []
    assert report["requests"] == []
    structure = report["structure"]
    assert isinstance(structure, dict)
    # a title holds no control character once read (docs/contract.md §11): what is left is text
    assert structure["title"] == title_from(HOSTILE_TITLE) + " · acp-agent"
    assert "<script>" in structure["title"]  # shown as text, not run
    assert structure["turns"] == ["turn-1", "turn-2"]
    assert structure["messages"] == [
        {"id": "seq-1", "source": "client"},
        {"id": "seq-2", "source": "hook"},
        {"id": "seq-15", "source": "task"},
    ]
    assert structure["tools"] == ["edit_file", "run_command"]
    assert structure["thoughts_folded"] == [True] and structure["thought_text_visible"] is False
    assert report["unfolded"] is True
    assert structure["images"] == [{"loaded": True, "src": "data:image/png;base64,"}]
    assert structure["diffs"] == 1 and structure["scripts"] == 0 and structure["injected"] == 0
    assert structure["timeline"] == ["#seq-1", "#seq-2", "#turn-1", "#seq-15", "#seq-16", "#turn-2"]
    assert structure["body_width"] == 1100  # nothing overflows the viewport sideways
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep(shot, "sample.png")


def test_a_large_session_opens_in_the_browser(tmp_path: Path) -> None:
    """1,200 turns, 10,800 events (1.4 MB of HTML): the per-test timeout is the bound."""
    state = tmp_path / "state"
    write_sample(state, "big", large_events(1200))
    page = tmp_path / "big.html"
    assert export("big", "--state-dir", str(state), "-o", str(page)) == 0
    shot = tmp_path / "big.png"
    report = open_in_browser(page, shot, tmp_path / "profile", whole_page=False)
    assert report["console"] == [] and report["page_errors"] == [] and report["requests"] == []
    structure = report["structure"]
    assert isinstance(structure, dict)
    assert len(structure["turns"]) == 1200 and len(structure["tools"]) == 1200
    assert len(structure["timeline"]) == 1200  # its contexts are drained into the turns
    keep(shot, "large.png")
