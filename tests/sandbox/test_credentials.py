"""No command sees a credential the agent holds, under every policy, ``off`` included."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.model.config import ProviderEntry
from acp_agent.model.registry import ModelCatalog
from acp_agent.sandbox.credentials import is_credential, scrubbed
from acp_agent.sandbox.guard import Sandbox
from acp_agent.sandbox.policy import SandboxPolicy
from acp_agent.tools.run_command import RunCommand
from tests.sandbox.support import WHY_NO_SANDBOX, confined, text

SECRETS = {
    "OPENAI_API_KEY": "sk-openai-secret",
    "my_api_key": "lowercase-secret",
    "GITHUB_TOKEN": "gh-secret",
    "ACP_AGENT_TOKEN": "listen-secret",
    "LOCAL_LLM_PASSWORD": "named-by-the-config",
}


def test_what_counts_as_a_credential() -> None:
    named = frozenset({"LOCAL_LLM_PASSWORD"})
    for name in SECRETS:
        assert is_credential(name, named), name
    for name in ("PATH", "HOME", "TOKENIZERS_PARALLELISM", "API_KEY_FILE", "MY_TOKEN_COUNT"):
        assert not is_credential(name, named), name
    env = {"PATH": "/bin", **SECRETS}
    assert scrubbed(env, named) == {"PATH": "/bin"}


def test_the_providers_name_their_keys() -> None:
    config = {
        "local": ProviderEntry(base_url="http://127.0.0.1:1/v1", api_key_env="LOCAL_LLM_PASSWORD")
    }
    names = ModelCatalog(None, config, env={}).key_names()
    assert names == {"OPENAI_API_KEY", "DEEPSEEK_API_KEY", "LOCAL_LLM_PASSWORD"}


@pytest.mark.parametrize("policy", list(SandboxPolicy))
async def test_a_command_sees_no_credential(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, policy: SandboxPolicy
) -> None:
    if policy.confined and WHY_NO_SANDBOX is not None:
        pytest.skip(WHY_NO_SANDBOX)
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("KEPT_SETTING", "visible")
    sandbox = Sandbox(tmp_path / "state", key_names=frozenset({"LOCAL_LLM_PASSWORD"}))
    output = await RunCommand().run(
        {"command": "env"}, confined(workspace, policy, sandbox=sandbox)
    )
    shown = text(output)
    assert shown.startswith(f"sandbox: {policy}\n")
    assert "KEPT_SETTING=visible" in shown
    for name, value in SECRETS.items():
        assert value not in shown and f"{name}=" not in shown, name
