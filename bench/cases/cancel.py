"""Cancel latency during streaming, against a plain request round trip in the same state.

Each round starts a turn that streams a chunk every millisecond, waits for ``WAIT_CHUNKS`` of
them, then measures (1) the round trip of a plain request (``initialize``, same params as the
handshake: handled inline, no I/O) while the turn streams, and (2) the time from writing
``session/cancel`` to reading the prompt's ``cancelled`` answer (the turn's end is journaled and
made durable before that answer). Warm-up rounds are dropped; medians reported.
"""

from __future__ import annotations

import asyncio
import time

from bench.lab import PROTOCOL, Lab, Sizes, handshake, start_ours, text_prompt
from bench.stats import Better, Figure, median
from bench.wire import Json, result_of

WAIT_CHUNKS = 20
WARMUP = 3


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    rounds = sizes.cancel_rounds + WARMUP
    line = {"chunks": ["token "] * 5000, "delayMs": 1}
    client = await start_ours(lab, "cancel", lab.script("cancel", [line] * rounds))
    plain: list[float] = []
    cancel: list[float] = []
    try:
        session_id = await handshake(client, lab.cwd, "cancel")
        streaming = asyncio.Event()
        seen = [0]

        def on_update(frame: Json, now: float) -> None:
            seen[0] += 1
            if seen[0] >= WAIT_CHUNKS:
                streaming.set()

        client.on_update = on_update
        for index in range(rounds):
            seen[0] = 0
            streaming.clear()
            answer = client.start_request("session/prompt", text_prompt(session_id, "go"))
            await client.flush()
            await asyncio.wait_for(streaming.wait(), 30)
            started = time.perf_counter()
            await client.request("initialize", PROTOCOL)
            round_trip = time.perf_counter() - started
            started = time.perf_counter()
            await client.notify("session/cancel", {"sessionId": session_id})
            stop = result_of(await asyncio.wait_for(answer, 30))["stopReason"]
            cancelled = time.perf_counter() - started
            assert stop == "cancelled", stop
            if index >= WARMUP:
                plain.append(round_trip)
                cancel.append(cancelled)
    finally:
        await client.close()
    return [
        Figure(
            key="cancel_latency",
            title="cancel latency during streaming (cancel sent -> `cancelled` answer)",
            unit="ms",
            ours=1000 * median(cancel),
            baseline=1000 * median(plain),
            baseline_label="round trip of a plain request during the same stream",
            better=Better.LOWER,
            samples=len(cancel),
        )
    ]
