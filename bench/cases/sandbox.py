"""The cost of the sandbox: ``run_command`` of ``true`` under ``workspace-write`` (bubblewrap)
against the same call under ``off``, in the same process, interleaved.

Each round runs the tool itself (``RunCommand.run``, permission decided in full-access mode, no
client): the gated shell, the output drain, the process-group kill, and under the sandbox the
``bwrap`` start-up (new mount, pid, ipc and network namespaces, the binds) around it. The probe
runs once, before the rounds. Warm-up rounds are dropped; medians reported. Where no sandbox can
start, the case reports nothing (and says why on stderr).
"""

from __future__ import annotations

import sys
import time

from acp_agent.sandbox.bwrap import locate_bwrap, probe
from acp_agent.sandbox.guard import Sandbox, SessionSandbox
from acp_agent.sandbox.policy import SandboxPolicy
from acp_agent.tools.base import ToolContext
from acp_agent.tools.permissions import Mode, Permissions
from acp_agent.tools.run_command import RunCommand
from bench.lab import Lab, Sizes
from bench.stats import Better, Figure, median

WARMUP = 3
COMMAND: dict[str, object] = {"command": "true"}


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    bwrap = locate_bwrap()
    probed = await probe(bwrap, network=False) if bwrap is not None else None
    if probed is None or not probed.ok:
        why = "no bwrap found" if probed is None else probed.why
        print(f"bench sandbox: skipped, no sandbox starts here: {why}", file=sys.stderr)
        return []
    sandbox = Sandbox(lab.state_dir("sandbox"))
    boxed, bare = (
        _context(lab, sandbox, SandboxPolicy.WORKSPACE_WRITE),
        _context(lab, sandbox, SandboxPolicy.OFF),
    )
    tool = RunCommand()
    timings: dict[SandboxPolicy, list[float]] = {
        SandboxPolicy.WORKSPACE_WRITE: [],
        SandboxPolicy.OFF: [],
    }
    for index in range(sizes.cancel_rounds + WARMUP):
        for ctx in (boxed, bare):
            started = time.perf_counter()
            output = await tool.run(COMMAND, ctx)
            took = time.perf_counter() - started
            assert not output.is_error, output
            if index >= WARMUP:
                timings[ctx.sandbox.policy].append(took)
    sandboxed, unsandboxed = timings[SandboxPolicy.WORKSPACE_WRITE], timings[SandboxPolicy.OFF]
    return [
        Figure(
            key="sandboxed_command",
            title="`run_command true` in the sandbox (workspace-write, bubblewrap)",
            unit="ms",
            ours=1000 * median(sandboxed),
            baseline=1000 * median(unsandboxed),
            baseline_label="the same call unsandboxed (policy off), interleaved",
            better=Better.LOWER,
            samples=len(sandboxed),
        )
    ]


def _context(lab: Lab, sandbox: Sandbox, policy: SandboxPolicy) -> ToolContext:
    permissions = Permissions(Mode.FULL_ACCESS)
    return ToolContext(
        "bench", lab.cwd, permissions=permissions, sandbox=SessionSandbox(sandbox, policy)
    )
