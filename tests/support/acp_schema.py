"""The official ACP v1 JSON schema, and a strict validator for the frames an agent writes.

Theory of operation
-------------------
The schema (shipped in the npm package ``@agentclientprotocol/sdk``, installed by ``make install``)
has a top-level ``anyOf`` of "Agent", "Client" and "ProtocolLevel" messages. Validating a frame
against that union proves little: a response's ``result`` also matches ``ExtResponse`` (which
accepts anything), and a frame the agent must never send can still match the "Client" branch.
So a frame is checked in three steps, each stricter than the schema's union:

1. JSON-RPC 2.0 envelope, by hand: ``jsonrpc == "2.0"``, exactly the members of a request,
   a notification, or a response with exactly one of ``result`` / ``error``, and a legal ``id``.
2. The payload against its specific ``$defs`` type. Which type is derived from the schema, not
   written here: the agent-side unions ``AgentRequest``, ``AgentNotification`` and
   ``AgentResponse`` list the types an agent may send, and each type carries its method in
   ``x-method`` (and ``x-side``: ``client`` for what the client handles, ``agent`` for what the
   agent answers). A response's type depends on the method of the request it answers, which the
   frame does not carry, so the caller passes it (``tests.support.recording`` tracks it).
   Extension methods (``_``-prefixed) are checked for envelope shape only.
3. The whole frame against the schema's "Agent" branch (catches e.g. an ``id`` outside int64),
   or, for a protocol-level notification (``$/cancel_request``: the "ProtocolLevel" branch, which
   either side may send), against that branch and its type.

Integer ``format``s (``uint16``, ``int64``, ...) are asserted as ranges; other formats stay
annotations. Failures raise ``FrameValidationError``, an ``AssertionError``, so pytest shows them
as test failures.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import best_match

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH_ENV = "ACP_SCHEMA_PATH"
DEFAULT_SCHEMA_PATH = (
    REPO_ROOT / ".cache/acp-sdk/node_modules/@agentclientprotocol/sdk/schema/v1/schema.json"
)

JsonObject = dict[str, Any]

_REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_NOTIFICATION_KEYS = frozenset({"jsonrpc", "method", "params"})
_INT_FORMATS = {
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}


class SchemaMissingError(RuntimeError):
    """The ACP schema file is not where the tests look for it."""


class FrameValidationError(AssertionError):
    """A frame written by the agent breaks JSON-RPC 2.0 or the ACP v1 schema."""


def schema_path() -> Path:
    """``$ACP_SCHEMA_PATH`` if set, else the copy ``make install`` puts under ``.cache/``."""
    override = os.environ.get(SCHEMA_PATH_ENV)
    return Path(override) if override else DEFAULT_SCHEMA_PATH


@dataclass(frozen=True)
class MethodIndex:
    """Method name -> ``$defs`` type name, for each kind of frame an agent writes."""

    responses: Mapping[str, str]  # method the agent answers -> type of its ``result``
    requests: Mapping[str, str]  # method the agent calls on the client -> type of ``params``
    notifications: Mapping[str, str]  # notification the agent sends -> type of ``params``
    protocol: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Protocol-level notifications either side sends (``$/cancel_request``) -> type."""


