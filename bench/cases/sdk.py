"""Side by side with an agent on the official Python SDK, driven by the same client.

- ``initialize`` from process start: the child is spawned and ``initialize`` written at once;
  the sample is the time from just before the spawn to reading the answer. Fresh processes,
  interleaved.
- Prompt round trips per second: one long-lived child each, ``prompt_batch`` sequential
  one-chunk prompts per sample (ours journals every turn durably; the SDK echo keeps nothing).
The third side-by-side figure, notifications per second, comes from ``stream``.
"""

from __future__ import annotations

import time

from bench import sdk_agent
from bench.lab import PROTOCOL, Lab, Sizes, handshake, start_ours, text_prompt
from bench.stats import Better, Figure, Target, interleave, median
from bench.wire import WireClient


async def time_to_initialize(client: WireClient) -> float:
    try:
        await client.request("initialize", PROTOCOL, within=60)
        return time.perf_counter() - client.started
    finally:
        await client.close()


async def prompt_rate(client: WireClient, session_id: str, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        answer = await client.request("session/prompt", text_prompt(session_id, "hi"))
        assert answer["stopReason"] == "end_turn", answer
    return count / (time.perf_counter() - started)


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    async def ours_start() -> float:
        return await time_to_initialize(await start_ours(lab, "startup"))

    async def sdk_start() -> float:
        client = await WireClient.spawn(sdk_agent.command(), stderr=lab.stderr("sdk-startup"))
        return await time_to_initialize(client)

    startup = await interleave({"ours": ours_start, "sdk": sdk_start}, sizes.startup_rounds, 1)

    batch, rounds = sizes.prompt_batch, sizes.prompt_rounds
    script = lab.script("prompts", [{"text": "echo: hi"}] * (batch * (rounds + 1)))
    ours = await start_ours(lab, "prompts", script)
    sdk = await WireClient.spawn(sdk_agent.command(), stderr=lab.stderr("sdk-prompts"))
    try:
        ours_sid = await handshake(ours, lab.cwd, "prompts")
        sdk_sid = await handshake(sdk, lab.cwd)
        rates = await interleave(
            {
                "ours": lambda: prompt_rate(ours, ours_sid, batch),
                "sdk": lambda: prompt_rate(sdk, sdk_sid, batch),
            },
            rounds,
            warmup=1,
        )
    finally:
        await ours.close()
        await sdk.close()
    return [
        Figure(
            key="sdk_initialize",
            title="`initialize` answered, from process start",
            unit="ms",
            ours=1000 * median(startup["ours"]),
            baseline=1000 * median(startup["sdk"]),
            baseline_label="echo agent on agent-client-protocol (Python SDK)",
            better=Better.LOWER,
            target=Target(1.0, text="< 1x (faster)"),
            samples=sizes.startup_rounds,
        ),
        Figure(
            key="sdk_prompt_rate",
            title="prompt round trips per second (one chunk each, sequential)",
            unit="prompts/s",
            ours=median(rates["ours"]),
            baseline=median(rates["sdk"]),
            baseline_label="echo agent on agent-client-protocol (Python SDK)",
            better=Better.HIGHER,
            samples=rounds,
            note="ours makes each turn durable (journal fdatasync at its barriers); the SDK echo keeps nothing",
        ),
    ]
