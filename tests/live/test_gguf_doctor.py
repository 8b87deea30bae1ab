"""``acp-agent doctor --model gguf:PATH`` with the real model: it loads, the exit code is 0."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.live.conftest import record_timing
from tests.live.test_gguf_agent import TOOLS_TEMPLATE
from tests.live.test_gguf_offline import doctor, model_findings

pytestmark = [pytest.mark.live, pytest.mark.subprocess, pytest.mark.timeout(120)]


def test_doctor_loads_the_model_and_exits_0(smollm2: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    report = doctor(tmp_path, f"gguf:{smollm2}")
    record_timing("doctor_gguf", run=time.monotonic() - started)
    assert report["exit_code"] == 0, report["problems"]
    by_check = {f["check"]: f for f in model_findings(report)}
    assert by_check["model.gguf"]["status"] == "ok"
    assert "loads in" in by_check["model.gguf"]["message"]
    # SmolLM2's own chat template has no tools: said, as a note (the exit code stays 0)
    assert by_check["model.gguf_tools"]["status"] == "note"


def test_doctor_with_a_tool_template_has_no_tools_note(smollm2: Path, tmp_path: Path) -> None:
    env = {"ACP_AGENT_GGUF_CHAT_TEMPLATE": str(TOOLS_TEMPLATE)}
    report = doctor(tmp_path, f"gguf:{smollm2}", env)
    assert report["exit_code"] == 0, report["problems"]
    checks = [f["check"] for f in model_findings(report)]
    assert "model.gguf" in checks and "model.gguf_tools" not in checks
