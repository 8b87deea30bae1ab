"""The side-by-side table: medians per agent, ratios to ours, "—" with a reason, the ``hi`` bytes.

Only the part of ``docs/benchmarks.md`` between ``BEGIN`` and ``END`` is rewritten (the
``bench:results`` markers of ``python -m bench`` are another section, never touched here).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bench import report as bench_report
from bench.peers.agents import AGENTS, OURS, PEERS_DIR, Agent, own_floor
from bench.peers.run import STREAM_CHUNKS, TURNS, Life, Load
from bench.report import fmt, machine


class Runner(Protocol):
    """What the report reads of a run's samples (``bench.peers.__main__.Runner``)."""

    agents: list[Agent]
    lives: dict[str, list[Life]]
    loads: dict[str, list[Load]]
    floors: dict[str, list[float]]
    failures: dict[str, list[str]]
    hi: dict[str, Any]


BEGIN = (
    "<!-- bench-peers:begin (written by `python -m bench.peers`; edit outside these markers) -->"
)
END = "<!-- bench-peers:end -->"
TIMES = "\N{MULTIPLICATION SIGN}"


@dataclass(frozen=True)
class Row:
    key: str
    title: str
    unit: str
    life: Callable[[Life], float | None] | None = None
    load: Callable[[Load], float] | None = None
    floor: bool = False
    needs: str = ""
    """``loads`` or ``tools``: the capability the figure needs."""


ROWS = (
    Row("initialize_ms", "spawn → `initialize` answered", "ms", life=lambda s: s.initialize_ms),
    Row(
        "rss_initialize_mib",
        "RSS after `initialize`",
        "MiB",
        life=lambda s: s.rss_initialize_kib / 1024,
    ),
    Row(
        "new_session_ms",
        "first `session/new` of a fresh process, request → answer",
        "ms",
        life=lambda s: s.new_session_ms,
    ),
    Row(
        "new_total_ms",
        "spawn → `initialize` → `session/new` answered",
        "ms",
        life=lambda s: s.new_total_ms,
    ),
    Row(
        "warm_prompt_ms",
        "warm prompt → first chunk",
        "ms",
        life=lambda s: s.warm_prompt_ms,
    ),
    Row(
        "first_prompt_ms",
        "first prompt of a fresh process → first chunk",
        "ms",
        life=lambda s: s.first_prompt_ms,
    ),
    Row(
        "stream_ms",
        f"{STREAM_CHUNKS:,} chunks, first → last",
        "ms",
        life=lambda s: s.stream_ms,
    ),
    Row(
        "tool_ms",
        "one tool turn (read a file), prompt → answer",
        "ms",
        life=lambda s: s.tool_ms,
        needs="tools",
    ),
    Row(
        "load_ms",
        f"`session/load`, {TURNS} turns",
        "ms",
        load=lambda s: s.load_ms,
        needs="loads",
    ),
    Row(
        "load_total_ms",
        "spawn → `initialize` → `session/load` answered",
        "ms",
        load=lambda s: s.total_ms,
        needs="loads",
    ),
    Row(
        "rss_turns_mib",
        f"RSS after {TURNS} turns",
        "MiB",
        life=lambda s: s.rss_turns_kib / 1024,
    ),
    Row("floor_ms", "interpreter floor: `python -c pass`, spawn → exit", "ms", floor=True),
)


def _values(runner: Runner, key: str, row: Row) -> list[float]:
    if row.floor:
        return runner.floors[key]
    if row.load is not None:
        return [row.load(s) for s in runner.loads[key]]
    assert row.life is not None
    return [v for s in runner.lives[key] if (v := row.life(s)) is not None]


def _reason(runner: Runner, key: str, row: Row) -> str:
    agent = AGENTS[key]
    if row.needs == "loads" and not agent.loads:
        return "no `session/load`"
    if row.needs == "tools" and not agent.tools:
        return "no tools: an echo"
    if row.floor and agent.interpreter is None:
        return "native binary"
    if row.floor and not own_floor(agent):
        return "the same interpreter as acp-agent"
    notes = {s.notes[row.key] for s in runner.lives[key] if row.key in s.notes}
    if notes:
        return "; ".join(sorted(notes))
    if runner.failures[key]:
        return "failed: " + runner.failures[key][-1]
    return "no sample"


