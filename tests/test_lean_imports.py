"""``acp_agent/lean_imports.py``: msgspec imported without typing_extensions gets typing's very
objects, and httpx without its command line still works as a client.

Each check runs in a fresh interpreter, since the test process imported msgspec and httpx long
before this module (with whatever its plugins brought).
"""

from __future__ import annotations

import pytest

from tests.support.process import python_output

pytestmark = pytest.mark.subprocess


def test_msgspec_takes_typings_own_hints_and_qualifiers() -> None:
    # msgspec/_utils.py falls back to typing when typing_extensions cannot be imported; on
    # Python >= 3.11 typing_extensions re-exports typing.Required/NotRequired, and its
    # get_type_hints(include_extras=True) returns typing's result unchanged.
    out = python_output(
        "import sys, typing, acp_agent, msgspec._utils as u;"
        "print(u._get_type_hints is typing.get_type_hints, u.Required is typing.Required,"
        " u.NotRequired is typing.NotRequired, 'typing_extensions' in sys.modules)"
    )
    assert out == "True True True False"


def test_typing_extensions_is_importable_afterwards() -> None:
    # the hiding lasts for msgspec's import only: anyio (which needs it) imports it later
    out = python_output(
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
    assert python_output(code).splitlines() == [
        "{'a': 1} {'a': 1, 'b': 2}",
        "Expected `int` >= 0 - at `$.b`",
    ]


def test_httpx_without_its_command_line() -> None:
    out = python_output(
        "import acp_agent, sys, httpx;"
        "print('click' in sys.modules, 'pygments' in sys.modules, httpx.main.__module__,"
        " httpx.Client().__class__.__name__)"
    )
    assert out == "False False httpx Client"
