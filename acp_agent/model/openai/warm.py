"""Importing the HTTP stack before the first request needs it, while the user is still typing.

``import httpx`` (85-130 ms here), ``import httpcore`` (which httpx defers to the first client's
transport, about 55 ms) and the TLS context every ``httpx.AsyncClient`` builds from
certifi's bundle (25-80 ms) are most of a fresh process's time to its first token, and
``initialize`` must not pay for them (the provider imports httpx at its first request). So once
a session exists — ``session/new`` or ``load`` answered — ``warm_up`` imports httpx and, for an
``https://`` endpoint, builds the one TLS context (``ssl_context``) on a daemon thread; a client
built with it costs well under a millisecond. The import lock makes this safe: a request that
comes first waits for the same import instead of starting another, and ``ssl_context`` builds
the context at most once; a process that exits first does not wait for the thread.

An ``http://`` endpoint (a local llama.cpp, vLLM or Ollama server) makes no TLS connection, but
httpx builds a context for every client all the same. Such a client gets another context
instead: strict (hostname checked, certificate required) with no trust anchors, built in
well under a millisecond, so a TLS connection it were ever asked for (model requests follow no
redirects) would fail closed, not unverified. httpx's command line, which its import would pull
in with click, rich and pygments, is kept out by ``acp_agent/lean_imports.py``.
"""

from __future__ import annotations

import importlib
import ssl
import threading
import time

from acp_agent.logs import get_logger

log = get_logger(__name__)

MODULES = ("httpx", "httpcore")
"""httpx imports httpcore (and h11) only when its first transport is built, about 55 ms more."""
_started = threading.Event()
_context_lock = threading.Lock()
_context: ssl.SSLContext | None = None


def ssl_context(base_url: str) -> ssl.SSLContext:
    """For an ``https://`` ``base_url``: httpx's default TLS context (certifi's CAs), built once
    per process and shared. For any other: the strict context without trust anchors."""
    if not _is_https(base_url):
        return _no_trust_context()
    global _context
    with _context_lock:
        if _context is None:
            import httpx

            _context = httpx.create_ssl_context()
        return _context


def _is_https(base_url: str) -> bool:
    return base_url.lower().startswith("https:")


def _no_trust_context() -> ssl.SSLContext:
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, against nothing: fails closed


def warm_up(base_url: str | None) -> None:
    """Start importing the HTTP stack in the background, once per process, and building the
    TLS context when the session's endpoint ``base_url`` is ``https://`` (``None``: a local
    ``gguf:`` server, on loopback ``http://``)."""
    if _started.is_set():
        return
    _started.set()
    threading.Thread(target=_import, args=(base_url,), name="acp-warm-up", daemon=True).start()


def _import(base_url: str | None) -> None:
    started = time.perf_counter()
    for name in MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # the request will say so, with its own message
            log.debug("http_stack_import_failed", module=name, error=str(exc))
            return
    if base_url is not None and _is_https(base_url):
        ssl_context(base_url)  # certifi's, shared; an http:// client's costs nothing to build
    log.debug("http_stack_imported", ms=round((time.perf_counter() - started) * 1000, 1))
