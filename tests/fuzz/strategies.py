"""Hypothesis strategies for hostile input lines, and what the agent owes each batch of them.

A generated batch is a list of ``Line``s, each exactly one line of input:

- ``Call``: a well-formed JSON-RPC request (the harness gives it a fresh id) or notification,
  for a real ACP method, an extension or an unknown method, with params that are valid, mutated
  (a member replaced by any JSON value, dropped, or joined by junk) or anything at all;
- ``Junk``: everything else — random bytes, broken JSON, JSON that is not an object, objects
  with wrong envelope members (ids of every type, a numeric method, result and error both).

JSON values include huge integers, long strings, control characters, lone surrogates (escaped:
what ``JSON.stringify`` writes for a string cut mid-emoji; the agent reads each as U+FFFD, see
``as_read``), ``_meta`` everywhere and nesting up to ``MAX_DEPTH`` levels (past the decoder's recursion limit: what the fuzzer found
there is pinned in ``test_findings.py``). What each batch must get back (``Expectation``): every request exactly one answer
carrying its id; every junk line at most one answer, with a null id or an id taken from it.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, settings, strategies as st

from tests.reliability.support import FULL

SESSION = "fz"
SETTINGS = settings(
    deadline=None,
    derandomize=not FULL,  # the quick suite sees the same examples every run; the full run not
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
    print_blob=True,
)
MAX_DEPTH = 3000
"""Deep enough for the decoder's own recursion limit (about 1,000 levels, see test_findings)."""

ACP_METHODS = [
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/resume",
    "session/close",
    "session/fork",
    "session/list",
    "session/prompt",
    "session/set_mode",
    "session/set_config_option",
    "_acp_agent/inject",
    "_acp_agent/steer",
    "_session/steering",
    "_acp_agent/when_idle",
]
NOTIFICATIONS = ["session/cancel", "_acp_agent/journal_error", "session/update", "_x/note"]
UNKNOWN = ["foo/bar", "_x/y", "_acp_agent/nope", "Session/Prompt", "", " ", "initialize\n", "ü/∂"]


# --- JSON values ---------------------------------------------------------------------------------

huge_ints = st.sampled_from([2**31, 2**53 + 1, 2**63, -(2**63) - 1, 2**64, 10**40, -(10**40)])
strings = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", "\u0000", "\n", "\r\n", "\u2028", "../../etc/passwd", "/", "💥" * 5]),
    st.sampled_from(["\ud83d", "cut \ud83d", "\ude00", "\ud83d\ud83d\ude00", "\\ud83d"]),
    st.sampled_from([1000, 100_000]).map(lambda n: "x" * n),
)
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    huge_ints,
    st.floats(allow_nan=False, allow_infinity=False),
    strings,
)
json_values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.just("_meta")), inner, max_size=4),
    ),
    max_leaves=12,
)


@dataclass(frozen=True)
class Deep:
    """``depth`` levels of arrays (``[[[1]]]``) or objects (``{"a":{"a":1}}``), kept as text:
    Python's own ``json`` recurses too, so ``dumps`` splices the text in."""

    depth: int
    kind: str

    def text(self) -> str:
        if self.kind == "array":
            return "[" * self.depth + "1" + "]" * self.depth
        return '{"a":' * self.depth + "1" + "}" * self.depth


deep_values = st.builds(Deep, st.integers(1, MAX_DEPTH), st.sampled_from(["array", "object"]))


def dumps(value: Any) -> bytes:
    """``json.dumps`` (UTF-8, nothing escaped that need not be) with ``Deep`` values spliced in.

    A lone surrogate cannot be UTF-8: it is written as its ``\\uXXXX`` escape.
    """
    spliced: list[str] = []

    def default(item: object) -> str:
        if not isinstance(item, Deep):
            raise TypeError(f"not JSON: {item!r}")
        spliced.append(item.text())
        return f"\x00deep{len(spliced) - 1}\x00"

    text = json.dumps(value, ensure_ascii=False, default=default)
    for index, raw in enumerate(spliced):
        text = text.replace(json.dumps(f"\x00deep{index}\x00"), raw, 1)
    return text.encode("utf-8", "backslashreplace")


_LONE = re.compile("[\ud800-\udfff]")


def as_read(value: Any) -> Any:
    """``value`` (as Python's ``json`` reads it) as the agent reads it: U+FFFD for each lone
    surrogate, in strings and keys (``json`` joins valid pairs, so what is left is lone)."""
    if isinstance(value, str):
        return _LONE.sub("\ufffd", value)
    if isinstance(value, list):
        return [as_read(item) for item in value]
    if isinstance(value, dict):
        return {as_read(k): as_read(v) for k, v in value.items()}
    return value


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Room for ``json.loads`` of what ``Deep`` values make (its C decoder recurses)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * MAX_DEPTH + 1000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def loads(data: bytes | str) -> Any:
    with deep_recursion():
        return json.loads(data)


