"""Streaming: ``agent_message_chunk`` notifications per second to a client process.

Three children stream ``N`` chunks of ``"token "`` each round, read by the same client on the
same kind of pipe: ours (one script line of ``N`` chunks, one turn), the bare encode-and-write
loop (``bare_writer``) and the official-SDK echo agent (``sdk_agent``, prompt ``stream N``). A
sample is chunks / seconds from writing the request to reading its answer (the answer comes
after the last chunk). A separate, untimed run under ``bench/sync_counting_agent.py``
counts the ``fdatasync`` calls one such turn makes on its journal.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from bench import bare_writer, sdk_agent, sync_counting_agent
from bench.lab import Lab, Sizes, handshake, start_ours, text_prompt
from bench.stats import Better, Figure, Target, interleave, median
from bench.wire import WireClient

CHUNK = sdk_agent.CHUNK


async def timed_stream(
    client: WireClient, session_id: str, method: str, params: object, n: int
) -> float:
    before = client.updates.get(session_id, 0)
    started = time.perf_counter()
    await client.request(method, params)
    elapsed = time.perf_counter() - started
    got = client.updates.get(session_id, 0) - before
    assert got >= n, f"{method}: {got} updates for {n} chunks"
    return n / elapsed


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    n = sizes.stream_chunks
    rounds, warmup = sizes.stream_rounds, 1
    script = lab.script("stream", [{"chunks": [CHUNK] * n}] * (rounds + warmup))
    ours = await start_ours(lab, "stream", script)
    bare = await WireClient.spawn(bare_writer.command(), stderr=lab.stderr("bare"))
    sdk = await WireClient.spawn(sdk_agent.command(), stderr=lab.stderr("sdk-stream"))
    try:
        ours_sid = await handshake(ours, lab.cwd, "stream")
        sdk_sid = await handshake(sdk, lab.cwd)
        samplers = {
            "ours": lambda: timed_stream(
                ours, ours_sid, "session/prompt", text_prompt(ours_sid, "go"), n
            ),
            "bare": lambda: timed_stream(
                bare, "bare", "stream", {"sessionId": "bare", "n": n, "text": CHUNK}, n
            ),
            "sdk": lambda: timed_stream(
                sdk, sdk_sid, "session/prompt", text_prompt(sdk_sid, f"stream {n}"), n
            ),
        }
        samples = await interleave(samplers, rounds, warmup)
    finally:
        for client in (ours, bare, sdk):
            await client.close()
    syncs = await count_syncs(lab, sizes.sync_chunks)
    rate = {name: median(values) for name, values in samples.items()}
    return [
        Figure(
            key="stream_vs_bare",
            title=f"agent_message_chunk notifications per second ({n} per turn)",
            unit="notif/s",
            ours=rate["ours"],
            baseline=rate["bare"],
            baseline_label="bare encode-and-write loop, same pipe",
            better=Better.HIGHER,
            target=Target(0.3, text=">= 0.3x"),
            samples=rounds,
        ),
        Figure(
            key="sdk_notifications",
            title=f"notifications per second vs the official SDK ({n} per turn)",
            unit="notif/s",
            ours=rate["ours"],
            baseline=rate["sdk"],
            baseline_label="echo agent on agent-client-protocol (Python SDK)",
            better=Better.HIGHER,
            target=Target(3.0, text=">= 3x"),
            samples=rounds,
        ),
        Figure(
            key="fsync_per_1000_chunks",
            title=f"journal fdatasync calls per 1,000 streamed chunks ({sizes.sync_chunks} in one turn)",
            unit="calls",
            ours=1000 * syncs / sizes.sync_chunks,
            baseline=1000.0,
            baseline_label="one fdatasync per chunk",
            better=Better.LOWER,
            target=Target(10.0, on_ratio=False, text="<= 10 (per barrier, never per chunk)"),
            samples=1,
            note=f"{syncs} journal fdatasync calls for the whole turn",
        ),
    ]


async def count_syncs(lab: Lab, n: int) -> int:
    """``fdatasync``/``fsync`` calls on the session journal during one turn of ``n`` chunks."""
    log = lab.root / "syncs.jsonl"
    script = lab.script("syncs", [{"chunks": [CHUNK] * n}])
    argv = sync_counting_agent.command("--model", f"script:{script}")
    client = await start_ours(lab, "syncs", argv=argv, env={sync_counting_agent.ENV: str(log)})
    try:
        session_id = await handshake(client, lab.cwd, "syncs")
        journal = str(lab.state_dir("syncs") / "sessions" / session_id / "journal.jsonl")
        before = len(journal_syncs(log, journal))
        await client.request("session/prompt", text_prompt(session_id, "go"))
        await client.request("_acp_agent/when_idle", {"sessionId": session_id})
        return len(journal_syncs(log, journal)) - before
    finally:
        await client.close()


def journal_syncs(log: Path, journal: str) -> list[dict[str, object]]:
    if not log.exists():
        return []
    records = [json.loads(text) for text in log.read_text().splitlines() if text]
    return [record for record in records if record["path"] == journal]
