"""Schema checks over a replay's raw outputs (before normalization).

- every journal line against ``schemas/journal-line.schema.json``;
- every extension frame against ``schemas/acp-agent-extensions.schema.json``, whose
  ``x-methods`` maps a method to the ``$defs`` of its params and result: the params the client
  sent, the results the agent answered, the notifications the agent sent (``journal_error``);
- optionally every frame through a caller's ``FrameCheck`` (the test suite passes the official
  ACP schema validator of ``tests/support/acp_schema.py``, which needs the npm schema).

Validation uses ``jsonschema`` (Draft 2020-12), a test dependency: without it the checks are
skipped and ``SchemaChecks.load`` says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from acp_agent.replay.driver import Outcome
from acp_agent.replay.server import RunRecord
from acp_agent.replay.steps import Json

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
JOURNAL_SCHEMA = "journal-line.schema.json"
EXTENSIONS_SCHEMA = "acp-agent-extensions.schema.json"

FrameCheck = Callable[[Json, str | None], str | None]
"""``(frame the agent wrote, method of the request it answers) -> problem or None``."""


class SchemaChecks:
    def __init__(self, journal: dict[str, Any], extensions: dict[str, Any]) -> None:
        from jsonschema import Draft202012Validator

        self._journal = Draft202012Validator(journal)
        self._defs = extensions["$defs"]
        self._methods: dict[str, dict[str, Any]] = extensions["x-methods"]
        self._validators: dict[str, Any] = {}
        self._new = Draft202012Validator

    @classmethod
    def load(cls, directory: Path = SCHEMAS) -> SchemaChecks | None:
        """The checks, or ``None`` when ``jsonschema`` is not installed."""
        try:
            import jsonschema  # noqa: F401
        except ImportError:
            return None
        return cls(_schema(directory, JOURNAL_SCHEMA), _schema(directory, EXTENSIONS_SCHEMA))

    def problems(self, outcome: Outcome, frame_check: FrameCheck | None = None) -> list[str]:
        found: list[str] = []
        for session, data in outcome.journals.items():
            for number, line in enumerate(data.splitlines(), start=1):
                if problem := self._first(self._journal, json.loads(line)):
                    found.append(f"journal {session} line {number}: {problem}")
        for number, run in enumerate(outcome.runs, start=1):
            found.extend(f"run {number}: {p}" for p in self._run_problems(run, frame_check))
        return found

    def _run_problems(self, run: RunRecord, frame_check: FrameCheck | None) -> Iterator[str]:
        for index, frame in enumerate(run.sent, start=1):
            method = frame.get("method") if isinstance(frame, dict) else None
            if not (method in self._methods and "params" in frame):
                continue
            if problem := self._check(method, "params", frame["params"]):
                yield f"client frame {index} ({method} params): {problem}"
        methods = run.request_methods()
        for index, frame in enumerate(run.frames, start=1):
            if not isinstance(frame, dict):
                continue
            answered = methods.get(json.dumps(frame.get("id"))) if "method" not in frame else None
            for part, value, method in _extension_parts(frame, answered):
                if method in self._methods and (problem := self._check(method, part, value)):
                    yield f"agent frame {index} ({method} {part}): {problem}"
            if frame_check is not None and (problem := frame_check(frame, answered)):
                yield f"agent frame {index}: {problem}"

    def _check(self, method: str, part: str, value: Json) -> str | None:
        def_name = self._methods[method].get(part)
        if not isinstance(def_name, str):
            return None
        if def_name not in self._validators:
            schema = {"$ref": f"#/$defs/{def_name}", "$defs": self._defs}
            self._validators[def_name] = self._new(schema)
        return self._first(self._validators[def_name], value)

    @staticmethod
    def _first(validator: Any, value: Json) -> str | None:
        for error in validator.iter_errors(value):
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            return f"at {where}: {error.message}"
        return None


def _extension_parts(
    frame: dict[str, Json], answered: str | None
) -> Iterator[tuple[str, Json, str]]:
    """``(params|result, value, method)`` of a frame the agent wrote."""
    method = frame.get("method")
    if isinstance(method, str) and "params" in frame:
        yield "params", frame["params"], method
    elif answered is not None and "result" in frame:
        yield "result", frame["result"], answered


def _schema(directory: Path, name: str) -> dict[str, Any]:
    path = directory / name
    if path.is_file():
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return loaded
    from acp_agent import schemas  # an installed copy has no schemas/: generate them

    return schemas.journal_line() if name == JOURNAL_SCHEMA else schemas.extension_methods()
