"""``[sandbox] mode`` in the config file: each policy, and every bad value a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.config_file import ConfigError
from acp_agent.sandbox.config import SandboxConfig, sandbox_config_from
from acp_agent.sandbox.policy import SandboxPolicy

PATH = Path("/etc/acp-agent.toml")


@pytest.mark.parametrize("policy", list(SandboxPolicy))
def test_each_policy_is_read(policy: SandboxPolicy) -> None:
    assert sandbox_config_from({"sandbox": {"mode": str(policy)}}, PATH).mode is policy


def test_no_table_or_no_mode_is_the_default() -> None:
    assert sandbox_config_from({}, PATH) == SandboxConfig()
    assert sandbox_config_from({"sandbox": {}}, PATH).mode is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"mode": "strict"},
            "/etc/acp-agent.toml: sandbox.mode: unknown sandbox mode 'strict'; one of read-only, "
            "workspace-write, workspace-write-network, off",
        ),
        ({"mode": 1}, "sandbox.mode: unknown sandbox mode 1"),
        ({"mode": "off", "network": True}, "sandbox.network: unknown key; [sandbox] has: mode"),
    ],
)
def test_a_bad_table_is_an_error_naming_the_key(table: object, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        sandbox_config_from({"sandbox": table}, PATH)
    assert message in str(error.value)


def test_a_sandbox_that_is_no_table_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"sandbox: expected a table \(\[sandbox\]\)"):
        sandbox_config_from({"sandbox": "off"}, PATH)
