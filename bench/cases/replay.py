"""``session/load`` replay of large journals, against raw decoding of the same file.

Two synthetic journals (``bench/journals.py``), small and large (10k and 100k events in a full
run). Ours: one long-lived agent; a sample is the time from writing ``session/load`` to reading
its answer, every replayed ``session/update`` read and decoded by the client on the way; then
``session/close`` (untimed) so the next sample loads again. Baseline: in the benchmark process,
read the file and ``msgspec.json.decode`` every line into plain objects. Interleaved. Linearity
compares ours' large/small time ratio with the raw decode's.
"""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from bench.journals import write_journal
from bench.lab import PROTOCOL, Lab, Sizes, start_ours
from bench.stats import Better, Figure, Target, interleave, median
from bench.wire import WireClient

_DECODE = msgspec.json.Decoder()
AFTER_ANSWER = frozenset({"available_commands_update"})  # sent after the load is answered


def raw_decode(path: Path) -> float:
    started = time.perf_counter()
    data = path.read_bytes()
    for line in data.split(b"\n")[:-1]:
        _DECODE.decode(line)
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

            async def ours(sid: str = session_id, exp: list[int] = expect) -> float:
                return await timed_load(client, sid, lab.cwd, exp)

            async def raw(p: Path = path) -> float:
                return raw_decode(p)

            samples = await interleave({"ours": ours, "raw": raw}, rounds, warmup=1)
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
                    target=Target(2.5, text="<= 2.5x"),
                    samples=rounds,
                    note=f"{expect[0]:,} session/update notifications replayed",
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