any_value = st.one_of(json_values, deep_values)


# --- params: valid, mutated, anything ---------------------------------------------------------------


def templates(cwd: str) -> dict[str, dict[str, Any]]:
    text = [{"type": "text", "text": "hi"}]
    session = {"sessionId": SESSION, "cwd": cwd, "mcpServers": []}
    return {
        "initialize": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}},
        "authenticate": {"methodId": "none"},
        "session/new": {"cwd": cwd, "mcpServers": []},
        "session/load": session,
        "session/resume": session,
        "session/close": {"sessionId": SESSION},
        "session/fork": {**session, "_meta": {"acp_agent": {"seq": 0}}},
        "session/list": {"cwd": cwd},
        "session/prompt": {"sessionId": SESSION, "prompt": text},
        "session/set_mode": {"sessionId": SESSION, "modeId": "x"},
        "session/set_config_option": {"sessionId": SESSION, "configId": "x", "value": "y"},
        "_acp_agent/inject": {"sessionId": SESSION, "content": "context", "source": {"kind": "x"}},
        "_acp_agent/steer": {"sessionId": SESSION, "prompt": text},
        "_session/steering": {"sessionId": SESSION, "prompt": text},
        "_acp_agent/when_idle": {"sessionId": SESSION},
        "session/cancel": {"sessionId": SESSION},
    }


@st.composite
def mutated(draw: st.DrawFn, template: dict[str, Any]) -> Any:
    params = json.loads(json.dumps(template))  # a deep copy (templates hold no Deep)
    action = draw(st.sampled_from(["keep", "replace", "drop", "add", "nest", "anything", "omit"]))
    keys = sorted(params)
    if action == "replace" and keys:
        params[draw(st.sampled_from(keys))] = draw(any_value)
    elif action == "drop" and keys:
        del params[draw(st.sampled_from(keys))]
    elif action == "add":
        params[draw(st.sampled_from(["_meta", "extra", "sessionId", "x" * 300]))] = draw(any_value)
    elif action == "nest":
        inner = [k for k in keys if isinstance(params[k], dict | list) and params[k]]
        if inner:
            key = draw(st.sampled_from(inner))
            target = params[key]
            if isinstance(target, list):
                target[0] = draw(any_value)
            else:
                target[draw(st.sampled_from(sorted(target)))] = draw(any_value)
    elif action == "anything":
        return draw(any_value)
    elif action == "omit":
        return OMIT
    return params


OMIT = object()
"""Params left out of the message altogether."""


# --- lines ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """A well-formed request (``is_request``: the harness gives it an id) or notification."""

    method: str
    params: Any
    is_request: bool

    def encode(self, request_id: int | str | None) -> bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0"}
        if self.is_request:
            message["id"] = request_id
        message["method"] = self.method
        if self.params is not OMIT:
            message["params"] = self.params
        return one_line(dumps(message))


@dataclass(frozen=True)
class Junk:
    data: bytes

    def encode(self) -> bytes:
        return one_line(self.data)


Line = Call | Junk


def one_line(data: bytes) -> bytes:
    """One input line: no newline inside (JSON text never needs one), one at the end."""
    return data.replace(b"\n", b" ") + b"\n"


@st.composite
def calls(draw: st.DrawFn, cwd: str) -> Call:
    shapes = templates(cwd)
    is_request = draw(st.booleans()) or draw(st.booleans())
    pool = ACP_METHODS + UNKNOWN if is_request else NOTIFICATIONS + UNKNOWN
    method = draw(st.sampled_from(pool))
    template = shapes.get(method, {"a": 1})
    return Call(method, draw(mutated(template)), is_request)


envelope_members = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.one_of(st.just("2.0"), any_value),
        "id": st.one_of(st.integers(0, 50), st.text(max_size=3), any_value),
        "method": st.one_of(st.sampled_from(ACP_METHODS), any_value),
        "params": any_value,
        "result": any_value,
        "error": st.one_of(
            st.fixed_dictionaries({"code": any_value, "message": any_value}), any_value
        ),
    },
)


junk = st.one_of(
    st.binary(max_size=120).map(Junk),
    st.text(max_size=60).map(lambda t: Junk(t.encode())),
    any_value.map(lambda v: Junk(dumps(v))),
    envelope_members.map(lambda m: Junk(dumps(m))),
    st.sampled_from(
        [
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":NaN}',
            b'{"jsonrpc":"2.0","id":"\\ud800","method":"initialize"}',
            b'{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"a":1,"a":2}}',
            b'{"jsonrpc":"2.0","id":3,"method":"initialize"',
            b"\xef\xbb\xbf{}",
            b"\x00" * 16,
            b"[" * 50,
            b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"fz"}}}',
        ]
    ).map(Junk),
)


