"""``pip wheel``, ``pipx install .`` and ``uvx --from . acp-agent`` on a clean copy of the repo.

The wheel must carry every module and every data file the package reads at run time (the
demo script, ``py.typed``) and nothing else (tests, fixtures, benchmarks, caches); the installed
console script must answer ``--version`` and an ``initialize`` over stdio. These tests need
PyPI (build requirements and dependencies) like ``make install`` does.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest
from uv import find_uv_bin

from acp_agent import __version__
from tests.packaging.support import (
    build_wheel,
    clean_env,
    copy_repository,
    run,
    stdio_session,
)

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(240)]

JUNK = ("tests/", "fixtures/", "bench/", "docs/", "schemas/", "__pycache__/", ".pyc", ".cache/")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_repository(tmp_path_factory.mktemp("repo"))


@pytest.fixture(scope="module")
def wheel(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(source, tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def _package_files(source: Path) -> set[str]:
    """Every file of the import package in the copy (what git would commit)."""
    package = source / "acp_agent"
    return {path.relative_to(source).as_posix() for path in package.rglob("*") if path.is_file()}


def test_the_wheel_carries_every_module_and_data_file(source: Path, wheel_names: set[str]) -> None:
    missing = _package_files(source) - wheel_names
    assert not missing, f"not in the wheel: {sorted(missing)}"
    assert {"acp_agent/py.typed", "acp_agent/demo/script.jsonl"} <= wheel_names


def test_the_wheel_carries_no_tests_or_junk(wheel_names: set[str]) -> None:
    junk = sorted(name for name in wheel_names if any(part in name for part in JUNK))
    assert not junk
    top = {name.split("/")[0] for name in wheel_names}
    assert top == {"acp_agent", f"acp_agent_server-{__version__}.dist-info"}


def test_the_wheel_declares_the_console_script(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        info = f"acp_agent_server-{__version__}.dist-info"
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
        metadata = archive.read(f"{info}/METADATA").decode()
    # the distribution's own name (acp-agent on PyPI is another project), the command kept
    assert "Name: acp-agent-server" in metadata
    assert "acp-agent = acp_agent.cli:main" in entry_points
    assert "acp-agent-server = acp_agent.cli:main" in entry_points
    assert "Requires-Python: >=3.11" in metadata


def _check_installed(command: list[str], env: dict[str, str], state_dir: Path) -> None:
    version = run([*command, "--version"], env=env)
    assert version.stdout.strip() == f"acp-agent {__version__}"
    frame = stdio_session(command, env, state_dir)
    assert frame["id"] == 1
    result = frame["result"]
    assert isinstance(result, dict)
    assert result["protocolVersion"] == 1


def test_pipx_install_gives_a_working_acp_agent(source: Path, tmp_path: Path) -> None:
    env = clean_env(
        PIPX_HOME=str(tmp_path / "pipx"),
        PIPX_BIN_DIR=str(tmp_path / "bin"),
        PIPX_MAN_DIR=str(tmp_path / "man"),
        PIPX_DEFAULT_PYTHON=sys.executable,
    )
    run([sys.executable, "-m", "pipx", "install", str(source)], env=env)
    _check_installed([str(tmp_path / "bin" / "acp-agent")], env, tmp_path / "state")


def test_uvx_runs_acp_agent_from_the_source_tree(source: Path, tmp_path: Path) -> None:
    env = clean_env(
        UV_CACHE_DIR=str(tmp_path / "uv-cache"),
        UV_TOOL_DIR=str(tmp_path / "uv-tools"),
        UV_TOOL_BIN_DIR=str(tmp_path / "bin"),
        UV_PYTHON=sys.executable,
        UV_PYTHON_DOWNLOADS="never",
        UV_NO_CONFIG="1",
    )
    uvx = Path(find_uv_bin()).with_name("uvx")
    command = [str(uvx), "--from", str(source), "acp-agent"] if uvx.exists() else []
    command = command or [find_uv_bin(), "tool", "run", "--from", str(source), "acp-agent"]
    _check_installed(command, env, tmp_path / "state")
