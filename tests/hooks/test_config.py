"""The [hooks] tables of the config file: what loads, and how each mistake is reported."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from acp_agent.hooks import CommandHook, Config, ConfigError, FailPolicy, HookKind, load_config

VALID = """
[providers.openai]
api_key_env = "OPENAI_API_KEY"

[[hooks.prompt_submit]]
command = ["python3", "/abs/first.py"]

[[hooks.prompt_submit]]
command = ["/bin/second", "--flag"]
timeout_ms = 250
fail = "closed"

[[hooks.pre_tool]]
command = ["guard"]
matcher = "read_.*|write_file"

[[hooks.post_tool]]
command = ["lint"]
matcher = "*"

[tools]
anything = true
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_none_is_the_empty_config() -> None:
    assert load_config(None) == Config()


def test_a_valid_file(tmp_path: Path) -> None:
    path = write(tmp_path, VALID)
    config = load_config(path)
    assert config.path == path
    assert config.hooks.prompt_submit == (
        CommandHook(HookKind.PROMPT_SUBMIT, ("python3", "/abs/first.py")),
        CommandHook(HookKind.PROMPT_SUBMIT, ("/bin/second", "--flag"), 250, FailPolicy.CLOSED),
    )
    [pre] = config.hooks.pre_tool
    assert pre.kind is HookKind.PRE_TOOL
    assert pre.timeout_ms == 5000 and pre.fail is FailPolicy.OPEN
    assert pre.matcher == re.compile("read_.*|write_file")
    assert pre.matches("read_file") and pre.matches("write_file")
    assert not pre.matches("read") and not pre.matches("xwrite_file")
    [post] = config.hooks.post_tool
    assert post.matcher is None and post.matches("anything")


def test_a_file_without_hooks(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "[providers]\nx = 1\n")).hooks == Config().hooks


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[[hooks.prompt_submit]]\ntimeout_ms = 5\n",
            "hooks.prompt_submit[0]: Object missing required field `command`",
        ),
        (
            "[[hooks.pre_tool]]\ncommand = []\n",
            "hooks.pre_tool[0].command: Expected `array` of length >= 1",
        ),
        (
            '[[hooks.pre_tool]]\ncommand = [""]\n',
            "hooks.pre_tool[0].command[0]: Expected `str` of length >= 1",
        ),
        (
            '[[hooks.pre_tool]]\ncommand = "guard.sh"\n',
            "hooks.pre_tool[0].command: Expected `array`, got `str`",
        ),
        (
            '[[hooks.pre_tool]]\ncommand = ["a"]\n[[hooks.pre_tool]]\ncommand = ["b"]\nmatcher = "read_("\n',
            "hooks.pre_tool[1].matcher: invalid regular expression 'read_('",
        ),
        (
            '[[hooks.post_tool]]\ncommand = ["a"]\nfail = "maybe"\n',
            "hooks.post_tool[0].fail: Invalid enum value 'maybe' (expected one of 'open', 'closed')",
        ),
        (
            '[[hooks.post_tool]]\ncommand = ["a"]\ntimeout_ms = 0\n',
            "hooks.post_tool[0].timeout_ms: Expected `int` >= 1",
        ),
        (
            '[[hooks.post_tool]]\ncommand = ["a"]\ntimeout = 10\n',
            "hooks.post_tool[0]: Object contains unknown field `timeout`",
        ),
        (
            '[[hooks.prompt_submit]]\ncommand = ["a"]\nmatcher = "x"\n',
            "hooks.prompt_submit[0]: Object contains unknown field `matcher`",
        ),
        (
            '[[hooks.pre-tool]]\ncommand = ["a"]\n',
            "hooks: Object contains unknown field `pre-tool`",
        ),
        ("hooks = 3\n", "hooks: Expected `object`, got `int`"),
        ("[[hooks.pre_tool]\n", "invalid TOML"),
    ],
)
def test_errors_name_the_file_and_the_key_path(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_an_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the config file"):
        load_config(tmp_path / "missing.toml")


def test_the_example_in_the_contract_loads(tmp_path: Path) -> None:
    text = f"""
[[hooks.pre_tool]]
command = [{sys.executable!r}, "/abs/hook.py"]
timeout_ms = 5000
matcher = "read_file"
fail = "open"
"""
    [pre] = load_config(write(tmp_path, text)).hooks.pre_tool
    assert pre.command == (sys.executable, "/abs/hook.py")
