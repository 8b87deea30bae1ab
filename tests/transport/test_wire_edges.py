"""Valid JSON msgspec refuses (issue 14): escaped lone surrogates and byte order marks.

The process-level side (answers under the right id, a turn that completes, the journal) is in
``tests/integration/test_wire_edges.py``; here is the decoder, down to each escape.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, strategies as st

from acp_agent.errors import ParseError
from acp_agent.transport import jsonrpc
from acp_agent.transport.framing import BOM
from acp_agent.transport.jsonrpc import (
    IncomingErrorResponse,
    IncomingNotification,
    IncomingRequest,
    IncomingResponse,
    Invalid,
    decode_message,
    replace_lone_surrogates,
)

LONE = re.compile("[\ud800-\udfff]")


def read_as(text: str) -> str:
    """What the agent must read a Python string as: each lone surrogate is U+FFFD.

    ``json.loads`` joins a valid pair into one character, so what is left is lone.
    """
    return LONE.sub("\ufffd", text)


def params_of(line: bytes) -> Any:
    message = decode_message(line)
    assert isinstance(message, IncomingRequest | IncomingNotification), message
    assert message.params is not None
    return msgspec.json.decode(message.params)


def request_with(text_json: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"s":%s}}' % text_json.encode()


# --- the rewriting ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (rb'"\ud83d"', rb'"\ufffd"'),  # high, at the end of the string
        (rb'"\ud83dx"', rb'"\ufffdx"'),
        (rb'"\udbff\u0041"', rb'"\ufffd\u0041"'),  # high before an escape that is no low
        (rb'"\ude00"', rb'"\ufffd"'),  # low
        (rb'"\uDC00\uD800"', rb'"\ufffd\ufffd"'),  # low then high: both lone, upper case
        (rb'"\ud83d\ud83d\ude00"', rb'"\ufffd\ud83d\ude00"'),  # a lone high before a pair
        (rb'"\ud83d\ude00\ude00"', rb'"\ud83d\ude00\ufffd"'),  # a pair before a lone low
        (rb'"\\\ud83d"', rb'"\\\ufffd"'),  # an escaped backslash, then a real escape
        (rb'"\\\\\ude00"', rb'"\\\\\ufffd"'),
        (rb'"\\ud83d \ud83d"', rb'"\\ud83d \ufffd"'),  # escaped backslash before u is text
        (rb'"\ud83d\\ude00"', rb'"\ufffd\\ude00"'),  # ... so this high has no low after it
        (rb'"\\ud83d\ude00"', rb'"\\ud83d\ufffd"'),  # ... nor this low a high before it
        (rb'"\"\ud83d"', rb'"\"\ufffd"'),
    ],
)
def test_lone_surrogate_escapes_are_rewritten_and_nothing_else(before: bytes, after: bytes) -> None:
    assert replace_lone_surrogates(before) == after
    assert len(after) == len(before)


@pytest.mark.parametrize(
    "line",
    [
        rb'"\ud83d\ude00"',
        rb'"\uD83D\uDE00"',
        rb'"\udbff\udfff"',
        rb'"\\ud83d"',
        rb'"\\\\ud83d"',
        rb'"\u00e9\ud7ff\ue000\ufffd"',  # neighbours of the surrogate range
        b'"plain"',
    ],
)
def test_lines_without_a_lone_surrogate_are_returned_unchanged(line: bytes) -> None:
    assert replace_lone_surrogates(line) == line


def test_the_rewriting_is_linear_in_escaped_backslashes() -> None:
    """8 MiB of ``\\\\`` and one lone surrogate: a scan, not a Python step per escape (a
    split at each escaped backslash took seconds per MiB here)."""
    line = b'{"jsonrpc":"2.0","id":1,"method":"m","params":"\\ud800' + b"\\\\" * (4 << 20) + b'"}'
    started = time.perf_counter()
    message = decode_message(line)
    assert time.perf_counter() - started < 3.0
    assert isinstance(message, IncomingRequest) and message.params is not None
    assert bytes(message.params).startswith(b'"\\ufffd' + b"\\\\" * 2)


# --- decoding -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text_json", "expected"),
    [
        (r'"cut \ud83d"', "cut \ufffd"),
        (r'"\ude00 low"', "\ufffd low"),
        (r'"\ud83d\ude00"', "\U0001f600"),  # a valid pair: the fast path, untouched
        (r'"\\ud83d"', "\\ud83d"),  # escaped backslash: text, fast path
        (r'"\\ud83d \ud83d"', "\\ud83d \ufffd"),
    ],
)
def test_a_request_param(text_json: str, expected: str) -> None:
    message = decode_message(request_with(text_json))
    assert isinstance(message, IncomingRequest) and message.id == 7
    assert params_of(request_with(text_json)) == {"s": expected}


def test_a_notification() -> None:
    line = rb'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s\ud83d"}}'
    message = decode_message(line)
    assert isinstance(message, IncomingNotification) and message.method == "session/cancel"
    assert params_of(line) == {"sessionId": "s\ufffd"}


@pytest.mark.parametrize("escape", [r"\ud83d", r"\udc00"])
def test_a_response_to_the_agents_request(escape: str) -> None:
    """The answer to ``fs/read_text_file``: matched by its id, its content decoded."""
    line = b'{"jsonrpc":"2.0","id":12,"result":{"content":"cut %s"}}' % escape.encode()
    message = decode_message(line)
    assert isinstance(message, IncomingResponse) and message.id == 12
    assert msgspec.json.decode(message.result) == {"content": "cut \ufffd"}


def test_an_error_response_and_a_surrogate_in_a_key() -> None:
    line = (
        rb'{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no \ud800","data":{"\udfff":1}}}'
    )
    message = decode_message(line)
    assert isinstance(message, IncomingErrorResponse) and message.id == 3
    assert message.error.message == "no \ufffd"
    assert message.error.data is not msgspec.UNSET
    assert msgspec.json.decode(message.error.data) == {"\ufffd": 1}


def test_a_lone_surrogate_in_the_id_is_read_as_u_fffd() -> None:
    message = decode_message(rb'{"jsonrpc":"2.0","id":"r\ud83d","method":"m"}')
    assert message == IncomingRequest("r\ufffd", "m", None)


@pytest.mark.parametrize(
    "line",
    [
        rb'{"jsonrpc":"2.0","id":1,"method":"m","params":"\ud83d',  # truncated as well
        rb'{"jsonrpc":"2.0","id":1,"method":"m","params":"\ud83d"}}',  # trailing garbage
        rb'{"jsonrpc":"2.0","id":1,"method":"m","params":\ud83d}',  # outside a string
        rb'{"jsonrpc":"2.0","id":1,"method":"m","params":"\ud83"}',  # not an escape
    ],
)
def test_a_line_broken_otherwise_is_still_a_parse_error(line: bytes) -> None:
    message = decode_message(line)
    assert isinstance(message, Invalid) and isinstance(message.error, ParseError), message
    assert message.id is None


def test_raw_surrogate_bytes_stay_invalid_utf8() -> None:
    """Only the escape is valid JSON; the UTF-8 encoding of a surrogate is no UTF-8."""
    message = decode_message(b'{"jsonrpc":"2.0","id":1,"method":"m","params":"\xed\xa0\xbd"}')
    assert isinstance(message, Invalid) and isinstance(message.error, ParseError)


def test_the_fast_path_never_rewrites(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line msgspec accepts (a valid pair included) is decoded in one pass, as it is."""

    def fail(line: bytes) -> bytes:
        raise AssertionError("the slow path ran")

    monkeypatch.setattr(jsonrpc, "replace_lone_surrogates", fail)
    line = rb'{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\ud83d\ude00 \\ud83d"}}'
    message = decode_message(line)
    assert isinstance(message, IncomingRequest)
    assert bytes(message.params or b"") == rb'{"s":"\ud83d\ude00 \\ud83d"}'


