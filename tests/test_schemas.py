"""schemas/: valid JSON Schema documents, fresh, and they accept and reject what they should."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from acp_agent import schemas

ROOT = Path(__file__).resolve().parents[1] / "schemas"


@pytest.mark.parametrize("name", sorted(schemas.GENERATORS))
def test_each_schema_is_a_valid_draft_2020_12_document(name: str) -> None:
    Draft202012Validator.check_schema(json.loads((ROOT / name).read_text()))


def test_the_committed_schemas_are_what_make_gen_writes() -> None:
    assert schemas.main(["--check"]) == 0


def test_the_journal_schema_accepts_real_lines_and_rejects_bad_ones() -> None:
    validator = Draft202012Validator(json.loads((ROOT / "journal-line.schema.json").read_text()))
    header = {
        "type": "session",
        "version": 1,
        "id": "s",
        "createdAt": 1,
        "cwd": "/w",
        "crc": "0123abcd",
    }
    event = {
        "seq": 1,
        "time": 2,
        "type": "user/message",
        "data": {
            "id": "m",
            "content": [{"type": "text", "text": "x"}],
            "source": {"kind": "client"},
        },
        "crc": "89abcdef",
    }
    assert validator.is_valid(header)
    assert validator.is_valid(event)
    assert validator.is_valid({"seq": 2, "time": 3, "type": "x/future", "data": {"any": 1}})
    assert not validator.is_valid({**event, "seq": 0})
    assert not validator.is_valid({**event, "crc": "XYZ"})
    assert not validator.is_valid(
        {"seq": 1, "time": 2, "type": "turn/start", "data": {"turn": "1"}}
    )
    assert not validator.is_valid({**event, "data": {"id": "m", "content": [], "source": 5}})


def test_the_extension_schema_maps_every_method_to_its_defs() -> None:
    document = json.loads((ROOT / "acp-agent-extensions.schema.json").read_text())
    defs = document["$defs"]
    for method, shapes in document["x-methods"].items():
        assert shapes["params"] in defs, method
        assert shapes.get("result", shapes["params"]) in defs, method
    inject = Draft202012Validator({**defs["InjectParams"], "$defs": defs})
    assert inject.is_valid({"sessionId": "s", "content": "text"})
    assert not inject.is_valid({"sessionId": "s"})
