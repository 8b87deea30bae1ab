"""``acp_agent/lean_imports.py``: msgspec imported without typing_extensions gets typing's very
objects, httpx without its command line still works as a client, and the collector paused for
the launcher's imports is on again once the server runs.

Each check runs in a fresh interpreter, since the test process imported msgspec and httpx long
before this module (with whatever its plugins brought).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_msgspec_takes_typings_own_hints_and_qualifiers() -> None:
    # msgspec/_utils.py falls back to typing when typing_extensions cannot be imported; on
    # Python >= 3.11 typing_extensions re-exports typing.Required/NotRequired, and its
    # get_type_hints(include_extras=True) returns typing's result unchanged.
    out = run(
        "import sys, typing, acp_agent, msgspec._utils as u;"
        "print(u._get_type_hints is typing.get_type_hints, u.Required is typing.Required,"
        " u.NotRequired is typing.NotRequired, 'typing_extensions' in sys.modules)"
    )
    assert out == "True True True False"


def test_typing_extensions_is_importable_afterwards() -> None:
    # the hiding lasts for msgspec's import only: anyio (which needs it) imports it later
    out = run(
        "import acp_agent, sys; import anyio, typing_extensions;"
        "print(type(sys.modules['typing_extensions']).__name__, typing_extensions.Buffer)"
    )
    assert out.startswith("module ")


def test_a_typed_decode_is_the_same_without_typing_extensions() -> None:
    # NotRequired in a TypedDict, Annotated constraints: what get_type_hints serves msgspec
    code = (
        "import acp_agent, msgspec, typing\n"
        "class T(typing.TypedDict):\n"
        "    a: int\n"
        "    b: typing.NotRequired[typing.Annotated[int, msgspec.Meta(ge=0)]]\n"
        "d = msgspec.json.Decoder(T)\n"
        'print(d.decode(b\'{"a":1}\'), d.decode(b\'{"a":1,"b":2}\'))\n'
        "try:\n"
        '    d.decode(b\'{"a":1,"b":-1}\')\n'
        "except msgspec.ValidationError as e:\n"
        "    print(e)\n"
    )
    assert run(code).splitlines() == [
        "{'a': 1} {'a': 1, 'b': 2}",
        "Expected `int` >= 0 - at `$.b`",
    ]


def test_httpx_without_its_command_line() -> None:
    out = run(
        "import acp_agent, sys, httpx;"
        "print('click' in sys.modules, 'pygments' in sys.modules, httpx.main.__module__,"
        " httpx.Client().__class__.__name__)"
    )
    assert out == "False False httpx Client"


def test_collector_paused_restores_what_it_found() -> None:
    # on -> off inside -> on after, also when the body raises; off before -> stays off
    code = (
        "import gc\n"
        "from acp_agent.lean_imports import collector_paused\n"
        "seen = []\n"
        "with collector_paused():\n"
        "    seen.append(gc.isenabled())\n"
        "seen.append(gc.isenabled())\n"
        "try:\n"
        "    with collector_paused():\n"
        "        raise KeyError\n"
        "except KeyError:\n"
        "    seen.append(gc.isenabled())\n"
        "gc.disable()\n"
        "with collector_paused():\n"
        "    pass\n"
        "seen.append(gc.isenabled())\n"
        "print(seen)\n"
    )
    assert run(code) == "[False, True, True, False]"


SERVED = """
import atexit, gc, json, sys
REPORT = sys.argv[1]
def report():
    with open(REPORT, "w") as out:
        json.dump({"enabled": gc.isenabled()}, out)
atexit.register(report)
sys.argv = ["acp-agent", *sys.argv[2:]]
from acp_agent.cli import main
sys.exit(main())
"""


def test_the_server_runs_with_the_collector_on(tmp_path: Path) -> None:
    # the collector is paused for the launcher's import only (cli.main, launch.py)
    script = tmp_path / "script.jsonl"
    script.write_text("")
    line = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    report = tmp_path / "gc.json"
    done = subprocess.run(
        [sys.executable, "-c", SERVED, str(report), "--model", f"script:{script}"],
        input=(json.dumps(line) + "\n").encode(),
        capture_output=True,
        cwd=tmp_path,
        env={**os.environ, "ACP_AGENT_STATE_DIR": str(tmp_path / "state")},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["id"] == 1
    assert json.loads(report.read_text()) == {"enabled": True}
