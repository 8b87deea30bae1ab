"""The writer's ``Sink`` in PostgreSQL: one transaction per barrier, fenced by the epoch.

``persist(data)`` gets the barrier's lines (whole, ``\\n``-terminated, checksummed: the bytes a
journal file would get) and commits them in one transaction on the session's connection
(``lease.py``):

1. ``SELECT last_seq … WHERE id = $1 AND epoch = $2 FOR UPDATE``: no row means another process
   took the session over, and nothing is written (``JournalTakenOver``);
2. ``COPY`` the lines into ``acp_agent_events`` with their seqs;
3. ``UPDATE`` the session's ``last_seq``, ``updated_at`` and lease, then ``COMMIT``.

When the commit's answer is lost (the connection broke after ``COMMIT`` was sent), the writer
retries the same lines: step 1 then finds a ``last_seq`` past what we knew durable, and the lines
up to it — committed by the attempt whose answer was lost, at our epoch, so by us — are not
sent again. Any failure rolls the whole transaction back: there is no torn tail in a table.
"""

from __future__ import annotations

import time

from acp_agent.journal.postgres.lease import Conn, Lease

FENCE = "SELECT last_seq FROM acp_agent_sessions WHERE id = %s AND epoch = %s FOR UPDATE"
ADVANCE = (
    "UPDATE acp_agent_sessions SET last_seq = %s, updated_at = clock_timestamp(),"
    " lease_until = clock_timestamp() + make_interval(secs => %s) WHERE id = %s"
)
COPY_EVENTS = "COPY acp_agent_events (session_id, seq, line) FROM STDIN"


class PgSink:
    def __init__(self, lease: Lease, durable_seq: int) -> None:
        self.lease = lease
        self.durable_seq = durable_seq
        self.writes = 0
        """Transactions committed."""
        self.syncs = 0
        """Commits (one per transaction: PostgreSQL makes each durable)."""
        self.truncates = 0

    def persist(self, data: bytes) -> None:
        lines = [line + b"\n" for line in data.split(b"\n")[:-1]]
        started = time.monotonic()
        self.lease.run(lambda conn: self._commit(conn, lines))
        self.lease.renewed(started)
        self.writes += 1
        self.syncs += 1
        self.durable_seq += len(lines)

    def _commit(self, conn: Conn, lines: list[bytes]) -> None:
        lease = self.lease
        last = self.durable_seq + len(lines)
        with conn.transaction():
            row = conn.execute(FENCE, (lease.session_id, lease.epoch)).fetchone()
            if row is None:
                raise lease.taken_over()
            committed = int(row[0])
            with conn.cursor().copy(COPY_EVENTS) as copy:
                for seq in range(committed + 1, last + 1):
                    copy.write_row((lease.session_id, seq, lines[seq - self.durable_seq - 1]))
            conn.execute(ADVANCE, (last, lease.ttl, lease.session_id))

    def close(self) -> None:
        return None
