"""``search`` over a repository-sized tree: ripgrep against the Python walker it replaced.

The tree (``search_tree``): a git repository of ``sizes.search_files`` files, made once and
kept under ``.cache/bench-search/`` (a stamp names its size and layout version): 40% a
``.gitignore``d ``node_modules`` of dependencies, 20% ``.gitignore``d build output (``build/``),
40% sources under ``src/``. The word searched for, ``NEEDLE_WORD``, is in one dependency of
``IGNORED_EVERY``, one build file of ``IGNORED_EVERY`` and exactly ``WANTED`` sources, once
each: what a user wants is those ``WANTED`` lines and nothing else.

Ours: the ``search`` tool as the agent runs it (``rg``). Baseline: the same tool with no ``rg``
found, which is the walker the agent had before ripgrep, unchanged (``os.walk`` in sorted order,
Python ``re``, at most ``MAX_FILES`` files). Interleaved, in this process. Both answers are
checked: ours must be exactly the wanted lines; for the walker the figure's extras say how
many of the wanted lines it found and how many ignored ones it returned (it walks ``build/``
first, reaches its file cap there and never gets to ``src/``). ``walker_uncapped_s``: the
walker with its file cap lifted, once, for the time a complete Python search would take.
``ours_cpu_s`` / ``walker_cpu_s``: the CPU seconds of a sample (this process and rg), medians
with the warm-up round: on a loaded machine rg waits for a core longer than it works.
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
from pathlib import Path
from unittest.mock import patch

from acp_agent.content import TextContent
from acp_agent.tools import ripgrep, search
from acp_agent.tools.base import ToolContext
from acp_agent.tools.search import Search
from bench.lab import Lab, Sizes
from bench.stats import Better, Figure, Target, interleave, median

REPO = Path(__file__).resolve().parents[2]
LAYOUT = 2
NEEDLE_WORD = "frobnicate_widget"
WANTED = 50
IGNORED_EVERY = 200
PER_DIR = 100
FILLER = "".join(f"def helper_{n}(value):\n    return value * {n} + 1\n\n" for n in range(60))
"""About 3 KiB of code in each source and build file: a source file's usual size."""


def search_tree(files: int) -> Path:
    """The tree for ``files`` files, made unless a complete one is there."""
    root = REPO / ".cache" / "bench-search" / f"tree-{files}-v{LAYOUT}"
    stamp = root / ".complete"
    if stamp.exists():
        return root
    started = time.perf_counter()
    subprocess.run(["rm", "-rf", str(root)], check=True)
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("node_modules/\nbuild/\n", encoding="utf-8")
    deps, built = files * 4 // 10, files * 2 // 10
    _fill(root / "node_modules", deps, "index.js", lambda n: _generated(n, "exports.{} = 1;"))
    _fill(root / "build", built, "module.py", lambda n: FILLER + _generated(n, "{}(1)"))
    sources = files - deps - built
    step = sources // WANTED
    _fill(root / "src", sources, "code.py", lambda n: _source(n, wanted=n % step == 0))
    stamp.write_text(f"{files}\n", encoding="utf-8")
    print(f"bench: search tree made in {time.perf_counter() - started:.0f} s", flush=True)
    return root


def _fill(top: Path, count: int, name: str, content: object) -> None:
    assert callable(content)
    for n in range(count):
        directory = top / f"pkg{n // PER_DIR:04d}"
        if n % PER_DIR == 0:
            directory.mkdir(parents=True)
        (directory / f"{n % PER_DIR:03d}_{name}").write_text(content(n), encoding="utf-8")


def _generated(n: int, line: str) -> str:
    return "\n".join(["// generated", line.format(NEEDLE_WORD if n % IGNORED_EVERY == 0 else "x")])


def _source(n: int, *, wanted: bool) -> str:
    call = f"    {NEEDLE_WORD}(item)\n" if wanted else "    process(item)\n"
    return f"# module {n}\n{FILLER}def run(items):\n  for item in items:\n{call}"


def wanted_lines(root: Path, files: int) -> list[str]:
    deps, built = files * 4 // 10, files * 2 // 10
    sources = files - deps - built
    step = sources // WANTED
    lines = []
    for n in range(0, sources, step):
        path = f"src/pkg{n // PER_DIR:04d}/{n % PER_DIR:03d}_code.py"
        lines.append(f"{path}:{FILLER.count(chr(10)) + 4}:     {NEEDLE_WORD}(item)")
    return sorted(lines)


CPU: dict[str, list[float]] = {}
"""CPU seconds of each sample (this process and its children, rg), by sampler."""


def cpu_now() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


async def search_once(root: Path, cpu: str = "") -> tuple[float, list[str]]:
    ctx = ToolContext("bench", root)
    started, cpu_started = time.perf_counter(), cpu_now()
    output = await Search().run({"pattern": NEEDLE_WORD, "max_results": 500}, ctx)
    elapsed = time.perf_counter() - started
    if cpu:
        CPU.setdefault(cpu, []).append(cpu_now() - cpu_started)
    block = output.content[0]
    assert isinstance(block, TextContent)
    return elapsed, [line for line in block.text.split("\n") if not line.startswith(("[", "no "))]


async def walker_once(root: Path, cpu: str = "") -> tuple[float, list[str]]:
    """``search`` as it runs where no rg is found: the Python walker."""
    with patch.object(ripgrep, "find_rg", lambda: None):
        return await search_once(root, cpu)


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    if ripgrep.find_rg() is None:
        raise RuntimeError("the search case needs rg: install the ripgrep wheel")
    root = search_tree(sizes.search_files)
    os.sync()
    wanted = wanted_lines(root, sizes.search_files)
    answers: dict[str, list[str]] = {}

    async def ours() -> float:
        elapsed, answers["ours"] = await search_once(root, "ours")
        return elapsed

    async def walker() -> float:
        elapsed, answers["walker"] = await walker_once(root, "walker")
        return elapsed

    times = await interleave({"ours": ours, "walker": walker}, sizes.search_rounds, warmup=1)
    if sorted(answers["ours"]) != wanted:
        raise AssertionError(f"search found {len(answers['ours'])} lines, not the {WANTED} wanted")
    walker_got = set(answers["walker"])
    uncapped = await _uncapped(root)
    return [
        Figure(
            key="search_100k",
            title=f"`search` over {sizes.search_files:,} files (60% .gitignored)",
            unit="s",
            ours=median(times["ours"]),
            baseline=median(times["walker"]),
            baseline_label="the Python walker it replaced (capped at 20,000 files)",
            better=Better.LOWER,
            target=Target(0.1, text="<= 0.1x (>= 10x faster)"),
            samples=len(times["ours"]),
            note=f"ours: exactly the {WANTED} wanted lines",
            extra={
                "wanted": float(WANTED),
                "walker_wanted_found": float(len(walker_got & set(wanted))),
                "walker_ignored_returned": float(len(walker_got - set(wanted))),
                "walker_uncapped_s": uncapped,
                "ours_cpu_s": median(CPU["ours"]),
                "walker_cpu_s": median(CPU["walker"]),
            },
        )
    ]


async def _uncapped(root: Path) -> float:
    with patch.object(search, "MAX_FILES", 10**9):
        elapsed, _ = await walker_once(root)
    return elapsed
