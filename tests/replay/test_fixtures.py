"""Every recorded fixture under ``fixtures/replays/`` replays to its expected outputs.

Each fixture runs against the real server process (``python -m acp_agent``) and must produce
exactly its normalized ``frames.jsonl``, ``journal/*.jsonl`` and ``requests.jsonl``; every
journal line and extension frame must satisfy our generated schemas, and every frame the
official ACP v1 schema (``tests/support/acp_schema.py``). A failure prints the unified diff.

``UPDATE_REPLAYS=1`` rewrites the expected files instead (as ``acp-agent replay run --update``
does); review the diff before committing it.

Frames answering an unstable method the stable schema lacks (``session/fork``) are checked
against the official unstable schema instead, as ``tests/fork/test_wire.py`` does.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_agent.replay.fixture import find_fixtures
from acp_agent.replay.runner import replay
from acp_agent.replay.steps import Json
from tests.support.acp_schema import AcpSchema, schema_path

pytestmark = pytest.mark.subprocess

REPLAYS = Path(__file__).resolve().parents[2] / "fixtures" / "replays"
UPDATE_ENV = "UPDATE_REPLAYS"
FIXTURES = find_fixtures([REPLAYS])


@pytest.fixture(scope="module")
def unstable_schema(acp_schema: AcpSchema) -> AcpSchema:
    return AcpSchema.load(schema_path().with_name("schema.unstable.json"))


def test_there_are_fixtures() -> None:
    assert len(FIXTURES) >= 18, [path.name for path in FIXTURES]


@pytest.mark.parametrize("fixture", FIXTURES, ids=[path.name for path in FIXTURES])
async def test_fixture_replays_exactly(
    fixture: Path, acp_schema: AcpSchema, unstable_schema: AcpSchema
) -> None:
    unstable_only = unstable_schema.methods.responses.keys() - acp_schema.methods.responses.keys()

    def official(frame: Json, method: str | None) -> str | None:
        schema = unstable_schema if method in unstable_only else acp_schema
        return schema.frame_problem(frame, method)

    result = await replay(fixture, update=os.environ.get(UPDATE_ENV) == "1", frame_check=official)
    assert result.schemas_checked, "jsonschema is a test dependency; it must be installed"
    assert result.ok, f"fixture {fixture.name}:\n{result.report()}"
