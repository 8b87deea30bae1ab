"""Two third-party imports made lighter, for a process that editors spawn per window.

Theory of operation
-------------------
Both are imports a dependency makes only because some *other* package happens to be installed,
of modules this process never uses. ``acp_agent/__init__.py`` calls ``apply()`` first, so it
holds for every front door (the ``acp-agent`` script, ``python -m acp_agent``, the tests):

- **msgspec without typing_extensions.** ``msgspec._utils`` takes ``get_type_hints``,
  ``Required`` and ``NotRequired`` from typing_extensions when it can be imported, else from
  ``typing``. On the Pythons this project supports (>= 3.11) they are the same:
  typing_extensions re-exports ``typing.Required`` and ``typing.NotRequired``, and its
  ``get_type_hints(..., include_extras=True)`` (the only way msgspec calls it) returns
  ``typing.get_type_hints``'s result unchanged (typing_extensions.py: "if include_extras:
  return hint"). But importing typing_extensions imports ``inspect`` (with ``ast``, ``dis``,
  ``tokenize``): about 12 ms before ``initialize`` can be answered, a third of what this process
  adds to the interpreter's own start-up. So msgspec's first import is made with
  typing_extensions hidden (``sys.modules[name] = None`` makes ``import`` raise
  ``ImportError``, which msgspec catches), and the entry is removed right after, so anything
  else (anyio) imports the real module later, after the answer.
  ``tests/test_lean_imports.py`` holds that msgspec ends up with typing's very objects.
- **httpx without its command line.** ``httpx/__init__.py`` runs ``from ._main import main``
  and falls back to a stub on ``ImportError``. ``_main`` imports click, rich and pygments,
  which are installed here for other reasons (uvicorn needs click, pytest pygments): about
  30 ms of a fresh process's first model request, for a command line this process never runs.
  ``httpx._main`` is marked absent, so httpx takes its own fallback (``httpx.main`` then says
  to install ``httpx[cli]``).

Neither applies when the module was imported already (a host process that imported msgspec or
httpx first keeps what it has).
"""

from __future__ import annotations

import sys

HIDDEN_FOR_MSGSPEC = "typing_extensions"
HTTPX_CLI = "httpx._main"


def apply() -> None:
    if "msgspec" not in sys.modules and HIDDEN_FOR_MSGSPEC not in sys.modules:
        sys.modules[HIDDEN_FOR_MSGSPEC] = None  # type: ignore[assignment]
        try:
            import msgspec  # noqa: F401
        finally:
            del sys.modules[HIDDEN_FOR_MSGSPEC]
    if "httpx" not in sys.modules:
        sys.modules.setdefault(HTTPX_CLI, None)  # type: ignore[arg-type]
