"""``web_fetch {url}``: an HTTP(S) GET, answered as text (HTML as Markdown).

Theory of operation
-------------------
Only ``http`` and ``https`` URLs, with a host. Before each request the call asks permission for
its *host* (action ``fetch``, key ``fetch:<host>``; ``permissions.py``): refused in ``read-only``
and ``plan``, asked in ``ask`` and ``auto-edit`` ("Always allow fetches from <host> in this
session" remembers the host), allowed in ``full-access``. Redirects are followed by hand, at
most ``MAX_REDIRECTS``, each checked like the first URL — scheme, and the permission of a new
host — so a page cannot redirect the call to a host the user never allowed.

Bounds: at most ``MAX_BYTES`` of (decoded) body are read, the rest is not downloaded; the
requests together get ``TIMEOUT_S`` of network time (waiting for the user's answer does not
count); the text out is at most ``MAX_TEXT_CHARS``, with a note when cut. ``httpx`` (and the
HTML-to-Markdown library) are imported when first needed, not at start-up. The body is decoded
with the response's charset (else UTF-8, bad bytes replaced); ``text/html`` and XHTML become
Markdown (``html_markdown.py``: headings, links, code blocks and tables kept; scripts and
navigation dropped); other ``text/*``, JSON, XML and JavaScript pass as they are; anything else
(an image, a PDF, a zip) is refused with its type and size, since the model cannot read it as
text. A status of 400 or more is an error result, with the (bounded) body.

Addresses: each hop's host is resolved once, every address it resolves to is checked, and the
request goes to the checked address with the ``Host`` header and TLS server name set to the
host (``web_address.py``): loopback, private, link-local and cloud-metadata addresses are
refused, whatever the mode and the user's permission, unless the config file's ``[web_fetch]
allow_private = true`` (``WebFetchSettings``, given to the tool by the door that builds it).
Proxies named by the environment are not used: a proxy would connect where it likes.
"""

from __future__ import annotations

import codecs
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import anyio
import msgspec

from acp_agent import __version__
from acp_agent.content import TextContent
from acp_agent.permissions.patterns import Target
from acp_agent.tools.args import parse, string
from acp_agent.tools.base import Location, ToolContext, ToolError, ToolKind, ToolOutput
from acp_agent.tools.guard import authorize, subject
from acp_agent.tools.permissions import Action
from acp_agent.tools.web_settings import WebFetchSettings

if TYPE_CHECKING:
    import httpx

    from acp_agent.tools.web_address import Judge, Resolver

NAME = "web_fetch"
MAX_BYTES = 256 << 10
MAX_TEXT_CHARS = 64 << 10
MAX_URL_CHARS = 8000
MAX_REDIRECTS = 5
TIMEOUT_S = 30.0
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/x-")
_HTML_TYPES = ("text/html", "application/xhtml+xml")
ACCEPT = "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1"


class WebFetchArgs(msgspec.Struct, frozen=True):
    url: str


class _Page(msgspec.Struct, frozen=True):
    url: str
    status: int
    reason: str
    content_type: str
    body: bytes
    cut: bool
    charset: str | None


class WebFetch:
    """``settings``: the ``[web_fetch]`` table; ``resolve`` and ``judge``: the name resolver
    and the address judgement (seams for tests; default the system's resolver and
    ``web_address.refusal``)."""

    name = NAME
    description = (
        "GET an http(s) URL as text (HTML as Markdown; at most "
        f"{MAX_TEXT_CHARS // 1024} KiB). The user may be asked to allow each site."
    )
    kind = ToolKind.FETCH
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {"url": {"type": "string", "description": "an http:// or https:// URL"}},
        "required": ["url"],
    }

    def __init__(
        self,
        settings: WebFetchSettings | None = None,
        resolve: Resolver | None = None,
        judge: Judge | None = None,
    ) -> None:
        self.settings = settings or WebFetchSettings()
        self.resolve = resolve
        self.judge = judge

    def title(self, arguments: dict[str, object]) -> str:
        url = string(arguments, "url")
        if url is None:
            return "Fetch URL"
        return f"Fetch {url if len(url) <= 100 else url[:99] + '…'}"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        url = parse(arguments, WebFetchArgs, NAME).url.strip()
        checked_host(url)
        import httpx  # lazily: start-up time matters

        from acp_agent.tools.web_address import refusal, system_resolver

        headers = {"User-Agent": f"acp-agent/{__version__}", "Accept": ACCEPT}
        allow = self.settings.allow_private
        hops = _Hops(allow, self.resolve or system_resolver, self.judge or refusal)
        try:
            async with httpx.AsyncClient(
                follow_redirects=False,
                timeout=httpx.Timeout(TIMEOUT_S),
                headers=headers,
                trust_env=False,
            ) as client:
                page = await hops.fetch(client, url, ctx)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            why = str(exc) or "the request failed"
            raise ToolError(f"{NAME}: {url}: {type(exc).__name__}: {why}") from exc
        return answer(page)


def checked_host(url: str) -> str:
    """The URL's host, lower-cased; ``ToolError`` unless it is an http(s) URL with a host."""
    if len(url) > MAX_URL_CHARS:
        raise ToolError(f"{NAME}: the URL is longer than {MAX_URL_CHARS} characters")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise ToolError(f"{NAME}: not a valid URL: {url!r} ({exc})") from exc
    if parts.scheme.lower() not in ("http", "https"):
        shown = f"{parts.scheme}:" if parts.scheme else "no scheme"
        raise ToolError(f"{NAME}: only http:// and https:// URLs are fetched, not {shown} ({url})")
    if not host:
        raise ToolError(f"{NAME}: the URL has no host: {url!r}")
    return host.lower()


