"""The PostgreSQL journal store (``--journal-store postgresql://…``) against bare SQL, same run.

A real server of the run's own (``bench/postgres_server.py``, ``fsync=on``, a Unix socket);
skipped, with the reason on stderr, where it cannot start or the postgres extra is missing.

- ``postgres_inject_durable_p50``: the durable idle inject of ``inject.py`` (``_acp_agent/inject``
  + ``_acp_agent/when_idle``, minus two plain requests written at once) by an agent on the
  PostgreSQL store: one transaction (fence, ``COPY``, ``UPDATE``, ``COMMIT``) per barrier.
  Baseline: in the benchmark process, on its own connection, ``INSERT`` of the very row the
  agent committed for one injection, then ``COMMIT``.
- ``postgres_load_small``: ``session/load`` of a journal of ``replay_small`` events (10k in a
  full run) kept in PostgreSQL, every replayed update read by the client (``replay.py``'s
  ``timed_load``). Baseline: in the benchmark process, ``SELECT`` of the same rows, in order.

Both interleaved sample by sample (``stats.interleave``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from acp_agent.journal.reader import parse_journal
from bench.cases.inject import durable_inject, plain_pair
from bench.cases.replay import timed_load
from bench.journals import write_journal
from bench.lab import PROTOCOL, Lab, Sizes, handshake, start_ours
from bench.stats import Better, Figure, interleave, percentile

BARE_TABLE = "CREATE TABLE bench_rows (session_id text, seq bigint, line bytea, PRIMARY KEY (session_id, seq))"


def skipped(why: str) -> list[Figure]:
    print(f"bench: postgres: skipped: {why}", file=sys.stderr, flush=True)
    return []


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    try:
        import psycopg
    except ImportError:
        return skipped("the postgres extra is not installed (psycopg)")
    from bench.postgres_server import PostgresUnavailable, start_postgres

    try:
        server = start_postgres(fsync=True)
    except PostgresUnavailable as exc:
        return skipped(str(exc))
    try:
        url = server.new_database()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(BARE_TABLE)
            return [
                await inject_figure(lab, sizes, url, conn),
                await load_figure(lab, sizes, url, conn),
            ]
    finally:
        server.stop()


async def inject_figure(lab: Lab, sizes: Sizes, url: str, conn: Any) -> Figure:
    client = await start_ours(lab, "pg-inject", env={"ACP_AGENT_JOURNAL_STORE": url})
    try:
        session_id = await handshake(client, lab.cwd, "pg-inject")
        await durable_inject(client, session_id)
        row = conn.execute(
            "SELECT line FROM acp_agent_events WHERE session_id = %s ORDER BY seq DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        line = bytes(row[0])
        seq = [0]

        async def bare() -> float:
            seq[0] += 1
            started = time.perf_counter()
            with conn.transaction():
                conn.execute("INSERT INTO bench_rows VALUES (%s, %s, %s)", ("inject", seq[0], line))
            return time.perf_counter() - started

        async def ours() -> float:
            return await durable_inject(client, session_id)

        async def pair() -> float:
            return await plain_pair(client)

        samplers = {"ours": ours, "bare": bare, "plain_pair": pair}
        samples = await interleave(samplers, sizes.inject_rounds, sizes.inject_warmup)
    finally:
        await client.close()
    added = [o - p for o, p in zip(samples["ours"], samples["plain_pair"], strict=True)]
    return Figure(
        key="postgres_inject_durable_p50",
        title="durable idle inject on the PostgreSQL store: round trip minus two plain requests, p50",
        unit="ms",
        ours=1000 * percentile(added, 0.5),
        baseline=1000 * percentile(samples["bare"], 0.5),
        baseline_label=f"INSERT of the same {len(line)}-byte row + COMMIT",
        better=Better.LOWER,
        samples=len(added),
        note=f"round trip {1000 * percentile(samples['ours'], 0.5):.2f} ms",
    )


async def load_figure(lab: Lab, sizes: Sizes, url: str, conn: Any) -> Figure:
    events = sizes.replay_small
    session_id = f"pg-load-{events // 1000}k"
    path = write_journal(lab.state_dir("pg-load-source"), session_id, lab.cwd, events)
    copy_into(conn, path, session_id)
    client = await start_ours(lab, "pg-load", env={"ACP_AGENT_JOURNAL_STORE": url})
    try:
        await client.request("initialize", PROTOCOL)
        expect: list[int] = []

        async def ours() -> float:
            return await timed_load(client, session_id, lab.cwd, expect)

        async def bare() -> float:
            started = time.perf_counter()
            with conn.cursor(binary=True) as cursor:
                cursor.execute(
                    "SELECT line FROM acp_agent_events WHERE session_id = %s ORDER BY seq",
                    (session_id,),
                )
                rows = cursor.fetchall()
            assert len(rows) == events
            return time.perf_counter() - started

        rounds = sizes.replay_rounds_small
        samples = await interleave({"ours": ours, "bare": bare}, rounds, warmup=1)
    finally:
        await client.close()
    return Figure(
        key="postgres_load_small",
        title=f"session/load replay from the PostgreSQL store, {events:,} events",
        unit="ms",
        ours=1000 * percentile(samples["ours"], 0.5),
        baseline=1000 * percentile(samples["bare"], 0.5),
        baseline_label="SELECT of the same rows, in seq order",
        better=Better.LOWER,
        samples=rounds,
        note=f"{expect[0]:,} session/update notifications replayed",
    )


def copy_into(conn: Any, path: Path, session_id: str) -> None:
    """The journal file's header and lines, as the store keeps them (``postgres/schema.py``)."""
    from acp_agent.journal.postgres.schema import ensure_schema

    data = path.read_bytes()
    parse_journal(data, path=path)  # the same checks the store's reader makes
    header, *lines = data.split(b"\n")[:-1]
    ensure_schema(conn)
    with conn.transaction():
        conn.execute(
            "INSERT INTO acp_agent_sessions (id, header, last_seq) VALUES (%s, %s, %s)",
            (session_id, header + b"\n", len(lines)),
        )
        with conn.cursor().copy("COPY acp_agent_events (session_id, seq, line) FROM STDIN") as copy:
            for seq, line in enumerate(lines, start=1):
                copy.write_row((session_id, seq, line + b"\n"))