# --- any JSON string ------------------------------------------------------------------------------

any_text = st.text(st.characters(exclude_categories=()), max_size=40)
"""Every code point, lone surrogates and adjacent high/low included."""


def escaped(text: str, upper: bool) -> str:
    """``text`` as a JSON string, everything outside printable ASCII escaped as ``\\uXXXX``."""
    body = json.dumps(text)  # ensure_ascii: surrogates escaped, lower-case hex
    if not upper:
        return body
    return re.sub(r"\\u[0-9a-f]{4}", lambda m: "\\u" + m[0][2:].upper(), body)


@given(text=any_text, upper=st.booleans())
@example(text="\ud83d", upper=False)
@example(text="\ude00", upper=True)
@example(text="\\ud83d\ud83d", upper=False)
@example(text="\ud83d\ude00", upper=False)
def test_any_json_string_survives(text: str, upper: bool) -> None:
    """Whatever string ``JSON.stringify`` could write arrives, lone surrogates as U+FFFD, in a
    request, a notification and a response alike."""
    value = escaped(text, upper)
    expected = read_as(json.loads(value))
    request = decode_message(request_with(value))
    assert isinstance(request, IncomingRequest) and request.id == 7
    assert params_of(request_with(value)) == {"s": expected}
    notification = b'{"jsonrpc":"2.0","method":"n","params":[%s]}' % value.encode()
    assert params_of(notification) == [expected]
    response = decode_message(
        b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (value.encode(), value.encode())
    )
    assert isinstance(response, IncomingResponse) and response.id == expected
    assert msgspec.json.decode(response.result) == expected


@given(text=st.text(max_size=40), upper=st.booleans())
def test_a_line_without_lone_surrogates_is_never_changed(text: str, upper: bool) -> None:
    """Text without surrogates (valid pairs are what ``json.dumps`` writes for astral
    characters): the rewriting returns the line as it is."""
    line = request_with(escaped(text, upper))
    assert replace_lone_surrogates(line) == line


@given(text=any_text, upper=st.booleans(), junk=st.binary(max_size=8))
def test_the_rewriting_is_idempotent_and_keeps_the_length(
    text: str, upper: bool, junk: bytes
) -> None:
    """So the slow path decodes again once at most, and error offsets stay true."""
    line = request_with(escaped(text, upper)) + junk
    once = replace_lone_surrogates(line)
    assert replace_lone_surrogates(once) == once
    assert len(once) == len(line)


# --- byte order marks -----------------------------------------------------------------------------


def test_a_bom_at_the_start_of_a_line_is_a_parse_error_that_names_it() -> None:
    """``LineReader`` drops the input's leading BOM; any BOM the decoder sees is a later one."""
    message = decode_message(BOM + b'{"jsonrpc":"2.0","id":1,"method":"m"}')
    assert isinstance(message, Invalid) and isinstance(message.error, ParseError)
    assert message.id is None
    assert isinstance(message.error.data, dict)
    assert "byte order mark" in message.error.data["reason"]


def test_a_bom_inside_a_string_is_text() -> None:
    assert params_of(b'{"jsonrpc":"2.0","method":"n","params":["' + BOM + b'"]}') == ["\ufeff"]
