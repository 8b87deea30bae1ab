from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, strategies as st

from acp_agent.errors import ErrorCode, InvalidParams, InvalidRequest, ParseError
from acp_agent.transport.framing import LineTooLong
from acp_agent.transport.jsonrpc import (
    ErrorObject,
    FrameError,
    IncomingErrorResponse,
    IncomingNotification,
    IncomingRequest,
    IncomingResponse,
    Invalid,
    InvalidReason,
    decode_message,
    encode_error,
    encode_notification,
    encode_request,
    encode_response,
)


def raw_bytes(raw: msgspec.Raw | None) -> bytes | None:
    return None if raw is None else bytes(raw)


def test_request() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":"r1","method":"m","params":{"a":[1]}}')
    assert isinstance(message, IncomingRequest)
    assert (message.id, message.method, raw_bytes(message.params)) == ("r1", "m", b'{"a":[1]}')


@pytest.mark.parametrize(("text", "expected"), [(b"0", 0), (b"-5", -5), (b"null", None)])
def test_request_ids(text: bytes, expected: object) -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":%s,"method":"m"}' % text)
    assert message == IncomingRequest(expected, "m", None)  # type: ignore[arg-type]


def test_params_null_or_absent_is_none() -> None:
    assert decode_message(b'{"jsonrpc":"2.0","method":"n","params":null}') == IncomingNotification(
        "n", None
    )
    assert decode_message(b'{"method":"n","jsonrpc":"2.0"}') == IncomingNotification("n", None)


def test_extra_members_and_meta_are_accepted() -> None:
    line = b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{}},"_meta":{"x":1},"x":[]}'
    message = decode_message(line)
    assert isinstance(message, IncomingRequest)
    assert raw_bytes(message.params) == b'{"_meta":{}}'


def test_method_wins_over_result() -> None:
    assert decode_message(b'{"jsonrpc":"2.0","id":1,"method":"m","result":1}') == IncomingRequest(
        1, "m", None
    )


def test_responses() -> None:
    ok = decode_message(b'{"jsonrpc":"2.0","id":3,"result":{"x":1}}')
    assert isinstance(ok, IncomingResponse)
    assert (ok.id, bytes(ok.result)) == (3, b'{"x":1}')
    error = decode_message(
        b'{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"no","data":[2]}}'
    )
    assert isinstance(error, IncomingErrorResponse)
    assert error.error.code == -1 and error.error.message == "no"
    assert bytes(error.error.data) == b"[2]"  # type: ignore[arg-type]
    bare = decode_message(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"p"}}')
    assert bare == IncomingErrorResponse(None, ErrorObject(-32700, "p"))


def _reason(message: object) -> object:
    assert isinstance(message, Invalid)
    assert isinstance(message.error, InvalidRequest)
    assert isinstance(message.error.data, dict)
    return message.error.data["reason"]


@pytest.mark.parametrize(
    ("line", "reason", "id_"),
    [
        (b"[]", InvalidReason.NOT_AN_OBJECT, None),
        (b'{"jsonrpc":"2.0","id":true,"method":"m"}', InvalidReason.BAD_ID, None),
        (b'{"jsonrpc":"2.0","id":2.0,"method":"m"}', InvalidReason.BAD_ID, None),
        (b'{"id":5,"method":"m"}', InvalidReason.BAD_VERSION, 5),
        (b'{"jsonrpc":"2.0","id":"x","method":["m"]}', InvalidReason.BAD_METHOD, "x"),
        (b'{"jsonrpc":"2.0","result":1}', InvalidReason.MISSING_ID, None),
        (b'{"jsonrpc":"2.0","id":1,"result":1,"error":{}}', InvalidReason.RESULT_AND_ERROR, 1),
        (b'{"jsonrpc":"2.0","id":1}', InvalidReason.NO_METHOD_OR_RESULT, 1),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":1}}', InvalidReason.BAD_ERROR_OBJECT, 1),
    ],
)
def test_invalid_reasons(line: bytes, reason: InvalidReason, id_: object) -> None:
    message = decode_message(line)
    assert _reason(message) == reason.value
    assert isinstance(message, Invalid) and message.id == id_


def test_line_too_long_is_an_invalid_request() -> None:
    assert _reason(decode_message(LineTooLong(10**9))) == "line_too_long"


def test_invalid_utf8_in_a_long_line_is_a_parse_error() -> None:
    line = b'{"jsonrpc":"2.0","method":"n","params":"' + "é".encode() * (1 << 20) + b'\xc3"}'
    message = decode_message(line)
    assert isinstance(message, Invalid) and isinstance(message.error, ParseError)


def test_encode_response_and_requests() -> None:
    assert encode_response(1, None) == b'{"jsonrpc":"2.0","id":1,"result":null}\n'
    assert encode_response("a", msgspec.Raw(b"[1]")) == b'{"jsonrpc":"2.0","id":"a","result":[1]}\n'
    assert encode_notification("n") == b'{"jsonrpc":"2.0","method":"n"}\n'
    assert (
        encode_request(7, "m", {"a": 1})
        == b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":1}}\n'
    )


def test_encode_error() -> None:
    error = InvalidParams("Invalid params", {"path": "$.x"})
    assert encode_error(None, error) == (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Invalid params",'
        b'"data":{"path":"$.x"}}}\n'
    )
    assert encode_error(3, InvalidRequest("bad", object())) == (
        b'{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"bad"}}\n'
    )
    assert int(ErrorCode.INVALID_PARAMS) == -32602


@pytest.mark.parametrize("text", ["a\nb", "\u2028\u2029", "\r\n", "\x00\x1f", "\n" * 100])
def test_frames_never_hold_a_raw_newline(text: str) -> None:
    frames = {
        encode_notification("n", {"text": text}): {
            "jsonrpc": "2.0",
            "method": "n",
            "params": {"text": text},
        },
        encode_response(text, [text]): {"jsonrpc": "2.0", "id": text, "result": [text]},
        encode_error(1, InvalidRequest(text, {text: text})): {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32600, "message": text, "data": {text: text}},
        },
    }
    for frame, decoded in frames.items():
        assert frame.endswith(b"\n") and b"\n" not in frame[:-1]
        assert msgspec.json.decode(frame) == decoded


@given(st.text())
def test_any_text_encodes_to_one_line(text: str) -> None:
    frame = encode_notification(text, {"t": text})
    assert frame.count(b"\n") == 1 and frame.endswith(b"\n")
    assert msgspec.json.decode(frame) == {"jsonrpc": "2.0", "method": text, "params": {"t": text}}


def test_raw_value_with_a_newline_is_refused() -> None:
    with pytest.raises(FrameError):
        encode_response(1, msgspec.Raw(b'{"a":\n1}'))
