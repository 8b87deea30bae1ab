"""HookSet: in-process listeners and command hooks as one waterfall per extension point."""

from __future__ import annotations

import json
from pathlib import Path

from structlog.testing import capture_logs

from acp_agent.content import ContentBlock, TextContent
from acp_agent.hooks import (
    AdditionalContext,
    CommandHook,
    HookKind,
    HooksConfig,
    HookSet,
    PromptAllow,
    PromptBlock,
    PromptDecision,
    PromptEvent,
    PromptNext,
    ToolAllow,
    ToolBlock,
    ToolEvent,
    ToolNext,
    ToolResultView,
    load_config,
)
from acp_agent.hooks.waterfall import ToolDecision
from acp_agent.journal.events import ToolCallPart, source
from acp_agent.turn.admission import Admission, Allow, Block
from tests.hooks.support import hook, script

PROMPT: list[ContentBlock] = [TextContent(text="hello")]
PLUGIN = AdditionalContext([TextContent(text="from plugin")], source("plugin", name="p"))


def context_hook(tmp_path: Path, name: str, text: str) -> CommandHook:
    body = f"print({json.dumps(json.dumps({'additionalContexts': [{'content': text}]}))})"
    return hook(tmp_path, body, name=name)


def texts(result: Allow | Block) -> list[str]:
    assert isinstance(result, Allow)
    return [
        b.text for c in result.additional_contexts for b in c.content if isinstance(b, TextContent)
    ]


async def plugin(event: PromptEvent, next_: PromptNext) -> PromptDecision:
    downstream = await next_(event)
    if isinstance(downstream, PromptBlock):
        return downstream
    return PromptAllow(downstream.content, (PLUGIN, *downstream.additional_contexts))


async def test_an_empty_hookset_allows_everything(tmp_path: Path) -> None:
    hooks = HookSet()
    call = ToolCallPart("c", "read_file", {})
    assert await hooks.admit("s", tmp_path, PROMPT) == Allow(PROMPT)
    assert await hooks.pre_tool("s", tmp_path, call) == ToolAllow()
    result = ToolResultView(PROMPT, is_error=False)
    assert await hooks.post_tool("s", tmp_path, call, result) == ToolAllow()


async def test_in_process_first_then_command_hooks_in_file_order(tmp_path: Path) -> None:
    config = HooksConfig(
        prompt_submit=(
            context_hook(tmp_path, "one.py", "one"),
            context_hook(tmp_path, "two.py", "two"),
        )
    )
    hooks = HookSet.from_config(config, prompt_listeners=[plugin])
    result = await hooks.admit("s", tmp_path, PROMPT)
    assert texts(result) == ["from plugin", "one", "two"]
    assert isinstance(result, Allow)
    assert result.additional_contexts[0].source == PLUGIN.source
    assert result.additional_contexts[1].source == {
        "kind": "hook",
        "hook": "prompt_submit",
        "command": config.prompt_submit[0].command[0],
    }


async def test_a_replaced_prompt_is_what_the_next_hook_sees(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    rewrite = hook(
        tmp_path,
        """print('{"content": [{"type": "text", "text": "rewritten"}], "additionalContexts": [{"content": "r"}]}')""",
        name="rewrite.py",
    )
    record = hook(
        tmp_path,
        f"import shutil, sys; shutil.copyfileobj(sys.stdin, open({str(seen)!r}, 'w'))",
        name="record.py",
    )
    hooks = HookSet.from_config(HooksConfig(prompt_submit=(rewrite, record)))
    result = await hooks.admit("s", tmp_path, PROMPT)
    assert json.loads(seen.read_text())["prompt"] == [{"type": "text", "text": "rewritten"}]
    assert result == Allow(
        [TextContent(text="rewritten")],
        (AdditionalContext([TextContent(text="r")], rewrite.default_source()),),
    )


async def test_a_later_block_discards_earlier_contexts(tmp_path: Path) -> None:
    config = HooksConfig(
        prompt_submit=(
            context_hook(tmp_path, "one.py", "one"),
            hook(tmp_path, "import sys; sys.stderr.write('stop'); sys.exit(2)", name="block.py"),
        )
    )
    hooks = HookSet.from_config(config, prompt_listeners=[plugin])
    assert await hooks.admit("s", tmp_path, PROMPT) == Block("stop")


async def test_a_failed_command_hook_fails_open_and_the_chain_goes_on(tmp_path: Path) -> None:
    config = HooksConfig(
        prompt_submit=(
            hook(tmp_path, "raise SystemExit(1)", name="broken.py"),
            context_hook(tmp_path, "two.py", "two"),
        )
    )
    with capture_logs() as logs:
        result = await HookSet.from_config(config).admit("s", tmp_path, PROMPT)
    assert texts(result) == ["two"]
    [failed] = [e for e in logs if e["event"] == "hook_failed"]
    assert "broken.py" in failed["name"]
    assert "exited with status 1" in failed["error"]


async def test_admission_for_binds_the_session_cwd(tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    h = hook(tmp_path, "import os; print(os.getcwd())")
    admission: Admission = HookSet.from_config(HooksConfig(prompt_submit=(h,))).admission_for(cwd)
    result = await admission.admit("s", PROMPT)
    assert texts(result) == [str(cwd)]


async def test_matchers_filter_tool_hooks_by_the_whole_tool_name(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    record = f"import sys; open({str(runs)!r}, 'a').write(sys.argv[1] + '\\n')"
    argv = script(tmp_path, record, "record.py")
    config_path = tmp_path / "config.toml"
    config_path.write_text(
        "\n".join(
            f"[[hooks.pre_tool]]\ncommand = {json.dumps([*argv, tag])}\n"
            + (f'matcher = "{matcher}"\n' if matcher else "")
            for tag, matcher in [
                ("all", None),
                ("read", "read_file"),
                ("write", "write_.*"),
                ("prefix", "read"),
            ]
        )
    )
    hooks = HookSet.from_config(load_config(config_path).hooks)
    assert await hooks.pre_tool("s", tmp_path, ToolCallPart("c", "read_file", {})) == ToolAllow()
    assert runs.read_text().split() == ["all", "read"]


async def test_pre_tool_block_and_post_tool_contexts(tmp_path: Path) -> None:
    deny = hook(
        tmp_path,
        """print('{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}')""",
        HookKind.PRE_TOOL,
        name="deny.py",
    )
    note = hook(
        tmp_path,
        """print('{"additionalContexts": [{"content": "checked"}]}')""",
        HookKind.POST_TOOL,
        name="note.py",
    )
    seen: list[ToolEvent] = []

    async def observe(event: ToolEvent, next_: ToolNext) -> ToolDecision:
        seen.append(event)
        return await next_(event)

    hooks = HookSet.from_config(
        HooksConfig(pre_tool=(deny,), post_tool=(note,)), post_tool_listeners=[observe]
    )
    call = ToolCallPart("c9", "read_file", {"path": "x"})
    assert await hooks.pre_tool("s", tmp_path, call) == ToolBlock("no")
    result = ToolResultView([TextContent(text="body")], is_error=False)
    decision = await hooks.post_tool("s", tmp_path, call, result)
    assert decision == ToolAllow(
        (AdditionalContext([TextContent(text="checked")], note.default_source("c9")),)
    )
    assert seen == [ToolEvent("s", str(tmp_path), call, result)]
