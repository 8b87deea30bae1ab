"""Pipe a scripted ACP session into a real ``acp-agent`` process and show what happens.

Exactly what a script driving the agent through stdin does: write every frame at once, close
stdin, read stdout until the agent exits (on stdin EOF it finishes the work already received).
Then print the frames readably and the journal the session left on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

SESSION_ID = "demo"


def frames(cwd: Path) -> list[dict[str, object]]:
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {
                "cwd": str(cwd),
                "mcpServers": [],
                "_meta": {"acp_agent": {"sessionId": SESSION_ID}},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {
                "sessionId": SESSION_ID,
                "prompt": [{"type": "text", "text": "What does notes.txt say?"}],
            },
        },
    ]


def real_model() -> str | None:
    """The real provider to use when one is configured: ``ACP_AGENT_MODEL`` (if it is not a
    script), else OpenAI or DeepSeek when their key is in the environment."""
    spec = os.environ.get("ACP_AGENT_MODEL", "")
    if spec and not spec.startswith("script:"):
        return spec
    if os.environ.get("OPENAI_API_KEY"):
        return "openai:gpt-4o-mini"
    if os.environ.get("DEEPSEEK_API_KEY"):
        return "deepseek:deepseek-chat"
    return None


def describe(frame: dict[str, object]) -> str:
    if "method" in frame:
        params = frame.get("params")
        if frame["method"] == "session/update" and isinstance(params, dict):
            update = params["update"]
            return f"  ← session/update {json.dumps(update, ensure_ascii=False)}"
        return f"  ← {frame['method']} {json.dumps(params, ensure_ascii=False)}"
    body = frame.get("result", frame.get("error"))
    return f"  ← response id={frame.get('id')} {json.dumps(body, ensure_ascii=False)}"


def main() -> int:
    script = resources.files("acp_agent.demo").joinpath("script.jsonl")
    with tempfile.TemporaryDirectory(prefix="acp-agent-demo-") as tmp:
        root = Path(tmp)
        workspace, state = root / "workspace", root / "state"
        workspace.mkdir()
        (workspace / "notes.txt").write_text(
            "Ship the journal first; everything else builds on it.\n"
        )
        sent = frames(workspace)
        real = real_model()
        print(
            f"→ piping into: acp-agent --model {real} (a real provider: its key is set)\n"
            if real
            else "→ piping into: acp-agent --model script:<bundled demo script> "
            "(no provider key set: the scripted demo)\n"
        )
        for frame in sent:
            print(f"  → {frame['method']} {json.dumps(frame['params'], ensure_ascii=False)}")
        stdin = "".join(json.dumps(frame) + "\n" for frame in sent)
        with resources.as_file(script) as script_path:
            model = real or f"script:{script_path}"
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "acp_agent",
                    "--model",
                    model,
                    "--state-dir",
                    str(state),
                    "--log-level",
                    "warning",
                ],
                input=stdin.encode(),
                capture_output=True,
                timeout=60,
                check=False,
            )
        print("\n← the agent answered:\n")
        for line in proc.stdout.decode().splitlines():
            print(describe(json.loads(line)))
        journal = state / "sessions" / SESSION_ID / "journal.jsonl"
        print(f"\n== {journal.relative_to(root)} ==\n")
        print(journal.read_text() if journal.exists() else "(no journal written)")
        if proc.stderr:
            print("== stderr ==\n" + proc.stderr.decode(), file=sys.stderr)
        print(f"agent exit status: {proc.returncode}")
        return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
