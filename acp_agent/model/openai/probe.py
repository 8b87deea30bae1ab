"""Asking a local OpenAI-compatible server for its context window, once, before the first
request of a model that has no ``context_window`` configured.

llama.cpp's server names its runtime window in ``GET /props`` (``default_generation_settings
.n_ctx``, at the server's root, beside ``/v1``); vLLM names it in ``GET /v1/models``
(``max_model_len`` of the model's entry), as do other servers under ``context_length`` or
``context_window``. A server that answers neither (404, no such key, an error, 2 seconds of
silence) leaves the window as it was: the session still learns it from the first overflow error
that names it (``turn/gauge.py``). Only servers marked ``local`` (a ``[providers.NAME]`` table's
``local = true``, or a loopback ``base_url``) are asked: a remote API would pay one more round
trip at the first prompt for an answer it does not give.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from acp_agent.logs import get_logger

if TYPE_CHECKING:
    import httpx

log = get_logger("acp_agent.model")

PROBE_TIMEOUT_S: Final = 2.0
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
WINDOW_KEYS: Final = ("max_model_len", "context_length", "context_window")


def is_loopback(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def server_root(base_url: str) -> str:
    """``http://host:port/v1`` → ``http://host:port``: where llama.cpp serves ``/props``."""
    trimmed = base_url.rstrip("/")
    return trimmed[: -len("/v1")] if trimmed.endswith("/v1") else trimmed


async def probe_window(client: httpx.AsyncClient, base_url: str, model: str) -> int | None:
    """The window the server names for ``model``, or ``None`` (see the module docstring)."""
    import httpx

    for url, read in (
        (f"{server_root(base_url)}/props", _from_props),
        ("models", lambda doc: _from_models(doc, model)),
    ):
        try:
            response = await client.get(url, timeout=PROBE_TIMEOUT_S)
            window = read(response.json()) if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as exc:
            log.debug("model_window_probe_failed", url=url, error=f"{type(exc).__name__}: {exc}")
            continue
        if window is not None:
            log.info("model_window_probed", url=url, context_window=window)
            return window
    return None


def _from_props(document: Any) -> int | None:
    settings = document.get("default_generation_settings") if isinstance(document, dict) else None
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def _from_models(document: Any, model: str) -> int | None:
    entries = document.get("data") if isinstance(document, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            for key in WINDOW_KEYS:
                window = _positive(entry.get(key))
                if window is not None:
                    return window
    return None


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
