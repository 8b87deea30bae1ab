"""The listen settings of ``--listen URL``, ``--token-file FILE`` / ``ACP_AGENT_TOKEN``,
``--allow-origin ORIGIN``, ``--detach-grace SECONDS`` (the flags: ``flags.py``), parsed and checked before anything is
started.

A non-loopback address without a token refuses to start (docs/contract.md §10): the server would
otherwise hand a shell on this machine to whoever reaches the port. ``localhost`` and the
loopback ranges (127.0.0.0/8, ::1) count as loopback; any other name or address does not.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PATH = "/acp"
DEFAULT_DETACH_GRACE_S = 600.0
SCHEMES = ("ws", "http")


class ListenError(Exception):
    """A listen flag that cannot be served; the message is for the person who gave it."""


@dataclass(frozen=True)
class Listen:
    scheme: str
    host: str
    port: int
    path: str
    token: str | None
    origins: frozenset[str]
    detach_grace: float = DEFAULT_DETACH_GRACE_S
    """Seconds a dropped connection's running turns go on (0: cancelled at once)."""

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port if port is None else port}{self.path}"

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    import ipaddress  # here: the CLI imports this module on every start, stdio too

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listen_from(args: argparse.Namespace) -> Listen:
    """The checked listen settings of ``--listen`` (``flags.py``); ``ListenError`` if refused."""
    scheme, host, port, path = parse_url(args.listen)
    token = read_token(args.token_file)
    if token is None and not is_loopback(host):
        raise ListenError(
            f"a token is required to listen on the non-loopback address {host!r}: "
            "give --token-file FILE or set ACP_AGENT_TOKEN (docs/remote.md)"
        )
    origins = allowed_origins(args.allow_origin)
    return Listen(scheme, host, port, path, token, origins, detach_grace(args.detach_grace))


def detach_grace(given: str | None) -> float:
    if given is None or not given.strip():
        return DEFAULT_DETACH_GRACE_S
    try:
        seconds = float(given)
    except ValueError:
        raise ListenError(f"--detach-grace {given!r}: give a number of seconds") from None
    if not 0 <= seconds < float("inf"):
        raise ListenError(f"--detach-grace {given!r}: give seconds, 0 or more")
    return seconds


def parse_url(url: str) -> tuple[str, str, int, str]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ListenError(f"--listen {url!r}: the scheme must be ws:// or http://")
    try:
        port = parts.port
    except ValueError as exc:
        raise ListenError(f"--listen {url!r}: {exc}") from None
    if not parts.hostname or port is None:
        raise ListenError(f"--listen {url!r}: give a host and a port, e.g. ws://127.0.0.1:8765")
    if parts.query or parts.fragment:
        raise ListenError(f"--listen {url!r}: no query or fragment")
    path = parts.path.rstrip("/") or DEFAULT_PATH
    return parts.scheme, parts.hostname, port, path


def read_token(token_file: str | None) -> str | None:
    if token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ListenError(f"--token-file {token_file}: {exc}") from None
        if not token:
            raise ListenError(f"--token-file {token_file}: the file is empty")
        return token
    token = os.environ.get("ACP_AGENT_TOKEN", "").strip()
    return token or None


def allowed_origins(flags: list[str] | None) -> frozenset[str]:
    listed = (
        flags if flags is not None else os.environ.get("ACP_AGENT_ALLOW_ORIGINS", "").split(",")
    )
    return frozenset(origin.strip().rstrip("/") for origin in listed if origin.strip())
