"""Process start: spawn → ``initialize`` answered, against the interpreter's own floor.

Ours: a fresh ``python -m acp_agent`` (script model, fresh state dir) is spawned and
``initialize`` written at once; the sample is the time from just before the spawn to reading
the answer. A second sampler goes on to ``session/new`` (spawn → ``session/new`` answered), what
an editor waits for before the first prompt box; a third to ``session/load`` of a session of 20
turns made before the rounds (spawn → ``session/load`` answered, its replay included). Floor: ``python -c pass`` with the same
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
NEW_SLACK_MS = 60.0
LOAD_SLACK_MS = 70.0
"""Issue 28's stepping stones: ``session/new`` and ``session/load`` (20 turns) answered at most
this long after the floor, as installed."""
LOAD_TURNS = 20


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


async def make_loaded(lab: Lab, python: Path, cwd: Path | None) -> tuple[Path, str]:
    """A session of ``LOAD_TURNS`` turns in the ``spawn-load`` state dir: its script, its id."""
    script = lab.script("spawn-load", [{"text": f"answer {n}"} for n in range(LOAD_TURNS)])
    client = await start_ours(lab, "spawn-load", script, python=python, cwd=cwd)
    try:
        await client.request("initialize", PROTOCOL, within=60)
        params = {"cwd": str(lab.cwd), "mcpServers": []}
        session_id = str((await client.request("session/new", params, within=60))["sessionId"])
        for n in range(LOAD_TURNS):
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": f"q{n}"}]}
            await client.request("session/prompt", prompt, within=60)
        return script, session_id
    finally:
        await client.close()


async def to_session_load(
    lab: Lab, python: Path, cwd: Path | None, loaded: tuple[Path, str]
) -> float:
    script, session_id = loaded
    client = await start_ours(lab, "spawn-load", script, python=python, cwd=cwd)
    try:
        await client.request("initialize", PROTOCOL, within=60)
        params = {"sessionId": session_id, "cwd": str(lab.cwd), "mcpServers": []}
        await client.request("session/load", params, within=60)
        return time.perf_counter() - client.started
    finally:
        await client.close()


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    dev = Path(sys.executable)
    installed = installed_python(lab.root)
    check(installed, lab.cwd)
    loaded = await make_loaded(lab, installed, lab.cwd)
    samplers = {
        "ours": lambda: to_initialize(lab, dev, None),
        "new": lambda: to_session_new(lab, dev, None),
        "floor": lambda: floor(dev),
        "installed": lambda: to_initialize(lab, installed, lab.cwd),
        "installed_new": lambda: to_session_new(lab, installed, lab.cwd),
        "installed_load": lambda: to_session_load(lab, installed, lab.cwd, loaded),
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

    def slack(ms_above: float) -> Target:
        floor_ms = ms["installed_floor"]
        return Target(floor_ms + ms_above, on_ratio=False, text=f"<= floor + {ms_above:.0f} ms")

    target = slack(SLACK_MS)
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
            target=slack(NEW_SLACK_MS),
            gap_in_json=True,
        ),
        above(
            "spawn_session_load_installed",
            f"spawn → `initialize` → `session/load` ({LOAD_TURNS} turns) answered, as installed",
            "installed_load",
            "installed_floor",
            plain,
            target=slack(LOAD_SLACK_MS),
            gap_in_json=True,
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
