"""Choosing the journal store (``acp_agent/journal/store_choice.py``): flag, then env (the flag's
default), then ``[journal] store``, then files; a bad URL or a missing driver is a clear
configuration error, and the server exits 2 with it before serving anything."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from acp_agent.journal.store_choice import (
    POSTGRES_INSTALL_HINT,
    StoreConfigError,
    checked_url,
    redacted,
    store_url,
)
from tests.support.process import agent_command

PG = "postgresql://agent@/db?host=/run/pg"
CONFIG = Path("/etc/acp.toml")


def test_the_flag_wins_then_the_config_then_files() -> None:
    config = {"journal": {"store": PG}}
    assert store_url("file", config, CONFIG) == "file"
    assert store_url(None, config, CONFIG) == PG
    assert store_url(None, {}, None) == "file"


@pytest.mark.parametrize("table", [{"journal": "x"}, {"journal": {"store": 3}}])
def test_a_bad_journal_table_names_the_file(table: dict[str, object]) -> None:
    with pytest.raises(StoreConfigError, match=r"/etc/acp\.toml"):
        store_url(None, table, CONFIG)


def test_an_unknown_store_says_what_is_expected() -> None:
    with pytest.raises(StoreConfigError, match=r"expected 'file' or a libpq URI"):
        checked_url("mysql://root:pw@db/x")


def test_a_missing_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(StoreConfigError) as refused:
        checked_url("postgresql://agent:hunter2@db:5432/agent")
    assert POSTGRES_INSTALL_HINT in str(refused.value)
    assert "hunter2" not in str(refused.value)  # the password is never shown


def test_the_password_is_redacted() -> None:
    assert redacted("postgresql://u:pw@h:5432/d") == "postgresql://u:***@h:5432/d"
    assert redacted(PG) == PG


@pytest.mark.subprocess
def test_the_server_exits_2_on_a_bad_store(tmp_path: Path) -> None:
    argv = agent_command("--model", "script:/nonexistent", "--state-dir", str(tmp_path))
    done = subprocess.run(
        [*argv, "--journal-store", "mysql://x/y"],
        input=b"",
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert b"unknown journal store" in done.stderr
