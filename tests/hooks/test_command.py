"""Command hooks as real processes: answers, exit statuses, failures, limits and kills."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from acp_agent.content import ContentBlock, TextContent
from acp_agent.hooks import (
    AdditionalContext,
    CommandHook,
    FailPolicy,
    HookFailure,
    HookKind,
    HooksConfig,
    HookSet,
    PromptAllow,
    PromptBlock,
    PromptEvent,
    ToolAllow,
    ToolBlock,
    ToolEvent,
    ToolResultView,
)
from acp_agent.hooks.command import STDOUT_LIMIT, run_prompt_hook, run_tool_hook
from acp_agent.journal.events import ToolCallPart
from acp_agent.turn.admission import Allow, Block
from tests.hooks.support import hook, live_members, wait_for_file, wait_group_gone

PROMPT: list[ContentBlock] = [TextContent(text="hello")]
CALL = ToolCallPart("call-1", "read_file", {"path": "notes.txt"})


def event(tmp_path: Path) -> PromptEvent:
    return PromptEvent("sess-1", str(tmp_path), PROMPT)


def hooks(*prompt: CommandHook) -> HookSet:
    return HookSet.from_config(HooksConfig(prompt_submit=prompt))


async def test_empty_stdout_allows_unchanged(tmp_path: Path) -> None:
    h = hook(tmp_path, "import sys; sys.stdin.read()")
    assert await run_prompt_hook(h, event(tmp_path)) == PromptAllow()
    assert await hooks(h).admit("sess-1", tmp_path, PROMPT) == Allow(PROMPT)


async def test_json_block(tmp_path: Path) -> None:
    h = hook(tmp_path, """print('{"decision": "block", "reason": "no secrets"}')""")
    assert await hooks(h).admit("sess-1", tmp_path, PROMPT) == Block("no secrets")


async def test_exit_2_blocks_with_stderr_as_the_reason(tmp_path: Path) -> None:
    h = hook(
        tmp_path,
        """
        import sys
        print('{"decision": "allow"}')  # ignored: exit 2 wins
        sys.stderr.write("policy says no\\n")
        sys.exit(2)
        """,
    )
    assert await run_prompt_hook(h, event(tmp_path)) == PromptBlock("policy says no")


async def test_exit_2_without_stderr_names_the_hook(tmp_path: Path) -> None:
    h = hook(tmp_path, "raise SystemExit(2)")
    decision = await run_prompt_hook(h, event(tmp_path))
    assert isinstance(decision, PromptBlock)
    assert "hook.py" in decision.reason


async def test_replaced_content_and_contexts_default_and_custom_source(tmp_path: Path) -> None:
    h = hook(
        tmp_path,
        """
        import json
        print(json.dumps({
            "content": [{"type": "text", "text": "rewritten"}],
            "additionalContexts": [
                {"content": "plain string"},
                {"content": [{"type": "text", "text": "custom"}],
                 "source": {"kind": "x-ticket", "id": 7}},
            ],
        }))
        """,
    )
    default: dict[str, object] = {"kind": "hook", "hook": "prompt_submit", "command": h.command[0]}
    assert await hooks(h).admit("sess-1", tmp_path, PROMPT) == Allow(
        [TextContent(text="rewritten")],
        (
            AdditionalContext([TextContent(text="plain string")], default),
            AdditionalContext([TextContent(text="custom")], {"kind": "x-ticket", "id": 7}),
        ),
    )


@pytest.mark.parametrize(
    ("fail", "expected"), [(FailPolicy.OPEN, Allow), (FailPolicy.CLOSED, Block)]
)
async def test_garbage_on_stdout_is_a_failure(
    tmp_path: Path, fail: FailPolicy, expected: type
) -> None:
    h = hook(tmp_path, "print('{this is not json')", fail=fail)
    with capture_logs() as logs:
        result = await hooks(h).admit("sess-1", tmp_path, PROMPT)
    assert isinstance(result, expected)
    if isinstance(result, Allow):
        assert result == Allow(PROMPT)
    else:
        assert "hook.py" in result.reason
        assert "not valid JSON" in result.reason
    [failed] = [e for e in logs if e["event"] == "hook_failed"]
    assert failed["fail"] == str(fail)


async def test_other_exit_status_is_a_failure_with_stderr(tmp_path: Path) -> None:
    h = hook(tmp_path, "import sys; sys.stderr.write('kaput'); sys.exit(3)")
    with pytest.raises(HookFailure, match="exited with status 3: kaput"):
        await run_prompt_hook(h, event(tmp_path))


async def test_a_missing_program_is_a_failure(tmp_path: Path) -> None:
    missing = CommandHook(HookKind.PROMPT_SUBMIT, (str(tmp_path / "no-such-program"),))
    with pytest.raises(HookFailure, match="cannot start"):
        await run_prompt_hook(missing, event(tmp_path))


async def test_a_hanging_hook_is_killed_at_its_timeout(tmp_path: Path) -> None:
    h = hook(
        tmp_path,
        f"""
        import os, time
        with open({str(tmp_path / "pgid")!r}, "w") as f:
            f.write(f"{{os.getpgid(0)}}\\n")
        time.sleep(60)
        """,
        timeout_ms=500,
    )
    with pytest.raises(HookFailure, match="timed out after 500 ms"):
        await run_prompt_hook(h, event(tmp_path))
    pgid = int((tmp_path / "pgid").read_text())
    assert pgid != os.getpgid(0)
    assert await wait_group_gone(pgid) == []


GRANDCHILD = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
with open({pids!r}, "w") as f:
    f.write(f"{{os.getpgid(0)}} {{child.pid}}\\n")
{then}
"""


