"""The README's Python API example runs as written, importing nothing but ``acp_agent.api``."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import msgspec

from acp_agent import api
from acp_agent.model.script import ScriptLine

README = Path(__file__).resolve().parents[1] / "README.md"


def example() -> str:
    section = README.read_text(encoding="utf-8").split("### Python API\n", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, "no python block under ### Python API"
    return found.group(1)


def test_the_example_imports_only_the_public_api() -> None:
    tree = ast.parse(example())
    modules = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert modules == {"acp_agent.api"}
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert names <= set(api.__all__)


async def test_the_example_runs(tmp_path: Path) -> None:
    path = tmp_path / "script.jsonl"
    path.write_bytes(msgspec.json.encode(ScriptLine(text="Done.")) + b"\n")
    code = "async def main(state_dir, path, project):\n" + textwrap.indent(example(), "    ")
    namespace: dict[str, object] = {}
    exec(compile(code, str(README), "exec"), namespace)
    await namespace["main"](tmp_path / "state", path, tmp_path)  # type: ignore[operator]
    settings = (tmp_path / "state" / "sessions").glob("*/settings.json")
    assert [msgspec.json.decode(p.read_bytes()) for p in settings] == [{"mode": "auto-edit"}]
