"""First token of a fresh process, against the same processes' spawn → ``initialize`` time.

Each sample is a fresh agent on the real OpenAI-compatible provider (``--model openai:gpt-test``,
a fresh state dir, an empty config file) pointed at ``bench/loopback.py``, which answers a
minimal event stream at once: spawn → ``initialize`` → ``session/new`` → ``session/prompt``
``hi`` → the first ``agent_message_chunk`` read from its stdout. The figure is the time from
``initialize`` answered to that chunk; the baseline is spawn → ``initialize`` answered, measured
in the very same processes.

The agent imports httpx on a background thread once ``session/new`` is answered
(``acp_agent/model/openai/warm.py``). A client that prompts at once may still wait for that
import; one whose user types first should not. So two samplers run interleaved (order flipped
every round, one warm-up round dropped): the prompt written right after ``session/new`` is
answered, and written after a ``PAUSE`` "typing" pause (included in that figure, as the user's
time). Each row's note splits the prompt's own time: prompt written → the HTTP request's body
read by the loopback server (the import wait, if any, and building the request) and prompt
written → first chunk.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass

from bench.lab import PROTOCOL, Lab, Sizes, start_openai, text_prompt
from bench.loopback import Loopback, loopback
from bench.stats import Better, Figure, Sampler, interleave, median
from bench.wire import Json, WireError, result_of

PAUSE = 0.1
WARMUP = 1


@dataclass(frozen=True)
class Sample:
    initialize: float
    """spawn → ``initialize`` answered."""
    first_chunk: float
    """``initialize`` answered → first ``agent_message_chunk``."""
    to_request: float
    """prompt written → the model request read by the server."""
    to_chunk: float
    """prompt written → first ``agent_message_chunk``."""


async def fresh_turn(lab: Lab, server: Loopback, name: str, pause: float) -> Sample:
    server.take()
    client = await start_openai(lab, name, server.base_url)
    first: asyncio.Future[float] = asyncio.get_running_loop().create_future()

    def on_update(frame: Json, now: float) -> None:
        kind = frame["params"]["update"]["sessionUpdate"]
        if kind == "agent_message_chunk" and not first.done():
            first.set_result(now)

    client.on_update = on_update
    try:
        await client.request("initialize", PROTOCOL, within=60)
        initialized = time.perf_counter()
        created = await client.request("session/new", {"cwd": str(lab.cwd), "mcpServers": []})
        if pause:
            await asyncio.sleep(pause)
        prompted = time.perf_counter()
        answer = client.start_request("session/prompt", text_prompt(created["sessionId"], "hi"))
        await client.flush()
        chunk = await asyncio.wait_for(first, 60)
        stop = result_of(await asyncio.wait_for(answer, 60))["stopReason"]
        if stop != "end_turn":
            raise WireError(f"the first prompt ended with {stop}")
    finally:
        await client.close()
    requests = [r for r in server.take() if r.path.endswith("/chat/completions")]
    if not requests:
        raise WireError("the loopback server saw no model request")
    return Sample(
        initialize=initialized - client.started,
        first_chunk=chunk - initialized,
        to_request=requests[0].received - prompted,
        to_chunk=chunk - prompted,
    )


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    rounds = sizes.first_token_rounds
    samples: dict[str, list[Sample]] = {"now": [], "typing": []}
    numbers = itertools.count(1)

    async with loopback() as server:

        def sampler(variant: str, pause: float) -> Sampler:
            async def sample() -> float:
                got = await fresh_turn(lab, server, f"first-token-{next(numbers)}", pause)
                samples[variant].append(got)
                return got.first_chunk

            return sample

        await interleave(
            {"now": sampler("now", 0.0), "typing": sampler("typing", PAUSE)}, rounds, WARMUP
        )

    kept = {variant: got[WARMUP:] for variant, got in samples.items()}
    baseline = 1000 * median([s.initialize for got in kept.values() for s in got])
    label = "spawn → `initialize` answered, the same processes"

    def ms(variant: str, field: str) -> float:
        return 1000 * median([getattr(s, field) for s in kept[variant]])

    def extra(variant: str) -> dict[str, float]:
        spawn_to_chunk = median([s.initialize + s.first_chunk for s in kept[variant]])
        return {
            "prompt_to_request_ms": ms(variant, "to_request"),
            "prompt_to_first_chunk_ms": ms(variant, "to_chunk"),
            "spawn_to_initialize_ms": ms(variant, "initialize"),
            "spawn_to_first_chunk_ms": 1000 * spawn_to_chunk,
        }

    def note(variant: str, lead: str) -> str:
        e = extra(variant)
        return (
            f"{lead}prompt written → model request at the server "
            f"{e['prompt_to_request_ms']:.1f} ms, → first chunk "
            f"{e['prompt_to_first_chunk_ms']:.1f} ms; spawn → first chunk "
            f"{e['spawn_to_first_chunk_ms']:.0f} ms"
        )

    pause_ms = round(PAUSE * 1000)
    return [
        Figure(
            key="first_token_now",
            title="first token of a fresh process, prompt `hi` sent right after `session/new` "
            "(`initialize` answered → first `agent_message_chunk`)",
            unit="ms",
            ours=ms("now", "first_chunk"),
            baseline=baseline,
            baseline_label=label,
            better=Better.LOWER,
            samples=len(kept["now"]),
            note=note("now", ""),
            extra=extra("now"),
        ),
        Figure(
            key="first_token_typing",
            title=f"first token of a fresh process, prompt `hi` sent after a {pause_ms} ms "
            "typing pause (`initialize` answered → first `agent_message_chunk`)",
            unit="ms",
            ours=ms("typing", "first_chunk"),
            baseline=baseline,
            baseline_label=label,
            better=Better.LOWER,
            samples=len(kept["typing"]),
            note=note("typing", f"the {pause_ms} ms pause included; "),
            extra=extra("typing"),
        ),
    ]