class AcpSchema:
    """One loaded schema document, with validators built lazily per ``$defs`` type."""

    def __init__(self, document: JsonObject, source: Path | None = None) -> None:
        self.document = document
        self.source = source
        self.defs: JsonObject = document["$defs"]
        self.methods = MethodIndex(
            responses=self._methods_of("AgentResponse", side="agent"),
            requests=self._methods_of("AgentRequest", side="client"),
            notifications=self._methods_of("AgentNotification", side="client"),
            protocol=self._protocol_methods(),
        )
        self._agent_branch = self._branch("Agent")
        self._protocol_branch = self._branch("ProtocolLevel")
        self._validators: dict[str, Any] = {}
        self._format_checker = _integer_format_checker()

    @classmethod
    def load(cls, path: Path | None = None) -> AcpSchema:
        path = path or schema_path()
        if not path.is_file():
            raise SchemaMissingError(
                f"ACP JSON schema not found at {path}. Run `make install` (it installs "
                f"@agentclientprotocol/sdk into .cache/acp-sdk), or point ${SCHEMA_PATH_ENV} at "
                "a copy of schema/v1/schema.json."
            )
        return cls(json.loads(path.read_text(encoding="utf-8")), source=path)

    def validate_agent_frame(self, frame: Mapping[str, Any], method: str | None = None) -> None:
        """Raise ``FrameValidationError`` unless ``frame`` is a legal frame for an agent to write.

        ``method`` is the method of the request a response answers; without it a response's
        ``result`` is only checked against the schema's loose union.
        """
        problem = self.frame_problem(frame, method)
        if problem is not None:
            raise FrameValidationError(f"{problem}\n  frame: {_abbreviate(frame)}")

    def frame_problem(self, frame: Mapping[str, Any], method: str | None = None) -> str | None:
        """The first problem with ``frame`` as a message, or ``None`` when it is valid."""
        if not isinstance(frame, Mapping):
            return f"frame is a JSON {type(frame).__name__}, not an object"
        if frame.get("jsonrpc") != "2.0":
            return f'"jsonrpc" must be "2.0", got {frame.get("jsonrpc")!r}'
        if "method" in frame:
            problem = self._call_problem(frame)
        else:
            problem = self._response_problem(frame, method)
        if problem is None and frame.get("method") in self.methods.protocol:
            return self._problem_against(self._protocol_branch, "ProtocolLevel", dict(frame))
        return problem or self.type_problem(dict(frame), None)

    def _problem_against(self, branch: JsonObject, title: str, instance: Any) -> str | None:
        validator = Draft202012Validator(
            {**branch, "$defs": self.defs}, format_checker=self._format_checker
        )
        error = best_match(validator.iter_errors(instance))
        if error is None:
            return None
        where, message = _explain(error)
        return f"not a valid {title} message at {where}: {message}"

    def type_problem(self, instance: Any, def_name: str | None) -> str | None:
        """Validate ``instance`` against ``$defs[def_name]`` (``None``: the "Agent" branch)."""
        validator = self._validator(def_name)
        error = best_match(validator.iter_errors(instance))
        if error is None:
            return None
        where, message = _explain(error)
        return f"not a valid {def_name or 'Agent message'} at {where}: {message}"

    def check_type(self, instance: Any, def_name: str) -> None:
        """Raise ``FrameValidationError`` unless ``instance`` is a valid ``$defs[def_name]``."""
        problem = self.type_problem(instance, def_name)
        if problem is not None:
            raise FrameValidationError(f"{problem}\n  value: {_abbreviate(instance)}")

    def _call_problem(self, frame: Mapping[str, Any]) -> str | None:
        is_request = "id" in frame
        allowed = _REQUEST_KEYS if is_request else _NOTIFICATION_KEYS
        kind = "request" if is_request else "notification"
        if extra := sorted(set(frame) - allowed):
            return f"{kind} has members outside JSON-RPC 2.0: {extra}"
        method = frame["method"]
        if not isinstance(method, str):
            return f"{kind} method must be a string, got {method!r}"
        if is_request and (problem := _id_problem(frame["id"], allow_null=False)):
            return problem
        params = frame.get("params")
        if method.startswith("_"):
            ok = params is None or isinstance(params, dict | list)
            return None if ok else f"params of {method} must be an object or array"
        if not is_request and method in self.methods.protocol:
            return self.type_problem(params, self.methods.protocol[method])
        table = self.methods.requests if is_request else self.methods.notifications
        if method not in table:
            known = ", ".join(sorted(table))
            return f"agent sent {kind} {method!r}, which is no ACP v1 client {kind} ({known})"
        return self.type_problem(params, table[method])

    def _response_problem(self, frame: Mapping[str, Any], method: str | None) -> str | None:
        if "id" not in frame:
            return "frame has neither method nor id"
        has_result, has_error = "result" in frame, "error" in frame
        if has_result == has_error:
            return "response must carry exactly one of result and error"
        if extra := sorted(set(frame) - {"jsonrpc", "id", "result", "error"}):
            return f"response has members outside JSON-RPC 2.0: {extra}"
        if problem := _id_problem(frame["id"], allow_null=has_error):
            return problem
        if has_error:
            return self.type_problem(frame["error"], "Error")
        if method is None or method.startswith("_"):
            return None
        if method not in self.methods.responses:
            known = ", ".join(sorted(self.methods.responses))
            return f"agent answered {method!r}, which is no ACP v1 agent request ({known})"
        return self.type_problem(frame["result"], self.methods.responses[method])

    def _validator(self, def_name: str | None) -> Any:
        key = def_name or ""
        if key not in self._validators:
            if def_name is None:
                schema: JsonObject = {**self._agent_branch, "$defs": self.defs}
            else:
                if def_name not in self.defs:
                    raise KeyError(f"schema has no $defs/{def_name}")
                schema = {"$ref": f"#/$defs/{def_name}", "$defs": self.defs}
            self._validators[key] = Draft202012Validator(
                schema, format_checker=self._format_checker
            )
        return self._validators[key]

    def _branch(self, title: str) -> JsonObject:
        for branch in self.document.get("anyOf", []):
            if branch.get("title") == title:
                return dict(branch)
        raise ValueError(f"schema has no top-level {title!r} message branch")

    def _protocol_methods(self) -> dict[str, str]:
        """Method -> type of the protocol-level notifications (x-side ``protocol``)."""
        branch = self._branch("ProtocolLevel")
        methods: dict[str, str] = {}
        for name in sorted(set(_refs_in(branch))):
            definition = self.defs[name]
            if definition.get("x-side") == "protocol" and "x-method" in definition:
                methods[definition["x-method"]] = name
        return methods

    def _methods_of(self, union: str, side: str) -> dict[str, str]:
        methods: dict[str, str] = {}
        for name in sorted(set(_refs_in(self.defs[union]))):
            definition = self.defs[name]
            method = definition.get("x-method")
            if method is None:
                continue  # Error, RequestId, Ext* payloads
            if definition.get("x-side") != side:
                raise ValueError(f"$defs/{name} in {union} has x-side {definition.get('x-side')}")
            if method in methods:
                raise ValueError(f"{union}: {method} maps to {methods[method]} and {name}")
            methods[method] = name
        return methods


