from __future__ import annotations

import itertools
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

import pytest
from hypothesis import given, strategies as st

from acp_agent.transport.framing import (
    BOM,
    DEFAULT_MAX_LINE_BYTES,
    MIB,
    LineReader,
    LineTooLong,
)

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (our sources never do)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    raise AssertionError("the coroutine suspended")


def reader(chunks: Iterable[bytes], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> LineReader:
    it = iter(chunks)

    async def source() -> bytes:
        return next(it, b"")

    return LineReader(source, max_line_bytes)


def lines(chunks: Iterable[bytes], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> list[object]:
    async def collect() -> list[object]:
        return [line async for line in reader(chunks, max_line_bytes)]

    return run(collect())


def test_default_cap_is_at_least_16_mib() -> None:
    assert DEFAULT_MAX_LINE_BYTES >= 16 * MIB


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([b"ab", b"c\nde", b"f\n"], [b"abc", b"def"]),
        ([b"a\nb\nc\n"], [b"a", b"b", b"c"]),
        ([b"a", b"\n", b"\n", b"b\n"], [b"a", b"", b"b"]),
        ([b"a\r\nb\r", b"\n"], [b"a", b"b"]),
        ([b"a\rb\r\r\n"], [b"a\rb\r"]),
        ([b"a\nlast"], [b"a", b"last"]),
        ([b"last\r"], [b"last"]),
        ([b"a\n"], [b"a"]),
        ([], []),
        ([b""], []),
    ],
)
def test_lines(chunks: list[bytes], expected: list[bytes]) -> None:
    assert lines(chunks) == expected


def test_line_at_the_cap_is_kept_and_one_byte_more_is_skipped() -> None:
    assert lines([b"x" * 8 + b"\n" + b"y" * 9 + b"\nz\n"], 8) == [b"x" * 8, LineTooLong(9), b"z"]
    assert lines([b"x" * 5, b"x" * 3, b"\n", b"y" * 5, b"y" * 4, b"\nz"], 8) == [
        b"x" * 8,
        LineTooLong(9),
        b"z",
    ]


def test_too_long_final_line_without_newline() -> None:
    assert lines([b"ok\n", b"x" * 10, b"x" * 10], 8) == [b"ok", LineTooLong(20)]


def test_80_mib_line_is_skipped_with_bounded_memory() -> None:
    chunk = b"x" * (64 * 1024)
    count = 80 * 16  # 80 MiB
    cap = MIB
    chunks = [chunk] * count + [b'xx\n{"next":1}\n']
    line_reader = reader(chunks, cap)

    async def collect() -> list[object]:
        return [line async for line in line_reader]

    assert run(collect()) == [LineTooLong(count * len(chunk) + 2), b'{"next":1}']
    assert line_reader.peak_buffered <= cap + len(chunk)


def test_many_small_lines_in_one_chunk() -> None:
    data = b"".join(b"%d\n" % i for i in range(100_000))
    assert lines([data]) == [b"%d" % i for i in range(100_000)]


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([BOM + b"{}\n{}\n"], [b"{}", b"{}"]),
        ([BOM[:1], BOM[1:2], BOM[2:] + b"{}\n"], [b"{}"]),  # split inside the BOM
        ([BOM[:2], BOM[2:] + b"{}"], [b"{}"]),  # the only line, no newline
        ([BOM + b"\r\n{}\n"], [b"", b"{}"]),  # a blank first line: the decoder ignores it
        ([BOM + BOM + b"{}\n"], [BOM + b"{}"]),  # one BOM is dropped, not every one
        ([b"{}\n" + BOM + b"{}\n"], [b"{}", BOM + b"{}"]),  # a later line keeps it
        ([b"\n" + BOM + b"{}\n"], [b"", BOM + b"{}"]),  # not the very start of the input
        ([b" " + BOM + b"{}\n"], [b" " + BOM + b"{}"]),
        ([BOM], [b""]),
    ],
)
def test_a_bom_is_dropped_at_the_start_of_the_input_only(
    chunks: list[bytes], expected: list[bytes]
) -> None:
    assert lines(chunks) == expected


def test_a_first_line_over_the_cap_counts_its_bom_and_the_next_keeps_its_own() -> None:
    assert lines([BOM + b"x" * 6 + b"\n" + BOM + b"y\n"], 8) == [LineTooLong(9), BOM + b"y"]
    assert lines([BOM + b"x" * 5 + b"\n"], 8) == [b"x" * 5]


def reference(data: bytes, cap: int) -> list[object]:
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    found: list[object] = [
        LineTooLong(len(p)) if len(p) > cap else p.removesuffix(b"\r") for p in parts
    ]
    if found and isinstance(found[0], bytes):
        found[0] = found[0].removeprefix(BOM)
    return found


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


pieces = st.sampled_from([b"a", b"bc", b"\n", b"\r", b"\r\n", b"{}", b"\xff", b"defgh", BOM])


@given(
    data=st.lists(pieces, max_size=60).map(b"".join),
    cuts=st.lists(st.integers(min_value=0, max_value=500), max_size=20),
    cap=st.integers(min_value=1, max_value=12),
)
def test_any_split_yields_the_same_lines(data: bytes, cuts: list[int], cap: int) -> None:
    assert lines(split(data, cuts), cap) == reference(data, cap)
    assert lines([data], cap) == reference(data, cap)
