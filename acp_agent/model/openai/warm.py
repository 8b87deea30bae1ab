"""Importing the HTTP stack before the first request needs it, while the user is still typing.

``import httpx`` (85-130 ms here), ``import httpcore`` (which httpx defers to the first client's
transport, about 55 ms) and the TLS context every ``httpx.AsyncClient`` builds from
certifi's bundle (about 80 ms, even for an ``http://`` URL) are most of a fresh process's time
to its first token, and ``initialize`` must not pay for them (the provider imports httpx at its
first request). So once a session exists — ``session/new`` or ``load`` answered — ``warm_up``
imports httpx and builds the one TLS context (``ssl_context``) on a daemon thread; a client
built with it costs well under a millisecond. The import lock makes this safe: a request that
comes first waits for the same import instead of starting another, and ``ssl_context`` builds
the context at most once; a process that exits first does not wait for the thread.
"""

from __future__ import annotations

import importlib
import ssl
import threading
import time

import structlog

log = structlog.get_logger(__name__)

MODULES = ("httpx", "httpcore")
"""httpx imports httpcore (and h11) only when its first transport is built, about 55 ms more."""
_started = threading.Event()
_context_lock = threading.Lock()
_context: ssl.SSLContext | None = None


def ssl_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's CAs), built once per process and shared."""
    global _context
    with _context_lock:
        if _context is None:
            import httpx

            _context = httpx.create_ssl_context()
        return _context


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
    ssl_context()
    log.debug("http_stack_imported", ms=round((time.perf_counter() - started) * 1000, 1))