def versions() -> dict[str, str]:
    def dist(venv: str, name: str) -> str:
        found = sorted((PEERS_DIR / venv).glob(f"lib/python*/site-packages/{name}-*.dist-info"))
        return found[0].name.removeprefix(f"{name}-").removesuffix(".dist-info") if found else "?"

    package = (
        PEERS_DIR / "codex-acp" / "node_modules" / "@zed-industries" / "codex-acp" / "package.json"
    )
    codex = json.loads(package.read_text())["version"] if package.exists() else "?"
    return {
        OURS: "acp-agent " + importlib.metadata.version("acp-agent-server"),
        "fast-agent": "fast-agent-mcp " + dist("fast-agent", "fast_agent_mcp"),
        "kimi-cli": "kimi-cli " + dist("kimi-cli", "kimi_cli"),
        "codex-acp": "@zed-industries/codex-acp " + codex,
        "sdk-echo": "agent-client-protocol " + importlib.metadata.version("agent-client-protocol"),
    }


def results(runner: Runner, missing: dict[str, str]) -> dict[str, Any]:
    keys = [a.key for a in runner.agents] + list(missing)
    keys = [k for k in AGENTS if k in keys]
    figures = []
    for row in ROWS:
        values: dict[str, float | None] = {}
        reasons: dict[str, str] = {}
        samples: dict[str, list[float]] = {}
        for key in keys:
            got = [] if key in missing else _values(runner, key, row)
            samples[key] = got
            values[key] = statistics.median(got) if got else None
            if not got:
                reasons[key] = missing.get(key) or _reason(runner, key, row)
        figures.append(
            {
                "key": row.key,
                "title": row.title,
                "unit": row.unit,
                "median": values,
                "reasons": reasons,
                "samples": samples,
            }
        )
    stream_frames = {
        key: statistics.median([s.stream_frames for s in runner.lives[key] if s.stream_ms])
        for key in keys
        if key not in missing and any(s.stream_ms for s in runner.lives[key])
    }
    replayed = {
        key: statistics.median([s.replayed for s in runner.loads[key]])
        for key in keys
        if runner.loads.get(key)
    }
    return {
        "agents": keys,
        "replayed": replayed,
        "labels": {k: AGENTS[k].label for k in keys},
        "versions": versions(),
        "figures": figures,
        "hi": {k: v.as_json() for k, v in runner.hi.items()},
        "stream_frames": stream_frames,
        "failures": {k: v for k, v in runner.failures.items() if v},
        "missing": missing,
    }


def _cell(figure: dict[str, Any], key: str) -> str:
    value = figure["median"][key]
    if value is None:
        return f"— ({figure['reasons'][key]})"
    ours = figure["median"].get(OURS)
    text = f"{fmt(value)} {figure['unit']}"
    if key != OURS and ours:
        text += f" ({fmt(value / ours)}{TIMES})"
    return text


def table(res: dict[str, Any]) -> str:
    keys = res["agents"]
    rows = [
        "| figure | " + " | ".join(res["labels"][k] for k in keys) + " |",
        "|---|" + "---:|" * len(keys),
    ]
    for figure in res["figures"]:
        rows.append(f"| {figure['title']} | " + " | ".join(_cell(figure, k) for k in keys) + " |")
    return "\n".join(rows)


def hi_table(res: dict[str, Any]) -> str:
    keys = [k for k in res["agents"] if k in res["hi"]]
    if not keys:
        return "(no agent answered the first `hi`)"
    hi = res["hi"]
    lines = [
        "| first prompt `hi` | " + " | ".join(res["labels"][k] for k in keys) + " |",
        "|---|" + "---:|" * len(keys),
    ]

    def row(title: str, cell: Callable[[dict[str, Any]], str]) -> None:
        lines.append(f"| {title} | " + " | ".join(cell(hi[k]) for k in keys) + " |")

    row("wire API", lambda h: "Chat Completions" if h["wire"] == "chat" else "Responses")
    row("model requests for the one prompt", lambda h: str(h["requests"]))
    row("request body", lambda h: f"{h['body_bytes']:,} B")
    row("system prompt (text)", lambda h: f"{h['system_bytes']:,} B")
    row("tool schemas", lambda h: f"{h['tool_count']} tools, {h['tools_bytes']:,} B")
    row("messages / input items", lambda h: str(h["items"]))
    return "\n".join(lines)


