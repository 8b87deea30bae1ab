from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.lowlevel
import msgspec
import pytest
from structlog.testing import capture_logs

from acp_agent.errors import WireClosed
from acp_agent.transport.connection import Connection, ServeEnd
from acp_agent.transport.stdio import FdSink, FdSource
from tests.transport.support import ToyRouter, request

ROOT = Path(__file__).resolve().parents[2]
LINES = [request(i, "echo", {"i": i}) for i in range(100)] + [request("last", "slow")]
ANSWERS = [{"jsonrpc": "2.0", "id": i, "result": {"i": i}} for i in range(100)] + [
    {"jsonrpc": "2.0", "id": "last", "result": {"slow": None}}
]


@pytest.fixture
def fds() -> Iterator[list[int]]:
    opened: list[int] = []
    yield opened
    for fd in opened:
        os.close(fd)


async def serve_fds(fd_in: int, fd_out: int) -> None:
    source, sink = FdSource(fd_in, chunk_size=7), FdSink(fd_out)
    router = ToyRouter()
    router.release.set()
    try:
        async with Connection(source, sink) as conn:
            assert await conn.serve(router) is ServeEnd.EOF
            await conn.wait_deferred()
    finally:
        source.close()
        sink.close()


def decode_lines(data: bytes) -> list[object]:
    return [msgspec.json.decode(line) for line in data.splitlines()]


async def test_regular_files(tmp_path: Path, fds: list[int]) -> None:
    (tmp_path / "in.jsonl").write_bytes(b"\n".join(LINES))  # the last line has no newline
    fd_in = os.open(tmp_path / "in.jsonl", os.O_RDONLY)
    fd_out = os.open(tmp_path / "out.jsonl", os.O_WRONLY | os.O_CREAT, 0o600)
    fds += [fd_in, fd_out]
    await serve_fds(fd_in, fd_out)
    assert decode_lines((tmp_path / "out.jsonl").read_bytes()) == ANSWERS


