"""``ErrorCode`` is the ACP v1 schema's ``ErrorCode``, title for title and number for number."""

from __future__ import annotations

import json

from acp_agent.errors import ErrorCode
from tests.support.acp_schema import schema_path


def test_error_codes_are_the_schemas() -> None:
    document = json.loads(schema_path().read_text(encoding="utf-8"))
    named = {
        branch["title"].upper().replace(" ", "_"): branch["const"]
        for branch in document["$defs"]["ErrorCode"]["anyOf"]
        if "const" in branch
    }
    named["AUTH_REQUIRED"] = named.pop("AUTHENTICATION_REQUIRED")
    assert {code.name: int(code) for code in ErrorCode} == named
