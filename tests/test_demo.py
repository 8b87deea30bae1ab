"""``make run``'s main job: show the design note over a real stdio session, labelled step by step
(an idle injection, context staged during a tool batch, the journal check), scripted without a
key and with the real provider when one is configured."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_agent.demo.__main__ import IDLE_CONTEXT, SESSION_ID, STAGED_CONTEXT, real_model

KEYLESS_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
HEADINGS = (
    "== Setup: initialize, session/new ==",
    "== Step 1: idle injection",
    "== Step 2: a prompt whose turn runs a tool batch",
    "== Step 3: the journal on disk, and `acp-agent journal check`",
)


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_agent.demo", *args], env=KEYLESS_ENV, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip


def sections(stdout: str) -> dict[str, str]:
    """The output under each heading, keyed by the heading's label (``Setup``, ``Step 1``...)."""
    parts = re.split(r"^== (.+?)(?::.*)? ==$", stdout, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def placements(section: str) -> list[dict[str, Any]]:
    """The ``_acp_agent/inject`` answers printed in a section."""
    answers = re.findall(r"^  ← response id=\d+ (\{.*\"placement\".*\})$", section, re.MULTILINE)
    return [json.loads(answer) for answer in answers]


def journal(state: Path) -> list[dict[str, Any]]:
    lines = (state / "sessions" / SESSION_ID / "journal.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["type"] == "session"
    return [json.loads(line) for line in lines[1:]]


def message(events: list[dict[str, Any]], text: str) -> int:
    (index,) = [
        i
        for i, e in enumerate(events)
        if e["type"] == "user/message" and e["data"]["content"] == [{"type": "text", "text": text}]
    ]
    return index


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def journal_check(state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_agent", "journal", "check", SESSION_ID, "--state-dir",
         str(state)], capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def test_without_keys_the_demo_shows_the_design_note_step_by_step(tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = run_demo("--state-dir", str(state))
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "(no provider key set: the scripted demo)" in out
    headings = [line for line in out.splitlines() if line.startswith("== ")]
    assert len(headings) == len(HEADINGS)
    for line, expected in zip(headings, HEADINGS, strict=True):
        assert line.startswith(expected)
    parts = sections(out)
    assert list(parts) == ["Setup", "Step 1", "Step 2", "Step 3"]
    events = journal(state)

    # Step 1: the idle injection is answered `appended` and opens no turn.
    (idle,) = placements(parts["Step 1"])
    assert idle["placement"] == "appended"
    assert "user_message_chunk" in parts["Step 1"]
    assert "turn/start" not in parts["Step 1"]
    i = message(events, IDLE_CONTEXT)
    assert events[i]["data"]["id"] == idle["messageId"]
    assert events[i]["data"]["source"] == {"kind": "client"}
    ends = [j for j in range(i) if events[j]["type"] == "turn/end"]
    since = ends[-1] + 1 if ends else 0
    assert "turn/start" not in types(events[since:i]), "the idle injection opened a turn"
    assert types(events[: i + 2])[-2:] == ["user/message", "turn/start"]

    # Step 2: context injected while the tool batch runs is staged and drained after the whole
    # batch, before the next step/start.
    (staged,) = placements(parts["Step 2"])
    assert staged["placement"] == "staged"
    assert '"stopReason": "end_turn"' in parts["Step 2"]
    s = message(events, STAGED_CONTEXT)
    assert events[s]["data"]["id"] == staged["messageId"]
    assert events[s]["data"]["source"]["kind"] == "x-ci"
    (batch,) = [
        e["data"]
        for e in events
        if e["type"] == "assistant/message"
        and sum(part["type"] == "tool-call" for part in e["data"]["content"]) == 2
    ]
    in_batch = [
        j
        for j, e in enumerate(events)
        if e["type"] in ("tool/call", "tool/result")
        and (e["data"]["turn"], e["data"]["step"]) == (batch["turn"], batch["step"])
    ]
    assert types([events[j] for j in in_batch]) == ["tool/call"] * 2 + ["tool/result"] * 2
    last_result = in_batch[-1]
    assert last_result < s, "the staged context landed inside the tool batch"
    starts = [j for j in range(last_result, len(events)) if events[j]["type"] == "step/start"]
    assert starts, "no step after the batch"
    assert s < starts[0], "the staged context came after the next step/start"
    assert events[starts[0]]["data"] == {"turn": batch["turn"], "step": batch["step"] + 1}
    assert types(events[last_result:]) == [
        "tool/result", "step/end", "user/message", "step/start", "assistant/message", "step/end",
        "turn/end",
    ]  # fmt: skip

    # Step 3: the journal check passes, in the demo and again here.
    assert "  demo: ok\n" in parts["Step 3"]
    assert "(exit 0: the journal check passes)" in parts["Step 3"]
    assert parts["Step 3"].count("  ok   ") == 4
    assert "FAIL" not in out
    assert journal_check(state).returncode == 0
    assert out.splitlines()[-1] == (
        "Shown: an idle inject appended with no turn; context injected mid-batch staged and "
        "drained after the whole tool batch; the journal check passing."
    )


def test_a_model_that_runs_no_tool_batch_still_shows_idle_injection_and_check(
    tmp_path: Path,
) -> None:
    """What a real model may do: answer without tools. Step 2 then says so; nothing fails."""
    script = tmp_path / "script.jsonl"
    script.write_text('{"text": "Start with the journal."}\n')
    state = tmp_path / "state"
    result = run_demo("--model", f"script:{script}", "--state-dir", str(state))
    assert result.returncode == 0, result.stdout + result.stderr
    parts = sections(result.stdout)
    assert "there was no batch to inject into" in parts["Step 2"]
    assert placements(parts["Step 2"]) == []
    assert "  demo: ok\n" in parts["Step 3"]
    events = journal(state)
    assert types(events) == [
        "user/message", "turn/start", "user/message", "step/start", "assistant/message",
        "step/end", "turn/end",
    ]  # fmt: skip
    assert "no mid-batch injection (the model ran no tool batch)" in result.stdout


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"OPENAI_API_KEY": "k"}, "openai:gpt-4o-mini"),
        ({"DEEPSEEK_API_KEY": "k"}, "deepseek:deepseek-flash"),
        ({"ACP_AGENT_MODEL": "local:qwen3", "OPENAI_API_KEY": "k"}, "local:qwen3"),
        ({"ACP_AGENT_MODEL": "script:/x.jsonl"}, None),
    ],
)
def test_a_configured_real_provider_is_chosen(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str | None
) -> None:
    for name in ("ACP_AGENT_MODEL", "OPENAI_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert real_model() == expected
