"""Workspace instruction files found in the cwd, with their plugin source."""

from __future__ import annotations

from pathlib import Path

from acp_agent.content import TextContent
from acp_agent.session.workspace import MAX_BYTES, find_instructions


def test_found_files_in_order_with_a_plugin_source(workspace: Path) -> None:
    (workspace / ".github").mkdir()
    (workspace / ".github" / "copilot-instructions.md").write_text("copilot", encoding="utf-8")
    (workspace / "AGENTS.md").write_text("Use tabs.\n", encoding="utf-8")
    (workspace / "CLAUDE.md").write_text("   \n", encoding="utf-8")  # empty: skipped
    found = find_instructions(workspace)
    assert [f.source for f in found] == [
        {"kind": "plugin", "name": "workspace-instructions", "path": str(workspace / "AGENTS.md")},
        {
            "kind": "plugin",
            "name": "workspace-instructions",
            "path": str(workspace / ".github" / "copilot-instructions.md"),
        },
    ]
    assert found[0].content == [
        TextContent(text="Workspace instructions from AGENTS.md:\n\nUse tabs.")
    ]


def test_none_without_files_and_links_out_are_ignored(tmp_path: Path, workspace: Path) -> None:
    assert find_instructions(workspace) == []
    (tmp_path / "elsewhere.md").write_text("secret", encoding="utf-8")
    (workspace / "AGENTS.md").symlink_to(tmp_path / "elsewhere.md")
    assert find_instructions(workspace) == []


def test_a_huge_file_is_cut(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("x" * (MAX_BYTES + 10), encoding="utf-8")
    (found,) = find_instructions(workspace)
    block = found.content[0]
    assert isinstance(block, TextContent)
    assert block.text.endswith("the rest was left out]") and len(block.text) < MAX_BYTES + 200