class _Hops(msgspec.Struct, frozen=True):
    """The requests of one call: the first URL and the redirects after it."""

    allow_private: bool
    resolve: Resolver
    judge: Judge

    async def fetch(self, client: httpx.AsyncClient, url: str, ctx: ToolContext) -> _Page:
        """Follow up to ``MAX_REDIRECTS`` redirects by hand, asking for each new host and
        checking each hop's address."""
        allowed: set[str] = set()
        budget = TIMEOUT_S
        for _ in range(MAX_REDIRECTS + 1):
            host = checked_host(url)
            if host not in allowed:
                asked = subject(ctx, Target.WEB_FETCH, host)
                await authorize(ctx, Action.FETCH, asked, f"fetches from {host}")
                allowed.add(host)
            started = anyio.current_time()
            with anyio.move_on_after(budget) as deadline:
                page, location = await self._hop(client, url)
            if deadline.cancelled_caught:
                raise ToolError(f"{NAME}: {url}: timed out after {TIMEOUT_S:g} s")
            budget -= anyio.current_time() - started
            if location is None:
                return page
            url = urljoin(url, location)
        raise ToolError(f"{NAME}: more than {MAX_REDIRECTS} redirects; the last pointed to {url}")

    async def _hop(self, client: httpx.AsyncClient, url: str) -> tuple[_Page, str | None]:
        import httpx

        from acp_agent.tools.web_address import AddressRefused, checked_address

        target = httpx.URL(url)
        host = target.raw_host.decode("ascii")
        port = target.port or (443 if target.scheme == "https" else 80)
        try:
            address = await checked_address(
                host, port, allow_private=self.allow_private, resolve=self.resolve, judge=self.judge
            )
        except AddressRefused as exc:
            raise ToolError(f"{NAME}: refused {url}: {exc}") from exc
        except OSError as exc:
            raise ToolError(f"{NAME}: {url}: cannot resolve {host}: {exc}") from exc
        pinned = target.copy_with(host=str(address))
        headers = {"Host": target.netloc.decode("ascii")}
        request = client.build_request(
            "GET", pinned, headers=headers, extensions={"sni_hostname": host}
        )
        return await _get(client, request, url)


async def _get(
    client: httpx.AsyncClient, request: httpx.Request, url: str
) -> tuple[_Page, str | None]:
    """One GET: the page (body read up to ``MAX_BYTES``), or where it redirects."""
    response = await client.send(request, stream=True)
    try:
        location = response.headers.get("location")
        if response.status_code in _REDIRECTS and location:
            return _page(url, response, b"", cut=False), location
        body, cut = bytearray(), False
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_BYTES:
                del body[MAX_BYTES:]
                cut = True
                break
        return _page(url, response, bytes(body), cut), None
    finally:
        await response.aclose()


def _page(url: str, response: httpx.Response, body: bytes, cut: bool) -> _Page:
    """``url``: the hop's URL as the model knows it (the request went to its address)."""
    content_type = response.headers.get("content-type", "")
    return _Page(
        url,
        response.status_code,
        response.reason_phrase,
        content_type.split(";")[0].strip().lower(),
        body,
        cut,
        response.charset_encoding,
    )


def answer(page: _Page) -> ToolOutput:
    """What the model reads: where the page came from, its status and type, then its text."""
    head = f"URL: {page.url}\nStatus: {page.status} {page.reason}".rstrip()
    head += f"\nContent-Type: {page.content_type or 'unknown'}"
    text = _text(page)
    notes: list[str] = []
    if page.cut:
        notes.append(f"[download stopped at {MAX_BYTES // 1024} KiB; the rest was not fetched]")
    if len(text) > MAX_TEXT_CHARS:
        notes.append(f"[text cut at {MAX_TEXT_CHARS:,} of {len(text):,} characters]")
        text = text[:MAX_TEXT_CHARS]
    body = "\n".join([text, *notes]) if text else "\n".join(["[empty body]", *notes])
    return ToolOutput([TextContent(text=f"{head}\n\n{body}")], is_error=page.status >= 400)


def _text(page: _Page) -> str:
    kind = page.content_type
    textual = (
        kind.startswith("text/") or kind.startswith(_TEXT_TYPES) or kind.endswith(("+json", "+xml"))
    )
    if not textual and not (kind == "" and _looks_textual(page.body)):
        raise ToolError(
            f"{NAME}: {page.url} is {kind or 'binary data'} ({len(page.body):,} bytes read), "
            "not text; it is not shown"
        )
    decoded = page.body.decode(_codec(page.charset), "replace")
    if kind not in _HTML_TYPES:
        return decoded
    from acp_agent.tools.html_markdown import ConversionFailed, html_to_markdown_text

    try:  # the library is imported only when a page is HTML
        return html_to_markdown_text(decoded, page.url)
    except ConversionFailed as exc:
        raise ToolError(f"{NAME}: {page.url}: the HTML could not be read: {exc}") from exc


def _codec(charset: str | None) -> str:
    try:
        return codecs.lookup(charset).name if charset else "utf-8"
    except LookupError:
        return "utf-8"


def _looks_textual(body: bytes) -> bool:
    head = body[:8192]
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3  # a sequence cut at the sample's end
    return True
