"""A real HTTP server on 127.0.0.1 in a thread, for ``web_fetch`` tests (no other network).

Routes: ``/page.html`` (HTML with a title, a script and a link), ``/plain.txt``, ``/notes.md``
(``text/markdown``), ``/big`` (1 MiB of text), ``/image.png`` (binary), ``/missing`` (404 with
an HTML body), ``/redirect`` (302 to ``/page.html``), ``/loop`` (302 to itself), ``/elsewhere``
(302 to the same server named ``localhost``, another host), ``/to-metadata`` (302 to
169.254.169.254), ``/to-internal`` (302 to the server named ``internal.test``), ``/held`` (answers only once
``release`` is set: a server that hangs). ``requests`` lists the paths asked, in order,
``hosts`` their ``Host`` headers."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = (
    "<html><head><title>The Page</title><script>var x = '<p>no</p>';</script></head>"
    "<body><h1>Hello</h1><p>Some <b>bold</b>\n   text and <a href='/plain.txt'>a link</a>.</p>"
    "<ul><li>one</li><li>two</li></ul></body></html>"
)
BIG = 1 << 20


@dataclass
class Loopback:
    port: int
    requests: list[str] = field(default_factory=list)
    hosts: list[str | None] = field(default_factory=list)
    """The ``Host`` header of each request."""
    release: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


@contextmanager
def loopback_server() -> Iterator[Loopback]:
    state = Loopback(0)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            state.hosts.append(self.headers.get("Host"))
            route = ROUTES.get(self.path)
            if route is None:
                self._send(404, "text/html", b"<p>Not <i>here</i></p>")
            elif self.path == "/held":
                state.release.wait(30)
                self._send(200, "text/plain", b"late")
            else:
                status, kind, body = route(state)
                self._send(status, kind, body)

        def _send(self, status: int, kind: str, body: bytes, location: str | None = None) -> None:
            if status in (301, 302):
                location, body = body.decode(), b""
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            if location:
                self.send_header("Location", location)
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)  # the client may stop reading (a capped download)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


Route = Callable[[Loopback], tuple[int, str, bytes]]


def _fixed(status: int, kind: str, body: bytes) -> Route:
    return lambda _state: (status, kind, body)


ROUTES: dict[str, Route] = {
    "/page.html": _fixed(200, "text/html; charset=utf-8", PAGE.encode()),
    "/plain.txt": _fixed(200, "text/plain; charset=latin-1", "caf\xe9\n".encode("latin-1")),
    "/notes.md": _fixed(200, "text/markdown", b"# Notes\n\n- a\n"),
    "/big": _fixed(200, "text/plain", b"y" * BIG),
    "/image.png": _fixed(200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\0" * 100),
    "/missing": _fixed(404, "text/html", b"<p>Not <i>here</i></p>"),
    "/redirect": _fixed(302, "text/html", b"/page.html"),
    "/loop": _fixed(302, "text/html", b"/loop"),
    "/elsewhere": lambda state: (302, "text/html", state.url("/notes.md", "localhost").encode()),
    "/held": _fixed(200, "text/plain", b""),
    "/to-metadata": _fixed(302, "text/html", b"http://169.254.169.254/latest/meta-data/"),
    "/to-internal": lambda state: (
        302,
        "text/html",
        state.url("/plain.txt", "internal.test").encode(),
    ),
}
