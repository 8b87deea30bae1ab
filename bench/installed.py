"""An interpreter that has ``acp_agent`` the way a user's install has it, for the start-up figures.

Why: the development venv (``make install``) has the project as an *editable* install, and
setuptools makes that work with a path hook that ``site`` imports in every process of the venv,
``python -c pass`` included. That hook imports ``pathlib`` (with ``urllib.parse``,
``ipaddress``, ``fnmatch``), ``re``, ``collections``, ``contextlib``, ``enum`` and
``importlib.util``, about 14 ms here. In that venv the floor is paid for those imports, and
our start-up gets them for free, although msgspec, argparse and our options need most of them.
A user's ``pipx``, ``uv tool`` or ``pip install`` copy has no such hook, so there they are ours
to pay (one run of ``--only startup``: the floor 24.7 → 11.1 ms, ours 20.7 → 36.0 ms above it).

What: a venv (no pip, made by ``venv`` in the run's scratch directory) whose ``site-packages``
holds ``acp_agent`` as a plain package directory (a symlink to the checkout's, so its byte code
is the one ``bench/__main__.py`` wrote) and one ``.pth`` line naming the development venv's
``site-packages``, for the dependencies. A ``.pth`` line that names a directory only appends it
to ``sys.path``: the ``.pth`` files *in* it (the editable hook's) are not run. The agent is
spawned from a directory without a checkout in it, so ``python -m`` cannot find ours there.
"""

from __future__ import annotations

import subprocess
import sysconfig
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def installed_python(root: Path, package: Path = REPO / "acp_agent") -> Path:
    """Make the venv under ``root`` (once) and return its interpreter; ``package``: the
    ``acp_agent`` directory it has (another checkout's, for an A/B of two trees)."""
    env = root / "installed-venv"
    python = env / "bin" / "python"
    if python.exists():
        return python
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env)
    scheme = {"base": str(env), "platbase": str(env)}
    site_packages = Path(sysconfig.get_path("purelib", vars=scheme))
    (site_packages / "acp_agent").symlink_to(package, target_is_directory=True)
    deps = sysconfig.get_paths()["purelib"]
    (site_packages / "project-dependencies.pth").write_text(deps + "\n", encoding="utf-8")
    return python


def check(python: Path, cwd: Path) -> None:
    """That ``python`` imports ours from its own ``site-packages`` and no editable hook at all."""
    probe = "import sys, acp_agent; print(acp_agent.__file__); print(sorted(sys.modules))"
    out = subprocess.run(
        [str(python), "-c", probe], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    where, modules = out[0], out[1]
    if not where.startswith(str(python.parent.parent)):
        raise RuntimeError(f"the installed copy's acp_agent came from {where}")
    if "__editable__" in modules:
        raise RuntimeError("the installed copy imported an editable install's hook")
