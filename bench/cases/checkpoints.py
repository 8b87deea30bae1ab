"""What a checkpoint adds to a local command: ``run_command``'s process with and without the
session's recorder around it, in a workspace of ``FILES`` files, in the same run.

Each round runs ``true`` in the workspace through ``process.run_local`` (the tool's own way),
once bare and once between ``Recorder.before_all`` and ``after`` (two whole-tree snapshots with
the session index's stat cache warm, nothing changed: the common case), and an edit tool's
exact-file checkpoint of one file (``before_files`` + a write + ``after``). The first snapshot
of the tree (every file hashed) is reported as an extra. Medians over ``ROUNDS``.
"""

from __future__ import annotations

import time
from pathlib import Path

from acp_agent.checkpoints.recorder import Recorder
from acp_agent.tools.process import run_local
from bench.lab import Lab, Sizes
from bench.stats import Better, Figure, median

FILES = 2000
ROUNDS = 30


def _workspace(root: Path) -> Path:
    cwd = root / "checkpoint-workspace"
    for n in range(FILES):
        path = cwd / f"pkg{n % 40}" / f"module{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {n}\n" + "x = 1\n" * 40)
    (cwd / ".gitignore").write_text("build/\n")
    return cwd


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    cwd = _workspace(lab.root)
    recorder = Recorder(lab.state_dir("checkpoints"), "bench")
    started = time.perf_counter()
    await recorder.after(await recorder.before_all([cwd]))
    first = time.perf_counter() - started
    bare: list[float] = []
    recorded: list[float] = []
    edit: list[float] = []
    target = cwd / "pkg0" / "module0.py"
    for n in range(ROUNDS):
        started = time.perf_counter()
        await run_local("true", str(cwd), 30, 1 << 16)
        bare.append(time.perf_counter() - started)
        started = time.perf_counter()
        pending = await recorder.before_all([cwd])
        await run_local("true", str(cwd), 30, 1 << 16)
        await recorder.after(pending)
        recorded.append(time.perf_counter() - started)
        started = time.perf_counter()
        pending = await recorder.before_files([target], [cwd])
        target.write_text(f"# edit {n}\n")
        await recorder.after(pending)
        edit.append(time.perf_counter() - started)
    recorder.take()
    return [
        Figure(
            key="checkpoint_run_command",
            title=f"local `run_command` with its checkpoints ({FILES} files, nothing changed)",
            unit="ms",
            ours=1000 * median(recorded),
            baseline=1000 * median(bare),
            baseline_label="the same command without checkpoints",
            better=Better.LOWER,
            samples=len(recorded),
            extra={
                "edit_checkpoint_ms": 1000 * median(edit),
                "first_snapshot_ms": 1000 * first,
            },
        )
    ]
