"""``python -m bench.peers [--rounds N] [--warmup N] [--only AGENT ...] [--write | --no-write]``.

acp-agent side by side with the agents users would pick instead (``bench/peers/agents.py``),
each against the same fake OpenAI-compatible model (``fake_model.py``) that answers at once,
each driven by the same raw ACP client (``bench/wire.py``). Rounds are interleaved: one sample
of each agent per round (``run.py``: a life process and a load process), the order flipped
every round, warm-up rounds dropped, medians of the rest. A full run writes its table between
the ``bench-peers`` markers of ``docs/benchmarks.md`` and every sample to
``docs/benchmarks-peers.json``, and prints each figure against the previous JSON's; ``--only``
runs a subset and prints without writing (unless ``--write``). ``make bench-peers`` installs the
pinned peers into ``.cache/peers/`` first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.installed import check, installed_python
from bench.peers import report
from bench.peers.agents import AGENTS, OURS, OURS_HOME, Agent, own_floor
from bench.peers.fake_model import FakeModel, fake_model
from bench.peers.request import analyze
from bench.peers.run import Life, Load, floor, life, load
from bench.wire import WireError

REPO = Path(__file__).resolve().parents[2]
FAILURES_BEFORE_DROP = 2
SCRATCH = Path.home() / ".cache" / "acp-bench-peers"
"""Not under a git checkout (an agent would read the repository's instructions and git state)
nor under the temporary directory (codex then skips writing its helper binaries into its home,
a start-up cost its users pay)."""
UNSET = ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")
"""Left out of every agent's environment: with the first, each Python agent would compile all
its modules at every start (no ``__pycache__`` written); the second makes each write to stdout
a system call. An editor starts agents with neither."""


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    parser.add_argument("--rounds", type=int, default=9, help="kept rounds (default 9)")
    parser.add_argument("--warmup", type=int, default=1, help="dropped rounds (default 1)")
    parser.add_argument(
        "--only", nargs="+", choices=list(AGENTS), metavar="AGENT", help=", ".join(AGENTS)
    )
    parser.add_argument("--write", action="store_true", help="write the docs even with --only")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument(
        "--scratch",
        type=Path,
        default=SCRATCH,
        help=f"where the run's directory goes (default {SCRATCH}): outside any git checkout "
        "and any temporary directory",
    )
    parser.add_argument("--doc", type=Path, default=REPO / "docs" / "benchmarks.md")
    parser.add_argument("--json", type=Path, default=REPO / "docs" / "benchmarks-peers.json")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.warmup < 0:
        parser.error("--rounds must be at least 1 and --warmup at least 0")
    return args


class Runner:
    """Every sample of every agent in one run, and why an agent's sample failed."""

    def __init__(self, root: Path, model: FakeModel, agents: list[Agent]) -> None:
        self.root = root
        self.model = model
        self.agents = agents
        self.cwd = root / "workspace"
        self.lives: dict[str, list[Life]] = {a.key: [] for a in agents}
        self.loads: dict[str, list[Load]] = {a.key: [] for a in agents}
        self.floors: dict[str, list[float]] = {a.key: [] for a in agents}
        self.failures: dict[str, list[str]] = {a.key: [] for a in agents}
        self.hi: dict[str, Any] = {}

    def home(self, agent: Agent) -> Path:
        path = self.root / "homes" / agent.key
        path.mkdir(parents=True, exist_ok=True)
        return path

    async def sample(self, agent: Agent, keep: bool) -> None:
        if len(self.failures[agent.key]) >= FAILURES_BEFORE_DROP:
            return
        log = self.root / f"{agent.key}.stderr.log"
        try:
            floor_ms = (
                await floor(agent.interpreter) if agent.interpreter and own_floor(agent) else None
            )
            got = await life(agent, self.home(agent), self.model, self.cwd, log)
            loaded = None
            if agent.loads:
                loaded = await load(
                    agent, self.home(agent), self.model, self.cwd, log, got.session_id
                )
        except (WireError, TimeoutError, OSError, KeyError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            self.failures[agent.key].append(reason)
            print(f"bench.peers: {agent.key} failed: {reason} (stderr: {log})", file=sys.stderr)
            return
        if agent.model and agent.key not in self.hi and got.hi_requests:
            requests = got.hi_requests
            self.hi[agent.key] = analyze([r.path for r in requests], [r.body for r in requests])
            (self.root / f"{agent.key}.hi.json").write_bytes(requests[0].body)
        if not keep:
            return
        self.lives[agent.key].append(got)
        if loaded is not None:
            self.loads[agent.key].append(loaded)
        if floor_ms is not None:
            self.floors[agent.key].append(floor_ms)

    async def rounds(self, rounds: int, warmup: int) -> None:
        for index in range(warmup + rounds):
            order = self.agents if index % 2 == 0 else self.agents[::-1]
            started = time.perf_counter()
            for agent in order:
                await self.sample(agent, keep=index >= warmup)
            kind = "warm-up" if index < warmup else "kept"
            print(
                f"bench.peers: round {index + 1}/{warmup + rounds} ({kind}) "
                f"{time.perf_counter() - started:.1f} s",
                file=sys.stderr,
                flush=True,
            )


def selected(only: list[str] | None) -> tuple[list[Agent], dict[str, str]]:
    """The agents to run, and the reason each left out is left out."""
    missing: dict[str, str] = {}
    agents = []
    for key, agent in AGENTS.items():
        if only is not None and key not in only:
            continue
        if agent.installed is not None and not agent.installed.exists():
            missing[key] = f"not installed ({agent.installed}; `make bench-peers` installs it)"
            continue
        agents.append(agent)
    return agents, missing


async def measure(root: Path, agents: list[Agent], rounds: int, warmup: int) -> Runner:
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    note = workspace / "note.txt"
    note.write_text("The note says: the answer is 42.\n", encoding="utf-8")
    if any(agent.key == OURS for agent in agents):
        check(installed_python(OURS_HOME), workspace)
    async with fake_model(str(note)) as model:
        runner = Runner(root, model, agents)
        await runner.rounds(rounds, warmup)
    return runner


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    agents, missing = selected(args.only)
    if not agents:
        print("bench.peers: no agent to run: " + "; ".join(missing.values()), file=sys.stderr)
        return 1
    write = (args.write or args.only is None) and not args.no_write
    unset = [name for name in UNSET if os.environ.pop(name, None) is not None]
    args.scratch.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="run-", dir=args.scratch)).resolve()
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        runner = asyncio.run(measure(root, agents, args.rounds, args.warmup))
        seconds = time.perf_counter() - started
        info = report.run_info(args, seconds, root, load_before)
        info["unset"] = unset
        results = report.results(runner, missing)
        previous = report.previous(args.json)
        print(report.tables(results, info))
        print(report.against_previous(results, previous))
        if write:
            report.splice(args.doc, report.section(results, info))
            payload = {"run": info, "results": results}
            args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
            print(f"bench.peers: wrote {args.doc} and {args.json}")
    finally:
        if args.keep:
            print(f"bench.peers: scratch kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
