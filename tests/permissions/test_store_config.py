"""The project store (under the state dir, atomic, shared across processes) and the config
file's ``[permissions]`` table (every bad entry a ``ConfigError`` naming it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from acp_agent.config_file import ConfigError
from acp_agent.permissions.book import RemoveRefused, RuleBook
from acp_agent.permissions.config import rules_from
from acp_agent.permissions.patterns import parse_pattern
from acp_agent.permissions.rules import Effect, Rule, Source
from acp_agent.permissions.store import ProjectStore

CONFIG = Path("/etc/acp-agent.toml")


def allow(text: str, source: Source = Source.PROJECT) -> Rule:
    return Rule(Effect.ALLOW, parse_pattern(text), source)


def test_a_saved_rule_is_a_json_file_under_the_state_dir(tmp_path: Path) -> None:
    store = ProjectStore(tmp_path / "state", str(tmp_path / "w"))
    store.add(allow("run_command(git *)"))
    store.add(allow("run_command(git *)"))  # once only
    assert store.path.parent == tmp_path / "state" / "permissions"
    saved = json.loads(store.path.read_text(encoding="utf-8"))
    assert saved == {
        "cwd": str(tmp_path / "w"),
        "rules": [{"effect": "allow", "pattern": "run_command(git *)"}],
    }
    assert store.path.stat().st_mode & 0o777 == 0o600
    assert not store.path.with_suffix(".tmp").exists()


def test_another_process_sees_and_adds_rules(tmp_path: Path) -> None:
    """Each addition is a locked read-modify-write: a rule another process saved is kept."""
    state, cwd = tmp_path / "state", str(tmp_path / "w")
    ProjectStore(state, cwd).add(allow("run_command(make *)"))
    script = (
        "import sys; from pathlib import Path\n"
        "from acp_agent.permissions.store import ProjectStore\n"
        "from acp_agent.permissions.patterns import parse_pattern\n"
        "from acp_agent.permissions.rules import Effect, Rule, Source\n"
        "store = ProjectStore(Path(sys.argv[1]), sys.argv[2])\n"
        "print(','.join(r.pattern.text for r in store.rules()))\n"
        "store.add(Rule(Effect.ALLOW, parse_pattern('edit(**)'), Source.PROJECT))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(state), cwd], check=True, capture_output=True, text=True
    )
    assert out.stdout.splitlines()[0] == "run_command(make *)"
    assert [r.pattern.text for r in ProjectStore(state, cwd).rules()] == [
        "run_command(make *)",
        "edit(**)",
    ]


def test_same_cwd_by_realpath_other_cwd_apart(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "w")
    ProjectStore(tmp_path, str(tmp_path / "w")).add(allow("edit(**)"))
    assert ProjectStore(tmp_path, str(tmp_path / "link")).rules() != ()
    assert ProjectStore(tmp_path, str(tmp_path / "other")).rules() == ()


def test_a_damaged_file_counts_as_no_rules(tmp_path: Path) -> None:
    store = ProjectStore(tmp_path, "/w")
    store.path.parent.mkdir(parents=True)
    store.path.write_text("{not json", encoding="utf-8")
    assert store.rules() == ()
    store.add(allow("edit(**)"))
    assert [r.pattern.text for r in store.rules()] == ["edit(**)"]


def test_listing_and_removing_by_number(tmp_path: Path) -> None:
    book = RuleBook((allow("run_command(ls *)", Source.CONFIG),), tmp_path, CONFIG)
    rules = book.for_session("/w")
    rules.add(allow("edit(**)"))
    rules.add(allow("web_fetch(example.com)", Source.SESSION))
    assert [(r.pattern.text, r.source) for r in rules.listed()] == [
        ("run_command(ls *)", "config"),
        ("edit(**)", "project"),
        ("web_fetch(example.com)", "session"),
    ]
    with pytest.raises(RemoveRefused, match=r"comes from the config file \(/etc/acp-agent.toml\)"):
        rules.remove(1)
    with pytest.raises(RemoveRefused, match="there is no rule 4 \\(there are 3\\)"):
        rules.remove(4)
    assert rules.remove(3).source is Source.SESSION
    assert rules.remove(2).source is Source.PROJECT
    assert book.for_session("/w").listed() == [allow("run_command(ls *)", Source.CONFIG)]


def test_config_rules_parse_in_precedence_order() -> None:
    table = {"allow": ["edit(src/**)"], "ask": ["run_command(git push *)"], "deny": ["read(.env)"]}
    rules = rules_from({"permissions": table}, CONFIG)
    assert [(r.effect, r.pattern.text, r.source) for r in rules] == [
        ("deny", "read(.env)", "config"),
        ("ask", "run_command(git push *)", "config"),
        ("allow", "edit(src/**)", "config"),
    ]
    assert rules_from({}, CONFIG) == ()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("yes", "permissions: expected a table"),
        ({"allowed": []}, "permissions.allowed: unknown key (expected allow, ask or deny)"),
        ({"deny": "run_command(rm *)"}, "permissions.deny: expected a list of patterns"),
        ({"ask": [3]}, "permissions.ask[0]: expected a pattern string, got 3"),
        ({"deny": ["read(.env)", "rm -rf"]}, "permissions.deny[1]: 'rm -rf' is not a pattern"),
        ({"allow": ["edit(../x)"]}, "permissions.allow[0]: 'edit(../x)': `..` is not allowed"),
    ],
)
def test_bad_config_entries_are_config_errors(table: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        rules_from({"permissions": table}, CONFIG)
    assert str(caught.value).startswith(f"{CONFIG}: ")
    assert message in str(caught.value)


def test_a_state_dir_inside_the_project_gives_no_project_rules(tmp_path: Path) -> None:
    """A repository could carry ``.state/permissions/<digest>.json``: it is never read."""
    workspace = tmp_path / "w"
    inside = RuleBook(state_dir=workspace / ".state")
    planted = ProjectStore(workspace / ".state", str(workspace))
    planted.add(allow("run_command(*)"))
    rules = inside.for_session(str(workspace))
    assert rules.store is None and rules.listed() == []
    assert RuleBook(state_dir=tmp_path / "state").for_session(str(workspace)).store is not None
