"""``make run``'s main job: the scripted demo without a key, the real provider with one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from acp_agent.demo.__main__ import real_model


def test_without_keys_the_demo_is_scripted_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    result = subprocess.run(
        [sys.executable, "-m", "acp_agent.demo"], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "(no provider key set: the scripted demo)" in result.stdout
    assert '"stopReason": "end_turn"' in result.stdout
    assert '"type":"turn/end"' in result.stdout


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"OPENAI_API_KEY": "k"}, "openai:gpt-4o-mini"),
        ({"DEEPSEEK_API_KEY": "k"}, "deepseek:deepseek-chat"),
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
