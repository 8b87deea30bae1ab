"""Importing the HTTP stack before the first request needs it, while the user is still typing.

``import httpx`` is most of a fresh process's time to its first token (about 44 of 53 ms), and
``initialize`` must not pay for it (the provider imports it at its first request). So once a
session exists — ``session/new`` or ``load`` answered — ``warm_up`` imports it on a daemon
thread. The import lock makes this safe: a request that comes first waits for the same import
instead of starting another; a process that exits first does not wait for the thread.
"""

from __future__ import annotations

import importlib
import threading
import time

import structlog

log = structlog.get_logger(__name__)

MODULES = ("httpx",)
_started = threading.Event()


def warm_up() -> None:
    """Start importing the HTTP stack in the background, once per process."""
    if _started.is_set():
        return
    _started.set()
    threading.Thread(target=_import, name="acp-warm-up", daemon=True).start()


def _import() -> None:
    started = time.perf_counter()
    for name in MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # the request will say so, with its own message
            log.debug("http_stack_import_failed", module=name, error=str(exc))
            return
    log.debug("http_stack_imported", ms=round((time.perf_counter() - started) * 1000, 1))