def lines(cwd: str, max_size: int = 12) -> st.SearchStrategy[list[Line]]:
    return st.lists(st.one_of(calls(cwd), calls(cwd), junk), min_size=1, max_size=max_size)


# --- what a batch must get back ---------------------------------------------------------------------


@dataclass
class Expectation:
    """Request ids that need exactly one answer; junk lines that may get one each."""

    requests: dict[int | str, str]
    """id -> method of every well-formed request."""
    junk_ids: list[Any]
    """The ``id`` member of each junk line that has one (as Python's ``json`` reads it)."""
    junk_lines: int
    too_deep: set[int | str]
    """Requests with a value nested past the agent's limit somewhere: answered -32602 with their
    id; -32600 with a null id when the line is too deep for the decoder itself (near 1,000
    levels, depending on the stack); or served, later, when the deep value sits in a member the
    method ignores (unknown members are accepted, and never decoded)."""
    deep_notifications: int = 0
    """Notifications the same: they may get a null-id answer (the line was never decoded)."""


DEEP = 50
"""A ``Deep`` this deep puts the params past the agent's limit of 64 levels."""


def too_deep(value: Any) -> bool:
    if isinstance(value, Deep):
        return value.depth > DEEP
    if isinstance(value, dict):
        return any(too_deep(v) for v in value.values())
    if isinstance(value, list):
        return any(too_deep(v) for v in value)
    return False


def expectation(batch: list[Line], ids: list[int | str | None]) -> Expectation:
    requests: dict[int | str, str] = {}
    deep: set[int | str] = set()
    deep_notifications = 0
    junk_ids: list[Any] = []
    for line, request_id in zip(batch, ids, strict=True):
        if isinstance(line, Call):
            if request_id is not None:
                requests[request_id] = line.method
                if too_deep(line.params):
                    deep.add(request_id)
            elif too_deep(line.params):
                deep_notifications += 1
            continue
        junk_ids += top_level_ids(line.data)
    junk_lines = sum(1 for line in batch if isinstance(line, Junk))
    return Expectation(requests, junk_ids, junk_lines, deep, deep_notifications)


def top_level_ids(data: bytes) -> list[Any]:
    """Every ``"id"`` member of a JSON object line (duplicates included), as the agent reads it."""
    found: list[list[Any]] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        found.append([as_read(value) for key, value in items if key == "id"])
        return dict(items)

    try:
        with deep_recursion():
            decoded = json.loads(data, object_pairs_hook=pairs)
    except ValueError:
        return []
    return found[-1] if isinstance(decoded, dict) else []  # the outermost object comes last


def as_validated(frame: dict[str, Any], expected: Expectation) -> dict[str, Any]:
    """The frame to validate: a result answering a request whose id was ``null`` (JSON-RPC and
    ACP's ``RequestId`` allow it; the repo's schema helper does not) is checked as if it had
    an id."""
    if frame.get("id", 0) is None and "result" in frame and None in expected.junk_ids:
        return {**frame, "id": 0}
    return frame


def key(value: Any) -> str:
    """A JSON id as a comparable, hashable text (``1`` and ``"1"`` differ; deep ids too)."""
    with deep_recursion():
        return json.dumps(value)


def check_answers(frames: list[dict[str, Any]], expected: Expectation) -> list[str]:
    """Everything wrong with the answers to one batch (``[]`` when all is well)."""
    problems: list[str] = []
    responses = [f for f in frames if "method" not in f]
    counts: dict[str, int] = {}
    for frame in responses:
        answered = key(frame.get("id"))
        counts[answered] = counts.get(answered, 0) + 1
    unread = 0  # deep requests not answered by id (yet, or ever: a null-id answer)
    for request_id, method in expected.requests.items():
        got = counts.pop(key(request_id), 0)
        if got == 0 and request_id in expected.too_deep:
            unread += 1
        elif got != 1:
            problems.append(f"request {request_id!r} ({method}) got {got} answers")
    nulls = counts.pop("null", 0)
    allowed_nulls = expected.junk_lines + expected.deep_notifications + unread
    if nulls > allowed_nulls:
        problems.append(
            f"{nulls} answers with a null id for {expected.junk_lines} junk lines, "
            f"{expected.deep_notifications} deep notifications and {unread} deep requests "
            "not answered by id"
        )
    carried = [key(i) for i in expected.junk_ids]
    for answered, got in counts.items():
        if answered not in carried:
            problems.append(f"{got} answers to id {answered[:100]}, which no line carried")
        elif got > carried.count(answered):
            problems.append(f"{got} answers to id {answered[:100]}, more than lines carried it")
    return problems
