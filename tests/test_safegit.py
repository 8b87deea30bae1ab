"""``safegit``: the git the agent runs on a user's repository runs none of the programs a hostile
repository's configuration names, and writes nothing under its ``.git``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from acp_agent.safegit import defined_filters, filters_off, git_env, user_git
from tests.support.hostile_git import make_hostile_repo


def test_the_hostile_repo_really_runs_its_programs_for_a_plain_git(tmp_path: Path) -> None:
    repo = make_hostile_repo(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "diff", "HEAD"], cwd=repo.root, env=env, capture_output=True)
    ran = repo.markers()
    assert "fsmonitor" in ran
    assert "filter-clean" in ran or "filter-process" in ran


def test_status_and_diff_run_no_program_of_the_repository(tmp_path: Path) -> None:
    repo = make_hostile_repo(tmp_path)
    before = repo.git_dir_digest()
    status = user_git(repo.root, ["status", "--short", "--ignore-submodules=all"], timeout=10)
    diff = user_git(
        repo.root,
        ["diff-index", "-p", "HEAD", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all"],
        timeout=10,
    )
    cached = user_git(repo.root, ["diff-files", "-p", "--no-ext-diff", "--no-textconv"], timeout=10)
    assert status.returncode == 0, status.stderr
    assert diff.returncode == 0, diff.stderr
    assert cached.returncode == 0, cached.stderr
    assert b" M a.txt" in status.stdout and b"?? new.txt" in status.stdout
    assert b"+changed" in diff.stdout
    assert repo.markers() == []
    assert repo.git_dir_digest() == before


def test_every_defined_filter_driver_is_listed_and_emptied(tmp_path: Path) -> None:
    repo = make_hostile_repo(tmp_path)
    drivers = defined_filters(repo.root, timeout=10)
    assert drivers == ["evil", "proc"]
    settings = dict(filters_off(drivers))
    assert settings["filter.evil.clean"] == "" and settings["filter.proc.process"] == ""
    assert settings["filter.evil.required"] == "false"


def test_a_driver_name_with_dots_and_spaces_is_emptied_too(tmp_path: Path) -> None:
    repo = make_hostile_repo(tmp_path)
    marker = repo.marker_dir / "odd"
    with (repo.root / ".git" / "config").open("a") as out:
        out.write(f'[filter "a.b c=d"]\n\tclean = "touch {marker}; cat"\n')
    (repo.root / ".gitattributes").write_text('*.txt filter="a.b c=d"\n')
    assert "a.b c=d" in defined_filters(repo.root, timeout=10)
    user_git(repo.root, ["diff", "--no-ext-diff", "--no-textconv"], timeout=10)
    assert repo.markers() == []


def test_the_agents_own_git_variables_do_not_reach_git() -> None:
    env = git_env(base={"GIT_DIR": "/elsewhere", "GIT_CONFIG_PARAMETERS": "'x.y=z'", "HOME": "/h"})
    assert "GIT_DIR" not in env and "GIT_CONFIG_PARAMETERS" not in env
    assert env["HOME"] == "/h" and env["GIT_CONFIG_NOSYSTEM"] == "1"
    keys = {env[f"GIT_CONFIG_KEY_{n}"] for n in range(int(env["GIT_CONFIG_COUNT"]))}
    assert {"core.fsmonitor", "core.hooksPath", "diff.external", "core.pager"} <= keys
