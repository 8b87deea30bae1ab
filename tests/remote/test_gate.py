"""The listen settings and the gate, unit by unit (no server): docs/contract.md §10.

- ``--listen``: ``ws://`` or ``http://`` with a host and a port; the path defaults to ``/acp``
  and a path in the URL replaces it.
- a token is required off loopback (127.0.0.0/8, ::1, ``localhost``); the token file's
  surrounding whitespace is stripped; the file wins over ``ACP_AGENT_TOKEN``.
- the gate: path 404, then token 401 (``Authorization: Bearer``, exact), then ``Origin`` 403
  unless allowed; no ``Origin`` is accepted.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from acp_agent.remote import gate
from acp_agent.remote.flags import add_listen_options
from acp_agent.remote.options import Listen, ListenError, is_loopback, listen_from, parse_url


def args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_listen_options(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize(
    ("url", "parsed"),
    [
        ("ws://127.0.0.1:8765", ("ws", "127.0.0.1", 8765, "/acp")),
        ("http://localhost:0/", ("http", "localhost", 0, "/acp")),
        ("ws://[::1]:9/agent/", ("ws", "::1", 9, "/agent")),
    ],
)
def test_listen_urls(url: str, parsed: tuple[str, str, int, str]) -> None:
    assert parse_url(url) == parsed


@pytest.mark.parametrize(
    "url", ["wss://127.0.0.1:1", "tcp://127.0.0.1:1", "ws://127.0.0.1", "ws://:80", "ws://h:1/?q=1"]
)
def test_bad_listen_urls_are_refused(url: str) -> None:
    with pytest.raises(ListenError):
        parse_url(url)


def test_loopback_addresses() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.9.9.9", "::1", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.1", "example.com", "localhost."]))


def test_a_token_is_required_off_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACP_AGENT_TOKEN", raising=False)
    with pytest.raises(ListenError, match="a token is required"):
        listen_from(args("--listen", "ws://0.0.0.0:1"))
    assert listen_from(args("--listen", "ws://127.0.0.1:1")).token is None
    monkeypatch.setenv("ACP_AGENT_TOKEN", "  from-env ")
    assert listen_from(args("--listen", "ws://0.0.0.0:1")).token == "from-env"


def test_the_detach_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACP_AGENT_DETACH_GRACE", raising=False)
    assert listen_from(args("--listen", "ws://127.0.0.1:1")).detach_grace == 600
    assert (
        listen_from(args("--listen", "ws://127.0.0.1:1", "--detach-grace", "0")).detach_grace == 0
    )
    monkeypatch.setenv("ACP_AGENT_DETACH_GRACE", "2.5")
    assert listen_from(args("--listen", "ws://127.0.0.1:1")).detach_grace == 2.5
    for bad in ("-1", "soon", "nan", "inf"):
        with pytest.raises(ListenError, match="--detach-grace"):
            listen_from(args("--listen", "ws://127.0.0.1:1", "--detach-grace", bad))


def test_the_token_file_is_stripped_and_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACP_AGENT_TOKEN", "from-env")
    token = tmp_path / "token"
    token.write_text("\n  from-file \t\n")
    listen = listen_from(args("--listen", "ws://0.0.0.0:1", "--token-file", str(token)))
    assert listen.token == "from-file"
    token.write_text(" \n")
    with pytest.raises(ListenError, match="empty"):
        listen_from(args("--listen", "ws://0.0.0.0:1", "--token-file", str(token)))
    with pytest.raises(ListenError):
        listen_from(args("--listen", "ws://0.0.0.0:1", "--token-file", str(tmp_path / "none")))


LISTEN = Listen("ws", "127.0.0.1", 1, "/acp", "tok", frozenset({"https://ok.example"}))


def headers(**values: str) -> list[tuple[bytes, bytes]]:
    return [(k.encode(), v.encode()) for k, v in values.items()]


@pytest.mark.parametrize(
    ("path", "given", "status"),
    [
        ("/acp", {"authorization": "Bearer tok"}, None),
        ("/acp/", {"authorization": "bearer tok"}, None),
        ("/other", {"authorization": "Bearer tok"}, 404),
        ("/acp", {}, 401),
        ("/acp", {"authorization": "Bearer tok2"}, 401),
        ("/acp", {"authorization": "Basic tok"}, 401),
        ("/acp", {"authorization": "tok"}, 401),
        ("/acp", {"authorization": "Bearer tok", "origin": "https://evil.example"}, 403),
        ("/acp", {"authorization": "Bearer tok", "origin": "https://ok.example"}, None),
        ("/acp", {"origin": "https://ok.example"}, 401),  # the token first
    ],
)
def test_the_gate(path: str, given: dict[str, str], status: int | None) -> None:
    refusal = gate.check(LISTEN, path, headers(**given))
    assert (refusal.status if refusal else None) == status
