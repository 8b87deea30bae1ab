"""The report: a Markdown table spliced into ``docs/benchmarks.md``, and a JSON file.

Only the part of ``docs/benchmarks.md`` between ``BEGIN`` and ``END`` is rewritten; the prose
around it (how to read the figures, the explanations of missed targets) is kept as written.

Each figure is shown against its previous value, read from the JSON file the last run wrote
(``previous``): the ratios are compared, not the absolute numbers, since those move with the
machine's load while a ratio is measured against a baseline of its own run. A ratio that moved
the wrong way by more than ``NOISE`` is marked **worse**.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.stats import Better, Figure

BEGIN = "<!-- bench:results:begin (written by `python -m bench`; edit outside these markers) -->"
END = "<!-- bench:results:end -->"
NOISE = 0.10
"""A ratio that moved the wrong way by more than this fraction is marked a regression."""

Previous = dict[str, dict[str, Any]]
"""The previous run's figures (``Figure.as_json``), by key."""


def previous_run(path: Path) -> tuple[str | None, Previous]:
    """The date and the figures (by key) of the run that last wrote ``path``; ``(None, {})``
    if there is none."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, {}
    if not isinstance(payload, dict):
        return None, {}
    figures = payload.get("figures", [])
    date = payload.get("run", {}).get("date")
    by_key = {f["key"]: f for f in figures if isinstance(f, dict) and "key" in f}
    return (date if isinstance(date, str) else None), by_key


def change(figure: Figure, previous: Previous) -> float | None:
    """How much worse (> 0) or better (< 0) the ratio is than last time, as a fraction."""
    before = previous.get(figure.key, {}).get("ratio")
    if not isinstance(before, int | float) or not before or not math.isfinite(figure.ratio):
        return None
    moved = figure.ratio / before - 1
    return moved if figure.better is Better.LOWER else -moved


def regressions(figures: list[Figure], previous: Previous) -> list[Figure]:
    return [f for f in figures if (c := change(f, previous)) is not None and c > NOISE]


def _previous_cell(figure: Figure, previous: Previous) -> str:
    before = previous.get(figure.key)
    moved = change(figure, previous)
    if before is None or moved is None:
        return "new"
    if abs(moved) < 0.005:
        word = "same"
    elif moved < 0:
        word = f"{-moved:.0%} better"
    else:
        word = f"{moved:.0%} worse"
    return f"{fmt(before['ratio'])}x ({f'**{word}**' if moved > NOISE else word})"


def machine(lab_root: Path) -> dict[str, Any]:
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(_mem_total_kib() / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "filesystem": _filesystem(lab_root),
        "commit": _git("rev-parse", "--short", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
    }


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _mem_total_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1])
    return 0


def _filesystem(path: Path) -> str:
    best = ("", "unknown", "unknown")
    resolved = str(path.resolve())
    for line in Path("/proc/mounts").read_text().splitlines():
        device, mount, kind, *_ = line.split()
        inside = resolved == mount or resolved.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best[0]):
            best = (mount, kind, device)
    return f"{best[1]} on {best[2]} (mounted at {best[0]})"


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10)
    except OSError:
        return ""
    return out.stdout.strip()


def fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def table(figures: list[Figure], previous: Previous | None = None) -> str:
    previous = previous or {}
    rows = [
        "| figure | ours | baseline | ratio | previous ratio | target | met |",
        "|---|---:|---:|---:|---:|---|:-:|",
    ]
    for f in figures:
        met = {True: "yes", False: "**no**", None: "—"}[f.met]
        target = f.target.text if f.target else "—"
        note = f" ({f.note})" if f.note else ""
        rows.append(
            f"| {f.title}{note} | {fmt(f.ours)} {f.unit} | {fmt(f.baseline)} {f.unit}: "
            f"{f.baseline_label} | {fmt(f.ratio)}x | {_previous_cell(f, previous)} | {target} | {met} |"
        )
    return "\n".join(rows)


def section(figures: list[Figure], run: dict[str, Any], previous: Previous | None = None) -> str:
    m = run["machine"]
    load = run["load"]
    lines = [
        BEGIN,
        "",
        f"Run of {run['date']} (`python -m bench{' --quick' if run['quick'] else ''}`, "
        f"{run['seconds']:.0f} s), commit `{m['commit']}`{' (dirty)' if m['dirty'] else ''}.",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, Linux {m['kernel']}, "
        f"Python {m['python']}; scratch files on {m['filesystem']}.",
        f"Load average (1 min) before / after the run: {load['before']:.2f} / {load['after']:.2f}"
        " — the machine is shared, so absolute numbers move; ratios are measured interleaved.",
        f"Previous ratio: the run of {run.get('previous_date') or 'nothing (first run)'}; "
        f"a ratio more than {NOISE:.0%} the wrong way is marked **worse**.",
        "",
        table(figures, previous),
        "",
        END,
    ]
    return "\n".join(lines)


def splice(doc: Path, text: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace the generated section of ``doc`` between ``begin`` and ``end`` (or append one)
    with ``text``; ``bench.peers.report`` has a section of its own."""
    old = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmarks\n"
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        _, tail = rest.split(end, 1)
        new = head + text + tail
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    doc.write_text(new, encoding="utf-8")


def run_info(quick: bool, seconds: float, lab_root: Path, load: dict[str, float]) -> dict[str, Any]:
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "quick": quick,
        "seconds": seconds,
        "machine": machine(lab_root),
        "load": load,
        "argv": sys.argv,
    }