def _refs_in(node: Any) -> Iterator[str]:
    """Names of the ``$defs`` that ``node`` references directly (refs are not followed)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield ref.removeprefix("#/$defs/")
        for value in node.values():
            yield from _refs_in(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs_in(value)


def _explain(error: Any) -> tuple[str, str]:
    """Where and why, looking inside ``anyOf``/``oneOf`` for the branch the value was meant for.

    A branch whose discriminator (a ``const``, e.g. ``sessionUpdate``) failed is the wrong branch;
    when exactly one branch is left, its error is the real one ("toolCallId is required" instead
    of "not valid under any of the given schemas"). When none is left, the discriminator itself
    is wrong and the message lists the values it may take.
    """
    while error.context:
        branches: dict[Any, list[Any]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        live = [subs for subs in branches.values() if all(e.validator != "const" for e in subs)]
        if len(live) == 1:
            error = best_match(live[0])
            continue
        consts = [e for subs in branches.values() for e in subs if e.validator == "const"]
        if not live and consts and len(consts) == len(branches):
            choices = ", ".join(sorted(json.dumps(e.validator_value) for e in consts))
            return _where(consts[0]), f"{consts[0].instance!r} is not one of {choices}"
        break
    return _where(error), error.message


def _where(error: Any) -> str:
    return "/".join(str(part) for part in error.absolute_path) or "(root)"


def _id_problem(request_id: Any, *, allow_null: bool) -> str | None:
    if request_id is None:
        return None if allow_null else "id must not be null here"
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return f"id must be an integer or a string, got {request_id!r}"
    return None


def _integer_format_checker() -> FormatChecker:
    checker = FormatChecker(formats=())
    for name, (low, high) in _INT_FORMATS.items():
        checker.checks(name)(functools.partial(_int_in_range, low, high))
    return checker


def _int_in_range(low: int, high: int, instance: object) -> bool:
    if isinstance(instance, bool) or not isinstance(instance, int):
        return True  # the format constrains integers only; "type" judges the rest
    return low <= instance <= high


def _abbreviate(value: Any, limit: int = 600) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


@functools.cache
def default_schema() -> AcpSchema:
    """The schema at ``schema_path()``, loaded once per process."""
    return AcpSchema.load()


def validate_agent_frame(frame: Mapping[str, Any], method: str | None = None) -> None:
    """Validate one frame the agent wrote against the default schema (see ``AcpSchema``)."""
    default_schema().validate_agent_frame(frame, method)