async def test_a_grandchild_dies_with_a_timed_out_hook(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    body = GRANDCHILD.format(pids=str(pids), then="time.sleep(60)")
    h = hook(tmp_path, body, timeout_ms=500)
    with pytest.raises(HookFailure, match="timed out"):
        await run_prompt_hook(h, event(tmp_path))
    pgid, grandchild = map(int, pids.read_text().split())
    assert await wait_group_gone(pgid) == []
    assert grandchild not in live_members(pgid)


async def test_a_grandchild_holding_stdout_dies_when_the_hook_exits(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    h = hook(tmp_path, GRANDCHILD.format(pids=str(pids), then="print('done')"))
    # Not a timeout: the leftover is killed as soon as the hook itself exits.
    assert await run_prompt_hook(h, event(tmp_path)) == PromptAllow(
        additional_contexts=(AdditionalContext([TextContent(text="done")], h.default_source()),)
    )
    pgid, _ = map(int, pids.read_text().split())
    assert await wait_group_gone(pgid) == []


async def test_cancelling_the_caller_kills_the_hook_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    h = hook(tmp_path, GRANDCHILD.format(pids=str(pids), then="time.sleep(60)"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_prompt_hook, h, event(tmp_path))
        text = await wait_for_file(pids)
        pgid, _ = map(int, text.split())
        assert live_members(pgid) != []
        tg.cancel_scope.cancel()
    assert await wait_group_gone(pgid) == []


async def test_a_stdout_flood_is_capped(tmp_path: Path) -> None:
    h = hook(
        tmp_path,
        """
        import sys
        chunk = b"x" * 65536
        while True:
            sys.stdout.buffer.write(chunk)
        """,
        timeout_ms=20_000,
    )
    with pytest.raises(HookFailure, match=f"more than {STDOUT_LIMIT} bytes"):
        await run_prompt_hook(h, event(tmp_path))


async def test_a_stderr_flood_is_drained_and_truncated(tmp_path: Path) -> None:
    h = hook(
        tmp_path,
        """
        import sys
        sys.stderr.write("e" * 300_000)
        sys.exit(2)
        """,
    )
    decision = await run_prompt_hook(h, event(tmp_path))
    assert isinstance(decision, PromptBlock)
    assert decision.reason.endswith("[stderr truncated]")
    assert len(decision.reason) < 70_000


@pytest.mark.parametrize(
    ("kind", "stdout", "expected"),
    [
        (HookKind.PROMPT_SUBMIT, {"continue": False, "stopReason": "stop"}, "block:stop"),
        (HookKind.PRE_TOOL, {"decision": "block", "reason": "r"}, "block:r"),
        (
            HookKind.PRE_TOOL,
            {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "d"}},
            "block:d",
        ),
        (
            HookKind.POST_TOOL,
            {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "c"}},
            "context:c",
        ),
        (HookKind.PROMPT_SUBMIT, "plain words", "context:plain words"),
    ],
)
async def test_claude_code_dialect_end_to_end(
    tmp_path: Path, kind: HookKind, stdout: object, expected: str
) -> None:
    text = stdout if isinstance(stdout, str) else json.dumps(stdout)
    h = hook(tmp_path, f"print({text!r})", kind)
    result = ToolResultView([TextContent(text="out")], is_error=False)
    if kind is HookKind.PROMPT_SUBMIT:
        match await run_prompt_hook(h, event(tmp_path)):
            case PromptBlock(reason=reason):
                got = f"block:{reason}"
            case PromptAllow(
                additional_contexts=(AdditionalContext(content=[TextContent(text=t)]),)
            ):
                got = f"context:{t}"
    else:
        tool_event = ToolEvent(
            "sess-1", str(tmp_path), CALL, result if kind is HookKind.POST_TOOL else None
        )
        match await run_tool_hook(h, tool_event):
            case ToolBlock(reason=reason):
                got = f"block:{reason}"
            case ToolAllow(additional_contexts=(AdditionalContext(content=[TextContent(text=t)]),)):
                got = f"context:{t}"
    assert got == expected


ECHO = """
import json, os, sys
data = json.load(sys.stdin)
data["_env"] = os.environ.get("ACP_AGENT_SESSION_ID")
data["_cwd"] = os.getcwd()
with open({out!r}, "w") as f:
    json.dump(data, f)
"""


async def test_stdin_shape_prompt_submit(tmp_path: Path) -> None:
    out = tmp_path / "stdin.json"
    h = hook(tmp_path, ECHO.format(out=str(out)))
    await run_prompt_hook(h, event(tmp_path))
    assert json.loads(out.read_text()) == {
        "hook": "prompt_submit",
        "sessionId": "sess-1",
        "cwd": str(tmp_path),
        "prompt": [{"type": "text", "text": "hello"}],
        "_env": "sess-1",
        "_cwd": str(tmp_path),
    }


async def test_stdin_shape_pre_tool(tmp_path: Path) -> None:
    out = tmp_path / "stdin.json"
    h = hook(tmp_path, ECHO.format(out=str(out)), HookKind.PRE_TOOL)
    await run_tool_hook(h, ToolEvent("sess-1", str(tmp_path), CALL))
    assert json.loads(out.read_text()) == {
        "hook": "pre_tool",
        "sessionId": "sess-1",
        "cwd": str(tmp_path),
        "toolCall": {"id": "call-1", "name": "read_file", "arguments": {"path": "notes.txt"}},
        "_env": "sess-1",
        "_cwd": str(tmp_path),
    }


async def test_stdin_shape_post_tool(tmp_path: Path) -> None:
    out = tmp_path / "stdin.json"
    h = hook(tmp_path, ECHO.format(out=str(out)), HookKind.POST_TOOL)
    result = ToolResultView([TextContent(text="file body")], is_error=True)
    await run_tool_hook(h, ToolEvent("sess-1", str(tmp_path), CALL, result))
    assert json.loads(out.read_text()) == {
        "hook": "post_tool",
        "sessionId": "sess-1",
        "cwd": str(tmp_path),
        "toolCall": {"id": "call-1", "name": "read_file", "arguments": {"path": "notes.txt"}},
        "result": {"content": [{"type": "text", "text": "file body"}], "isError": True},
        "_env": "sess-1",
        "_cwd": str(tmp_path),
    }


async def test_tool_hook_contexts_carry_the_call_id(tmp_path: Path) -> None:
    h = hook(
        tmp_path, """print('{"additionalContexts": [{"content": "seen"}]}')""", HookKind.POST_TOOL
    )
    result = ToolResultView([TextContent(text="x")], is_error=False)
    decision = await run_tool_hook(h, ToolEvent("sess-1", str(tmp_path), CALL, result))
    assert decision == ToolAllow(
        (
            AdditionalContext(
                [TextContent(text="seen")],
                {"kind": "tool", "hook": "post_tool", "command": h.command[0], "callId": "call-1"},
            ),
        )
    )


async def test_a_hook_that_ignores_stdin_is_fine(tmp_path: Path) -> None:
    h = hook(tmp_path, "")
    big = PromptEvent("sess-1", str(tmp_path), [TextContent(text="x" * 1_000_000)])
    assert await run_prompt_hook(h, big) == PromptAllow()
