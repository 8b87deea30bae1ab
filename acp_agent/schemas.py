"""Generate ``schemas/`` (JSON Schema 2020-12) from the msgspec types: ``make gen``.

``python -m acp_agent.schemas`` writes the files; ``--check`` exits 1 naming every file that
is stale or missing (``make check`` runs it, so a type change without ``make gen`` fails CI).
The types are the single source: the journal event structs, the ``_acp_agent/*`` wire structs,
the script-model line, the hook stdin/stdout objects and the config file.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from acp_agent.acp import extensions
from acp_agent.hooks.config import ConfigFile
from acp_agent.hooks.protocol import HookInput, HookOutput
from acp_agent.journal.events import EVENT_TYPES, SessionHeader
from acp_agent.model.config import ProviderEntry
from acp_agent.model.script import ScriptLine
from acp_agent.permissions.config import PermissionsTable
from acp_agent.session.system_prompt import AgentTable

ROOT = Path(__file__).resolve().parent.parent / "schemas"
DIALECT = "https://json-schema.org/draft/2020-12/schema"
BASE = "https://github.com/acp-agent/acp-agent/schemas/"

Schema = dict[str, Any]


def _document(name: str, title: str, body: Schema, defs: Schema) -> Schema:
    return {"$schema": DIALECT, "$id": BASE + name, "title": title, **body, "$defs": defs}


def _any_json(type_: Any) -> Schema:
    """``object`` (an opaque JSON value such as tool arguments): any JSON."""
    if type_ is object:
        return {"description": "any JSON value"}
    raise NotImplementedError(type_)


def _components(types: list[Any]) -> tuple[tuple[Schema, ...], Schema]:
    return msgspec.json.schema_components(
        types, schema_hook=_any_json, ref_template="#/$defs/{name}"
    )


def _single(name: str, title: str, type_: Any) -> Schema:
    (ref,), defs = _components([type_])
    return _document(name, title, ref, defs)


def journal_line() -> Schema:
    types = [SessionHeader, *EVENT_TYPES.values()]
    refs, defs = _components(types)
    header = {**refs[0], "description": "Line 1 of journal.jsonl"}
    defs["SessionHeader"] = {
        **defs["SessionHeader"],
        "properties": {**defs["SessionHeader"]["properties"], "crc": {"$ref": "#/$defs/Crc"}},
    }
    defs["Crc"] = {
        "type": "string",
        "pattern": "^[0-9a-f]{8}$",
        "description": "CRC-32 of the line without its crc member",
    }
    envelopes = [
        {
            "type": "object",
            "title": str(name),
            "properties": {
                "seq": {"type": "integer", "minimum": 1},
                "time": {"type": "integer", "description": "milliseconds since the epoch"},
                "type": {"const": str(name)},
                "data": ref,
                "crc": {"$ref": "#/$defs/Crc"},
            },
            "required": ["seq", "time", "type", "data"],
        }
        for name, ref in zip(EVENT_TYPES, refs[1:], strict=True)
    ]
    unknown = {
        "type": "object",
        "title": "event of a type this version does not know (kept verbatim)",
        "properties": {
            "seq": {"type": "integer", "minimum": 1},
            "time": {"type": "integer"},
            "type": {"type": "string", "not": {"enum": [str(n) for n in EVENT_TYPES]}},
            "data": {},
            "crc": {"$ref": "#/$defs/Crc"},
        },
        "required": ["seq", "time", "type", "data"],
    }
    body = {"oneOf": [header, *envelopes, unknown]}
    return _document("journal-line.schema.json", "acp-agent journal.jsonl line", body, defs)


def extension_methods() -> Schema:
    names = [
        "InjectParams",
        "InjectResult",
        "SteerParams",
        "SteerResult",
        "WhenIdleParams",
        "WhenIdleResult",
        "JournalErrorParams",
        "RewindParams",
        "RewindResult",
    ]
    types = [getattr(extensions, name) for name in names]
    _, defs = _components(types)
    methods = {
        "_acp_agent/inject": {"params": "InjectParams", "result": "InjectResult"},
        "_acp_agent/steer": {"params": "SteerParams", "result": "SteerResult"},
        "_session/steering": {"params": "SteerParams", "result": "SteerResult"},
        "_acp_agent/when_idle": {"params": "WhenIdleParams", "result": "WhenIdleResult"},
        "_acp_agent/journal_error": {"params": "JournalErrorParams", "notification": True},
        "_acp_agent/rewind": {"params": "RewindParams", "result": "RewindResult"},
    }
    body = {
        "description": "Extension methods; x-methods maps each method to its $defs.",
        "x-methods": methods,
    }
    return _document("acp-agent-extensions.schema.json", "acp-agent ACP extensions", body, defs)


class ConfigFileSchema(ConfigFile, frozen=True):
    """The whole config file: hooks (``hooks/config.py``), providers (``model/config.py``),
    the agent's instructions (``session/system_prompt.py``) and the permission rules
    (``permissions/config.py``)."""

    providers: dict[str, ProviderEntry] | None = None
    agent: AgentTable | None = None
    permissions: PermissionsTable | None = None


GENERATORS: dict[str, Callable[[], Schema]] = {
    "journal-line.schema.json": journal_line,
    "acp-agent-extensions.schema.json": extension_methods,
    "script-line.schema.json": lambda: _single(
        "script-line.schema.json", "script model line (--model script:PATH)", ScriptLine
    ),
    "hook-input.schema.json": lambda: _single(
        "hook-input.schema.json", "what a command hook reads on stdin", HookInput
    ),
    "hook-output.schema.json": lambda: _single(
        "hook-output.schema.json", "what a command hook may print on stdout", HookOutput
    ),
    "config.schema.json": lambda: _single(
        "config.schema.json", "acp-agent config file (TOML), as JSON", ConfigFileSchema
    ),
}


def render(schema: Schema) -> str:
    return json.dumps(schema, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name, generate in GENERATORS.items():
        text = render(generate())
        path = ROOT / name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if check:
            stale.append(name)
        else:
            ROOT.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote schemas/{name}")
    if stale:
        print("stale schemas (run `make gen`): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