async def served_over_pipes(
    fds: list[int], writes: list[bytes], *, nonblocking: bool = False
) -> list[object]:
    """The answers to ``writes`` (each one ``write`` by a client thread) read back from the
    agent's output pipe; ``nonblocking``: its input pipe is left ``O_NONBLOCK``."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    fds += [in_r, out_r, out_w]
    os.set_blocking(in_r, not nonblocking)
    received = bytearray()

    def client() -> None:
        for data in writes:
            os.write(in_w, data)
        os.close(in_w)
        while chunk := os.read(out_r, 65536):
            received.extend(chunk)

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, client)
        await serve_fds(in_r, out_w)
        os.close(out_w)
        fds.remove(out_w)
    return decode_lines(bytes(received))


async def test_pipes(fds: list[int]) -> None:
    assert await served_over_pipes(fds, [b"\n".join(LINES) + b"\n"]) == ANSWERS


async def test_epipe_raises_wire_closed_every_time(fds: list[int]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    fds.append(write_end)
    sink = FdSink(write_end)
    try:
        for _ in range(2):
            with pytest.raises(WireClosed):
                await sink(b"x\n")
    finally:
        sink.close()


async def test_epipe_sets_wire_closed_once(fds: list[int]) -> None:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.close(out_r)
    fds += [in_r, in_w, out_w]
    source, sink = FdSource(in_r), FdSink(out_w)
    with capture_logs() as logs:
        async with Connection(source, sink) as conn:
            os.write(in_w, request(1, "echo") + b"\n")
            assert await conn.serve(ToyRouter()) is ServeEnd.WIRE_CLOSED  # stdin is still open
            assert conn.wire_closed.is_set()
            await conn.notify("n")
    sink.close()
    assert [e["event"] for e in logs].count("wire_closed") == 1


def run_python(code: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        timeout=20,
        check=True,
    )


def test_take_stdout_keeps_stray_output_off_the_wire() -> None:
    done = run_python(
        """
        import os, subprocess, sys
        from acp_agent.transport.stdio import take_stdout
        wire = take_stdout()
        print("stray print")
        subprocess.run([sys.executable, "-c", "print('child output')"], check=True)
        os.write(wire, b'{"frame":1}\\n')
        """
    )
    assert done.stdout == b'{"frame":1}\n'
    assert b"stray print" in done.stderr and b"child output" in done.stderr


def test_an_abandoned_read_does_not_keep_the_process_alive() -> None:
    run_python(
        """
        import os, anyio
        from acp_agent.transport.stdio import FdSource
        async def main():
            read_end, _write_end = os.pipe()  # nothing will ever arrive
            with anyio.move_on_after(0.1):
                await FdSource(read_end)()
        anyio.run(main)
        """
    )


async def test_pipe_batches_keep_their_order_on_the_loop_and_the_thread(fds: list[int]) -> None:
    # stdio.py: small batches for a pipe with room are written on the loop, larger ones by the
    # fd's thread; the bytes still go out in the order the sink was called.
    read_end, write_end = os.pipe()
    fds += [read_end, write_end]
    sink = FdSink(write_end)
    batches = [(b"%d " % i) * (3000 if i % 3 == 0 else 5) + b"\n" for i in range(30)]
    received = bytearray()
    expected = b"".join(batches)

    def drain() -> None:
        while len(received) < len(expected):
            received.extend(os.read(read_end, 65536))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, drain)
            for batch in batches:
                await sink(batch)
    finally:
        sink.close()
    assert bytes(received) == expected


async def test_a_full_pipe_is_written_by_the_thread_not_the_loop(fds: list[int]) -> None:
    # stdio.py: the loop writes only when ``poll`` says the pipe has room; a client that stopped
    # reading must not block the event loop (a ``session/cancel`` must still get in).
    read_end, write_end = os.pipe()
    fds += [read_end, write_end]
    os.set_blocking(write_end, False)
    while True:  # fill the pipe to the brim
        try:
            os.write(write_end, b"f" * 4096)
        except BlockingIOError:
            try:
                os.write(write_end, b"f")
            except BlockingIOError:
                break
    os.set_blocking(write_end, True)
    sink = FdSink(write_end)
    loop_alive = threading.Event()
    received = bytearray()

    def drain() -> None:
        loop_alive.wait(10)  # if the loop blocked in write(2), this unblocks it after a while
        while not received.endswith(b"frame\n"):
            received.extend(os.read(read_end, 65536))

    written: list[bool] = []

    async def write() -> None:
        await sink(b"frame\n")
        written.append(True)

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()  # before the sink is called: a blocked loop could not start it
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            for _ in range(20):
                await anyio.lowlevel.checkpoint()
            pending_while_loop_ran = not written
            loop_alive.set()
    finally:
        sink.close()
    await anyio.to_thread.run_sync(drainer.join, 30)
    assert pending_while_loop_ran
    assert written == [True] and received.endswith(b"frame\n")


def reader_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("acp-read-fd")}


async def test_a_pipe_is_read_on_the_loop_a_regular_file_by_the_thread(
    tmp_path: Path, fds: list[int]
) -> None:
    # stdio.py: on a pipe the loop waits for it to be readable and reads it itself (no hop to
    # a thread and back per chunk); epoll refuses regular files, which keep the thread.
    before = reader_threads()  # an earlier test's may still be ending
    in_r, in_w = os.pipe()
    fds += [in_r]
    os.write(in_w, b"one\ntwo\n")
    os.close(in_w)
    pipe = FdSource(in_r, chunk_size=4)
    chunks = [await pipe() for _ in range(3)]
    assert chunks == [b"one\n", b"two\n", b""]  # then the end of input
    assert reader_threads() - before == set()
    pipe.close()
    (tmp_path / "in.txt").write_bytes(b"one\n")
    fd_file = os.open(tmp_path / "in.txt", os.O_RDONLY)
    fds += [fd_file]
    regular = FdSource(fd_file)
    assert await regular() == b"one\n"
    assert [t.name for t in reader_threads() - before] == [f"acp-read-fd{fd_file}"]
    regular.close()


async def test_a_pipe_left_nonblocking_is_waited_on_not_spun_on(fds: list[int]) -> None:
    # A parent may hand over its pipe with O_NONBLOCK set: a read that finds it empty raises
    # BlockingIOError, and the loop waits for it to be readable again. One line per write, so
    # the agent's reads find the pipe empty between them.
    lines = [line + b"\n" for line in LINES]
    assert await served_over_pipes(fds, lines, nonblocking=True) == ANSWERS
