"""``web_fetch`` against a real HTTP server on 127.0.0.1 (``loopback_http.py``): HTML as
Markdown (and the saved pages of ``tests/tools/pages/``), charsets, the size cap, redirects (bounded, each new host asked), schemes refused,
per-host permission in ``ask`` mode, refusal in ``read-only`` and ``plan``, errors and the
timeout. Expectations: docs/tools.md (``web_fetch``) and issue 15 point 5."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_agent.content import TextContent
from acp_agent.tools import web_fetch
from acp_agent.tools.base import ToolError, ToolOutput
from acp_agent.tools.html_markdown import html_to_markdown_text
from acp_agent.tools.permissions import Mode
from acp_agent.tools.web_fetch import MAX_BYTES, WebFetch
from acp_agent.tools.web_settings import WebFetchSettings
from bench.html_markdown import PAGE_CHECKS, PAGES, Page, checks
from tests.tools.loopback_http import Loopback, loopback_server
from tests.tools.support import ScriptedAsker, context


@pytest.fixture
def server() -> Iterator[Loopback]:
    with loopback_server() as running:
        yield running


def text(output: ToolOutput) -> str:
    assert len(output.content) == 1 and isinstance(output.content[0], TextContent)
    return output.content[0].text


LOOPBACK = WebFetchSettings(allow_private=True)  # the test server is on 127.0.0.1


async def fetch(url: str, workspace: Path, mode: Mode = Mode.FULL_ACCESS) -> ToolOutput:
    return await WebFetch(LOOPBACK).run({"url": url}, context(workspace, mode))


async def test_html_becomes_markdown_with_its_links(server: Loopback, workspace: Path) -> None:
    output = await fetch(server.url("/page.html"), workspace)
    assert not output.is_error
    head, body = text(output).split("\n\n", 1)
    assert head == (f"URL: {server.url('/page.html')}\nStatus: 200 OK\nContent-Type: text/html")
    assert body == (
        "# The Page\n\n# Hello\n\n"
        f"Some **bold** text and [a link]({server.url('/plain.txt')}).\n\n- one\n- two"
    ), "the script is gone, white space collapsed, the link made absolute"


async def test_text_passes_as_it_is_in_its_charset(server: Loopback, workspace: Path) -> None:
    assert text(await fetch(server.url("/plain.txt"), workspace)).endswith("\n\ncafé\n")
    assert text(await fetch(server.url("/notes.md"), workspace)).endswith("\n\n# Notes\n\n- a\n")


async def test_the_download_is_capped(server: Loopback, workspace: Path) -> None:
    out = text(await fetch(server.url("/big"), workspace))
    assert f"[download stopped at {MAX_BYTES // 1024} KiB; the rest was not fetched]" in out
    assert "[text cut at 65,536 of 262,144 characters]" in out
    assert out.split("\n\n", 1)[1].count("y") == 64 << 10


async def test_redirects_are_followed_and_bounded(server: Loopback, workspace: Path) -> None:
    output = text(await fetch(server.url("/redirect"), workspace))
    assert output.startswith(f"URL: {server.url('/page.html')}\n")
    with pytest.raises(ToolError, match="more than 5 redirects"):
        await fetch(server.url("/loop"), workspace)
    assert server.requests.count("/loop") == 6


async def test_each_host_is_asked_once_when_allowed_always(
    server: Loopback, workspace: Path
) -> None:
    asker = ScriptedAsker(["allow_always", "allow_once", "reject_once"])
    ctx = context(workspace, Mode.ASK, asker)
    await WebFetch(LOOPBACK).run({"url": server.url("/plain.txt")}, ctx)
    await WebFetch(LOOPBACK).run({"url": server.url("/notes.md")}, ctx)  # 127.0.0.1 remembered
    assert len(asker.asked) == 1
    assert asker.asked[0].options[1].name == "Always allow fetches from 127.0.0.1 in this session"
    output = await WebFetch(LOOPBACK).run({"url": server.url("/elsewhere")}, ctx)  # asked
    assert text(output).startswith(f"URL: {server.url('/notes.md', 'localhost')}\n")
    with pytest.raises(ToolError, match="permission denied: the user rejected it"):
        await WebFetch(LOOPBACK).run({"url": server.url("/notes.md", "localhost")}, ctx)  # once
    assert len(asker.asked) == 3
    assert server.requests == ["/plain.txt", "/notes.md", "/elsewhere", "/notes.md"]


@pytest.mark.parametrize("mode", [Mode.READ_ONLY, Mode.PLAN])
async def test_refused_in_read_only_and_plan_without_a_request(
    server: Loopback, workspace: Path, mode: Mode
) -> None:
    with pytest.raises(ToolError, match=f"in {mode} mode: fetches from 127.0.0.1 are not allowed"):
        await fetch(server.url("/plain.txt"), workspace, mode)
    assert server.requests == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file:///etc/passwd", "only http:// and https:// URLs are fetched, not file:"),
        ("ftp://example.com/x", "not ftp:"),
        ("example.com/page", "not no scheme"),
        ("http:///nohost", "the URL has no host"),
        ("http://[::1/", "not a valid URL"),
    ],
)
async def test_other_urls_are_refused(workspace: Path, url: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        await fetch(url, workspace)


async def test_errors_binary_and_bad_arguments(server: Loopback, workspace: Path) -> None:
    missing = await fetch(server.url("/missing"), workspace)
    assert missing.is_error and "Status: 404 Not Found" in text(missing)
    assert text(missing).endswith("Not *here*")
    with pytest.raises(ToolError, match=r"is image/png .* not text"):
        await fetch(server.url("/image.png"), workspace)
    with pytest.raises(ToolError, match="bad arguments"):
        await WebFetch(LOOPBACK).run({"url": 3}, context(workspace))


async def test_a_server_that_hangs_times_out(
    server: Loopback, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_fetch, "TIMEOUT_S", 0.3)
    with pytest.raises(ToolError, match="timed out"):
        await fetch(server.url("/held"), workspace)


async def test_a_refused_connection_is_an_error_result(workspace: Path) -> None:
    with loopback_server() as gone:
        url = gone.url("/plain.txt")
    with pytest.raises(ToolError, match="ConnectError"):
        await fetch(url, workspace)


def test_markdown_keeps_pre_blocks_and_tables_and_drops_styles() -> None:
    html = "<style>p{}</style><pre>  a\n    b</pre><table><tr><td>x</td><td>y</td></tr></table>"
    assert html_to_markdown_text(html) == "```\n  a\n    b\n```\n\n| x | y |\n| --- | --- |"


@pytest.mark.parametrize("page", PAGE_CHECKS, ids=lambda page: page.file)
def test_saved_pages_keep_headings_links_code_and_tables_and_drop_the_chrome(page: Page) -> None:
    """A Python docs page (python3.11-doc's own HTML), a GitHub README page and an MDN page
    (built as those sites render; tests/tools/pages/README.md)."""
    markdown = html_to_markdown_text((PAGES / page.file).read_text(encoding="utf-8"), page.url)
    found = checks(page, markdown)
    assert {key: got for key, (got, _) in found.items()} == {
        key: wanted for key, (_, wanted) in found.items()
    }
    assert markdown.startswith("# "), "the page's title first"
