"""``session/load`` replay of large journals, against raw decoding of the same file.

Two synthetic journals (``bench/journals.py``), small and large (10k and 100k events in a full
run). Ours: one long-lived agent; a sample is the time from writing ``session/load`` to reading
its answer, every replayed ``session/update`` read and decoded by the client on the way; then
``session/close`` (untimed) so the next sample loads again. Baseline: in the benchmark process,
read the file and ``msgspec.json.decode`` every line into plain objects. Interleaved. Linearity
compares ours' large/small time ratio with the raw decode's.

The floor (``replay_floor_small``/``_large``, no target): in the benchmark process, the two
steps no replay of this design can skip, on the same journal: the agent's own read of it
(``parse_journal``: every line's checksum verified and its data decoded against the schema,
before any frame may go out) and ``msgspec``-encoding the very frames the client received
(captured on the first load). No projection, no session, no pipe; interleaved with the rest.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec

from acp_agent.journal.reader import parse_journal
from bench.journals import write_journal
from bench.lab import PROTOCOL, Lab, Sizes, start_ours
from bench.stats import Better, Figure, Target, interleave, median
from bench.wire import Json, WireClient

_DECODE = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder()
REPLAY_GUARDS = {
    "small": Target(6.3, text="guard: <= 6.3x (5.68x on 2026-12-01, + 10%)"),
    "large": Target(5.4, text="guard: <= 5.4x (4.92x on 2026-12-01, + 10%)"),
}
"""No target: the old one (<= 2.5x) sits below the floor this design measures (docs/benchmarks.md,
"Two targets retired"). The guards hold the figures where they were, against getting worse."""
AFTER_ANSWER = frozenset({"available_commands_update"})  # sent after the load is answered


def raw_decode(path: Path) -> float:
    started = time.perf_counter()
    data = path.read_bytes()
    for line in data.split(b"\n")[:-1]:
        _DECODE.decode(line)
    return time.perf_counter() - started


def floor(path: Path, frames: list[Json]) -> float:
    started = time.perf_counter()
    parse_journal(path.read_bytes(), path=path)
    for frame in frames:
        _ENCODE.encode(frame)
    return time.perf_counter() - started


async def timed_load(client: WireClient, session_id: str, cwd: Path, expect: list[int]) -> float:
    before = client.count(session_id, skip=AFTER_ANSWER)
    params = {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
    started = time.perf_counter()
    await client.request("session/load", params, within=600)
    elapsed = time.perf_counter() - started
    replayed = client.count(session_id, skip=AFTER_ANSWER) - before
    if not expect:
        expect.append(replayed)
    assert replayed == expect[0] and replayed > 0, (replayed, expect)
    await client.request("session/close", {"sessionId": session_id})
    return elapsed


def label(events: int) -> str:
    return f"{events // 1000}k"


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    state = lab.state_dir("replay")
    plan = [
        (sizes.replay_small, sizes.replay_rounds_small),
        (sizes.replay_large, sizes.replay_rounds_large),
    ]
    times: dict[int, dict[str, float]] = {}
    figures = []
    client = await start_ours(lab, "replay")
    try:
        await client.request("initialize", PROTOCOL)
        for size, (events, rounds) in zip(("small", "large"), plan, strict=True):
            session_id = f"replay-{label(events)}"
            path = write_journal(state, session_id, lab.cwd, events)
            expect: list[int] = []
            frames: list[Json] = []

            def keep(
                frame: Json,
                _: float,
                sid: str = session_id,
                kept: list[Json] = frames,
                loaded: list[int] = expect,
            ) -> None:
                """The frames of the first load (the warm-up), as the client decoded them (only
                ``session/update`` frames reach ``on_update``, checked by ``WireClient``)."""
                params = frame["params"]
                if loaded or params["sessionId"] != sid:
                    return
                if params["update"]["sessionUpdate"] not in AFTER_ANSWER:
                    kept.append(frame)

            client.on_update = keep

            async def ours(sid: str = session_id, exp: list[int] = expect) -> float:
                return await timed_load(client, sid, lab.cwd, exp)

            async def raw(p: Path = path) -> float:
                return raw_decode(p)

            async def least(p: Path = path, kept: list[Json] = frames) -> float:
                return floor(p, kept)

            samplers: dict[str, Callable[[], Awaitable[float]]] = {
                "ours": ours,
                "raw": raw,
                "floor": least,
            }
            samples = await interleave(samplers, rounds, warmup=1)
            times[events] = {name: median(values) for name, values in samples.items()}
            figures.append(
                Figure(
                    key=f"replay_{size}",
                    title=f"session/load replay, {events:,} events",
                    unit="ms",
                    ours=1000 * times[events]["ours"],
                    baseline=1000 * times[events]["raw"],
                    baseline_label=(
                        f"read + msgspec-decode every line ({path.stat().st_size / 2**20:.1f} MiB)"
                    ),
                    better=Better.LOWER,
                    target=REPLAY_GUARDS[size],
                    samples=rounds,
                    note=f"{expect[0]:,} session/update notifications replayed",
                )
            )
            figures.append(
                Figure(
                    key=f"replay_floor_{size}",
                    title=(
                        "the agent's own verified read of the journal + encoding its"
                        f" {len(frames):,} frames, in one process (what no replay can skip)"
                    ),
                    unit="ms",
                    ours=1000 * times[events]["floor"],
                    baseline=1000 * times[events]["raw"],
                    baseline_label="read + msgspec-decode every line",
                    better=Better.LOWER,
                    samples=rounds,
                )
            )
    finally:
        await client.close()
    small, large = (times[events] for events, _ in plan)
    figures.append(
        Figure(
            key="replay_linearity",
            title=f"replay time {label(sizes.replay_large)} / {label(sizes.replay_small)} (linearity)",
            unit="x",
            ours=large["ours"] / small["ours"],
            baseline=large["raw"] / small["raw"],
            baseline_label="the same ratio for the raw decode",
            better=Better.LOWER,
            target=Target(1.2, text="<= 1.2x (linear)"),
            samples=min(r for _, r in plan),
        )
    )
    return figures
