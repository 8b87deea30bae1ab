"""Which modules a fresh process had imported when it answered: for the start-up tests only.

``ACP_AGENT_REPORT_MODULES`` names a file; at each stage the process writes there (replacing
what it held) a ``# stage`` line, then the names in ``sys.modules``, one per line:

- ``awaiting_first_line`` and ``initialize_answered``: ``launch.py``, before the server is
  imported;
- ``session/new_answered``, ``session/load_answered``: ``reporting``, once the handler of the
  process's first such request returned its answer (the connection writes it next,
  ``transport/connection.py``; a first load is never a ``Deferred``, as no session of a fresh
  process is being closed).

``tests/integration/test_startup.py`` names the modules that must not be there. Unset (always,
outside those tests), nothing is written and the router is the server itself.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import msgspec

    from acp_agent.transport.connection import NotificationHandler, RequestHandler, Router

REPORT_MODULES = "ACP_AGENT_REPORT_MODULES"
REPORTED_METHODS = ("session/new", "session/load")


def report_modules(stage: str) -> None:
    path = os.environ.get(REPORT_MODULES)
    if path:
        with open(path, "w", encoding="utf-8") as out:
            out.write("".join([f"# {stage}\n", *(f"{name}\n" for name in sorted(sys.modules))]))


def reporting(router: Router) -> Router:
    """``router``, or (``ACP_AGENT_REPORT_MODULES`` set) one that reports the modules when the
    first ``session/new`` or ``session/load`` is answered."""
    return _Reporting(router) if os.environ.get(REPORT_MODULES) else router


class _Reporting:
    def __init__(self, router: Router) -> None:
        self._router = router
        self._reported = False

    def request_handler(self, method: str) -> RequestHandler | None:
        handler = self._router.request_handler(method)
        if handler is None or method not in REPORTED_METHODS:
            return handler
        inner = handler

        async def reported(raw: msgspec.Raw | None) -> object:
            answer = await inner(raw)
            if not self._reported:
                self._reported = True
                report_modules(f"{method}_answered")
            return answer

        return reported

    def notification_handler(self, method: str) -> NotificationHandler | None:
        return self._router.notification_handler(method)