def floor_gap(res: dict[str, Any]) -> str:
    """Spawn → ``initialize`` above the interpreter's own floor, per agent with a floor."""
    medians = {f["key"]: f["median"] for f in res["figures"]}
    start, floor = medians["initialize_ms"], medians["floor_ms"]
    gaps = [
        f"{res['labels'][k]} {fmt(start[k] - floor[k])} ms"
        for k in res["agents"]
        if start.get(k) is not None and floor.get(k) is not None
    ]
    return "Spawn → `initialize` above the interpreter's floor: " + (", ".join(gaps) or "—") + "."


def tables(res: dict[str, Any], info: dict[str, Any]) -> str:
    return table(res) + "\n\n" + floor_gap(res) + "\n\n" + hi_table(res)


def section(res: dict[str, Any], info: dict[str, Any]) -> str:
    m = info["machine"]
    versions = ", ".join(res["versions"][k] for k in res["agents"])
    frames = ", ".join(f"{res['labels'][k]} {v:,.0f}" for k, v in res["stream_frames"].items())
    lines = [
        BEGIN,
        "",
        f"Run of {info['date']} (`{info['command']}`, {info['seconds']:.0f} s: {info['rounds']} "
        f"rounds kept, {info['warmup']} warm-up dropped), commit `{m['commit']}`"
        f"{' (dirty)' if m['dirty'] else ''}.",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, Linux {m['kernel']}, "
        f"Python {m['python']} (ours, the SDK echo) and {info['peer_python']} (fast-agent, kimi-cli).",
        f"Load average (1 min) before / after: {info['load']['before']:.2f} / "
        f"{info['load']['after']:.2f} — shared with other engineers' test runs; medians of "
        "interleaved rounds, ratio = theirs ÷ ours.",
        f"Versions: {versions}."
        + (
            f" Left out of the agents' environment: {', '.join(info['unset'])}."
            if info.get("unset")
            else ""
        ),
        "",
        table(res),
        "",
        f"`agent_message_chunk` frames the 5,000 deltas arrived in (median): {frames or '—'}.",
        "",
        "`session/update` notifications replayed by `session/load` of the 20-turn session "
        "(median): "
        + (", ".join(f"{res['labels'][k]} {v:,.0f}" for k, v in res["replayed"].items()) or "—")
        + ".",
        "",
        floor_gap(res),
        "",
        "What each agent sends the model for its first prompt `hi` (a fresh session, an empty "
        "workspace):",
        "",
        hi_table(res),
        "",
        END,
    ]
    return "\n".join(lines)


def splice(doc: Path, text: str) -> None:
    """Replace this section of ``doc`` (or append it) with ``text``."""
    bench_report.splice(doc, text, BEGIN, END)


def previous(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))["results"]  # type: ignore[no-any-return]
    except (OSError, ValueError, KeyError):
        return None


def against_previous(res: dict[str, Any], old: dict[str, Any] | None) -> str:
    """Each median against the previous run's (from the JSON file), one line per figure."""
    if old is None:
        return "bench.peers: no previous run to compare with"
    before = {f["key"]: f["median"] for f in old["figures"]}
    lines = ["bench.peers: against the previous run (previous → now):"]
    for figure in res["figures"]:
        was = before.get(figure["key"], {})
        cells = []
        for key, now in figure["median"].items():
            then = was.get(key)
            if now is not None and then:
                cells.append(f"{key} {fmt(then)} → {fmt(now)} ({now / then - 1:+.0%})")
        lines.append(f"  {figure['title']}: " + (", ".join(cells) or "—"))
    return "\n".join(lines)


def run_info(
    args: argparse.Namespace, seconds: float, root: Path, load_before: float
) -> dict[str, Any]:
    python = AGENTS["fast-agent"].interpreter
    peer_python = "?"
    if python and Path(python[0]).exists():
        out = subprocess.run([*python, "--version"], capture_output=True, text=True, check=False)
        peer_python = out.stdout.strip()
    command = "python -m bench.peers"
    if args.rounds != 9 or args.warmup != 1:
        command += f" --rounds {args.rounds} --warmup {args.warmup}"
    if args.only:
        command += " --only " + " ".join(args.only)
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "seconds": seconds,
        "rounds": args.rounds,
        "warmup": args.warmup,
        "machine": machine(root),
        "peer_python": peer_python,
        "load": {"before": load_before, "after": os.getloadavg()[0]},
    }
