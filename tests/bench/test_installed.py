"""The start-up bench's installed copy (``bench/installed.py``) has ours as a user's install has it.

What a user's ``pip install`` / ``pipx`` / ``uv tool`` venv looks like is set by the packaging
specs: an installed distribution is a plain package directory on ``site-packages``; ``site``
processes the ``.pth`` files of site directories only, and a ``.pth`` line naming a directory
adds it to ``sys.path`` without processing the ``.pth`` files inside it
(https://docs.python.org/3/library/site.html). An editable install is the exception: setuptools
adds a ``__editable__…finder`` module that a ``.pth`` line imports at every start
(https://setuptools.pypa.io/en/latest/userguide/development_mode.html).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench.installed import REPO, check, installed_python

PROBE = (
    "import sys, acp_agent, acp_agent.launch; print(acp_agent.__file__); "
    "print(any('__editable__' in name for name in sys.modules))"
)


def test_ours_comes_from_its_site_packages_and_no_editable_hook_runs(tmp_path: Path) -> None:
    python = installed_python(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    check(python, work)
    where, hooked = subprocess.run(
        [str(python), "-c", PROBE], cwd=work, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert Path(where).is_relative_to(tmp_path / "installed-venv")
    assert Path(where).resolve() == REPO / "acp_agent" / "__init__.py"  # the checkout's code
    assert hooked == "False"
    assert installed_python(tmp_path) == python  # made once per run


def test_the_check_refuses_an_interpreter_that_imports_ours_from_elsewhere(tmp_path: Path) -> None:
    python = installed_python(tmp_path)
    with pytest.raises(RuntimeError, match="acp_agent came from"):
        check(python, REPO)  # from the checkout's root, `-c` finds the checkout's copy first
