"""``python -m bench [--quick] [--only CASE ...] [--no-write] [--profile] [--keep]``.

Runs the cases in order, prints the table, and (unless ``--no-write``; ``--quick`` alone does not
write) splices it into ``docs/benchmarks.md`` and writes ``docs/benchmarks.json``. ``--profile``
runs our agent under ``cProfile`` (one ``.prof`` per agent process, kept in the scratch directory,
with a ``.txt`` summary beside each) to explain a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import pstats
import shutil
import sys
import sysconfig
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from acp_agent.progress import progress
from bench import lab as lab_module
from bench.cases import (
    cancel,
    checkpoints,
    first_token,
    gguf_first,
    inject,
    memory,
    postgres,
    remote,
    replay,
    request,
    sandbox,
    sdk,
    search,
    startup,
    stream,
)
from bench.lab import FULL, QUICK, Lab, Sizes
from bench.report import (
    NOISE,
    Previous,
    change,
    previous_run,
    regressions,
    run_info,
    section,
    splice,
    table,
)
from bench.stats import Figure

REPO = Path(__file__).resolve().parents[1]
Case = Callable[[Lab, Sizes], Awaitable[list[Figure]]]
CASES: dict[str, Case] = {
    "inject": inject.run,
    "stream": stream.run,
    "replay": replay.run,
    "memory": memory.run,
    "cancel": cancel.run,
    "sandbox": sandbox.run,
    "sdk": sdk.run,
    "request": request.run,
    "first_token": first_token.run,
    "remote": remote.run,
    "startup": startup.run,
    "postgres": postgres.run,
    "search": search.run,
    "checkpoints": checkpoints.run,
    "gguf_first": gguf_first.run,
}
ORDER = [
    "inject",
    "stream",
    "replay",
    "memory",
    "cancel",
    "sandbox",
    "startup",
    "sdk",
    "request",
    "first_token",
    "remote",
    "postgres",
    "search",
    "checkpoints",
    "gguf_first",
]
KEY_ORDER = [
    "inject_durable_p50",
    "inject_floor_tasks",
    "inject_floor_inline",
    "inject_p50",
    "inject_p99",
    "stream_vs_bare",
    "fsync_per_1000_chunks",
    "replay_small",
    "replay_large",
    "replay_linearity",
    "replay_floor_small",
    "replay_floor_large",
    "idle_session_memory",
    "cancel_latency",
    "sandboxed_command",
    "spawn_initialize_installed",
    "spawn_msgspec_installed",
    "spawn_session_new_installed",
    "spawn_session_load_installed",
    "spawn_initialize",
    "spawn_session_new",
    "sdk_initialize",
    "sdk_prompt_rate",
    "sdk_notifications",
    "hi_request_bytes_vs_fast_agent",
    "hi_request_bytes_vs_codex_acp",
    "hi_request_bytes_vs_kimi_cli",
    "hi_request_system_bytes",
    "hi_request_tools_bytes",
    "first_token_now",
    "first_token_typing",
    "remote_ws_round_trip",
    "remote_ws_stream",
    "postgres_inject_durable_p50",
    "postgres_load_small",
    "search_100k",
    "checkpoint_run_command",
    "gguf_first_request_tokens",
    "gguf_first_request_ms",
]


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes: about a minute")
    parser.add_argument("--only", nargs="+", choices=ORDER, metavar="CASE", help=", ".join(ORDER))
    parser.add_argument("--write", action="store_true", help="write the docs even with --quick")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--profile", action="store_true", help="run our agent under cProfile")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--doc", type=Path, default=REPO / "docs" / "benchmarks.md")
    parser.add_argument("--json", type=Path, default=REPO / "docs" / "benchmarks.json")
    return parser.parse_args(argv)


def order(figures: list[Figure]) -> list[Figure]:
    rank = {key: index for index, key in enumerate(KEY_ORDER)}
    return sorted(figures, key=lambda f: rank.get(f.key, len(rank)))


async def run_cases(lab: Lab, sizes: Sizes, names: list[str]) -> list[Figure]:
    figures: list[Figure] = []
    with progress("bench", len(names), unit="case", long_from=2) as bar:
        for name in names:
            bar.describe(name)
            started = time.perf_counter()
            got = await CASES[name](lab, sizes)
            bar.note(f"bench: {name}: {time.perf_counter() - started:.1f} s")
            bar.advance()
            figures += got
    return figures


def report_regressions(figures: list[Figure], previous: Previous, date: str | None) -> None:
    """Name every figure whose ratio moved the wrong way by more than the noise allowance."""
    worse = regressions(figures, previous)
    for f in worse:
        moved = change(f, previous) or 0.0
        print(
            f"bench: WORSE than the run of {date}: {f.key} ratio {f.ratio:.3g}x, "
            f"was {previous[f.key]['ratio']:.3g}x ({moved:.0%} worse)",
            file=sys.stderr,
        )
    if previous and not worse:
        print(f"bench: no ratio worse than {date} by more than {NOISE:.0%}", file=sys.stderr)


def summarize_profiles(root: Path) -> None:
    for prof in sorted(root.glob("*.prof")):
        with prof.with_suffix(".txt").open("w") as out:
            stats = pstats.Stats(str(prof), stream=out)
            stats.sort_stats("tottime").print_stats(30)
            stats.sort_stats("cumulative").print_stats(30)
        print(f"bench: profile {prof} (summary {prof.with_suffix('.txt')})", file=sys.stderr)


def compile_bytecode() -> None:
    """Write the ``.pyc`` of every module the agents import, as an install does: with
    ``PYTHONDONTWRITEBYTECODE`` set (or an unwritable tree), every spawned agent would compile
    each source changed since its last ``.pyc`` again, and the start-up figures would measure
    the compiler. The environment's packages too: pip writes their byte code at install, but a
    tree whose ``__pycache__`` directories were removed (this machine's venv had lost httpx's,
    httpcore's and h11's: 60-100 ms of every fresh agent's first model request) or an installer
    that writes none (uv, by default) leaves it to every start."""
    compileall.compile_dir(REPO / "acp_agent", quiet=1)
    compileall.compile_dir(REPO / "bench", quiet=1)
    compileall.compile_dir(sysconfig.get_paths()["purelib"], quiet=1, workers=0)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    compile_bytecode()
    sizes = QUICK if args.quick else FULL
    names = args.only or ORDER
    write = (args.write or not args.quick) and not args.no_write
    root = Path(tempfile.mkdtemp(prefix="acp-bench-")).resolve()
    if args.profile:
        lab_module.PROFILE_DIR = root
    previous_date, previous = previous_run(args.json)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        figures = order(asyncio.run(run_cases(Lab(root), sizes, names)))
        seconds = time.perf_counter() - started
        info = run_info(
            args.quick, seconds, root, {"before": load_before, "after": os.getloadavg()[0]}
        )
        info["previous_date"] = previous_date
        print(table(figures, previous))
        print(f"bench: {seconds:.0f} s; load {load_before:.2f} -> {info['load']['after']:.2f}")
        report_regressions(figures, previous, previous_date)
        if write:
            splice(args.doc, section(figures, info, previous))
            payload = {
                "run": info,
                "figures": [
                    {**f.as_json(), "previous_ratio": previous.get(f.key, {}).get("ratio")}
                    for f in figures
                ],
            }
            args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
            print(f"bench: wrote {args.doc} and {args.json}")
        if args.profile:
            summarize_profiles(root)
    finally:
        if args.keep or args.profile:
            print(f"bench: scratch kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
