"""Process start: spawn → ``initialize`` answered, against the interpreter's own floor.

Ours: a fresh ``python -m acp_agent`` (script model, fresh state dir) is spawned and
``initialize`` written at once; the sample is the time from just before the spawn to reading
the answer. A second sampler goes on to ``session/new`` (spawn → ``session/new`` answered), what
an editor waits for before the first prompt box. Floor: ``python -c pass`` with the same
interpreter, spawn → exit (the interpreter's start-up and shutdown, its ``site`` import;
nothing of ours). Fresh processes, interleaved, order flipped every round.

Each is measured twice. **As installed** (the rows with the target): in a venv where
``acp_agent`` is a plain package, as a user's ``pipx``, ``uv tool`` or ``pip install`` copy has
it (``bench/installed.py``). **In the development venv**: there the project is an editable
install, whose path hook ``site`` imports in every process, the floor's included; it imports
``pathlib``, ``re``, ``collections`` and more that our start-up then gets for free, so those
rows flatter us (kept, as the figure earlier runs printed).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from bench.installed import check, installed_python
from bench.lab import PROTOCOL, Lab, Sizes, start_ours
from bench.stats import Better, Figure, Target, interleave, median

SLACK_MS = 25.0
"""The target: ``initialize`` answered at most this long after the floor (issue 16)."""


async def floor(python: Path, code: str = "pass", cwd: Path | None = None) -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(python, "-c", code, cwd=cwd)
    await process.wait()
    return time.perf_counter() - started


async def to_initialize(lab: Lab, python: Path, cwd: Path | None) -> float:
    client = await start_ours(lab, "spawn", python=python, cwd=cwd)
    try:
        await client.request("initialize", PROTOCOL, within=60)
        return time.perf_counter() - client.started
    finally:
        await client.close()


async def to_session_new(lab: Lab, python: Path, cwd: Path | None) -> float:
    client = await start_ours(lab, "spawn-new", python=python, cwd=cwd)
    try:
        await client.request("initialize", PROTOCOL, within=60)
        params = {"cwd": str(lab.cwd), "mcpServers": []}
        await client.request("session/new", params, within=60)
        return time.perf_counter() - client.started
    finally:
        await client.close()


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    dev = Path(sys.executable)
    installed = installed_python(lab.root)
    check(installed, lab.cwd)
    samplers = {
        "ours": lambda: to_initialize(lab, dev, None),
        "new": lambda: to_session_new(lab, dev, None),
        "floor": lambda: floor(dev),
        "installed": lambda: to_initialize(lab, installed, lab.cwd),
        "installed_new": lambda: to_session_new(lab, installed, lab.cwd),
        "installed_floor": lambda: floor(installed),
        "installed_msgspec": lambda: floor(installed, "import acp_agent", lab.cwd),
    }
    samples = await interleave(samplers, sizes.startup_rounds, warmup=2)
    ms = {name: 1000 * median(values) for name, values in samples.items()}

    def above(
        key: str,
        title: str,
        name: str,
        floor_name: str,
        floor_label: str,
        target: Target | None = None,
        gap_in_json: bool = False,
    ) -> Figure:
        gap = ms[name] - ms[floor_name]
        return Figure(
            key=key,
            title=title,
            unit="ms",
            ours=ms[name],
            baseline=ms[floor_name],
            baseline_label=floor_label,
            better=Better.LOWER,
            samples=sizes.startup_rounds,
            note=f"{gap:.1f} ms above the floor",
            target=target,
            extra={"above_floor_ms": gap} if gap_in_json else {},
        )

    target = Target(
        ms["installed_floor"] + SLACK_MS, on_ratio=False, text=f"<= floor + {SLACK_MS:.0f} ms"
    )
    plain = "spawn → exit of `python -c pass`"
    return [
        above(
            "spawn_initialize_installed",
            "spawn → `initialize` answered, as installed",
            "installed",
            "installed_floor",
            f"{plain} (the interpreter's floor)",
            target=target,
            gap_in_json=True,
        ),
        above(
            "spawn_msgspec_installed",
            "spawn → exit of `python -c 'import acp_agent'`, as installed: the interpreter "
            "with msgspec imported as ours imports it, nothing else (no target)",
            "installed_msgspec",
            "installed_floor",
            plain,
        ),
        above(
            "spawn_session_new_installed",
            "spawn → `initialize` → `session/new` answered, as installed",
            "installed_new",
            "installed_floor",
            plain,
        ),
        above(
            "spawn_initialize",
            "spawn → `initialize` answered, in the development venv (editable install)",
            "ours",
            "floor",
            f"{plain} (its floor includes the editable hook)",
            gap_in_json=True,
        ),
        above(
            "spawn_session_new",
            "spawn → `initialize` → `session/new` answered, in the development venv",
            "new",
            "floor",
            plain,
        ),
    ]
