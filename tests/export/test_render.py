"""The export renderers: structure, escaping, and a large session in bounded time."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser

import pytest

from acp_agent.content import ImageContent, TextContent
from acp_agent.export import Format, export_text, render
from acp_agent.export.build import build
from acp_agent.export.style import CSP, CSS
from acp_agent.export.view import Message, ToolRun, Turn
from acp_agent.journal.events import TurnStart, UserMessage, source
from tests.export.sample import HEADER, HOSTILE, HOSTILE_TITLE, entries, events, large_events

ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "div", "header", "h1", "h2", "dl", "dt",
    "dd", "nav", "ol", "li", "a", "span", "main", "article", "section", "p", "details",
    "summary", "pre", "code", "strong", "img", "footer",
}  # fmt: skip


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(page: str) -> _Tags:
    tags = _Tags()
    tags.feed(page)
    tags.close()
    return tags


def sample_html() -> str:
    return render(build(HEADER, entries(), title=HOSTILE_TITLE), Format.HTML)


def test_the_view_has_the_session_shape() -> None:
    transcript = build(HEADER, entries())
    kinds = [type(item).__name__ for item in transcript.items]
    assert kinds == ["Message", "Message", "Turn", "Message", "Compacted", "Turn"]
    first, second = transcript.turns
    assert first.prompt is not None and first.reason == "completed"
    run = next(i for i in first.items if isinstance(i, ToolRun))
    assert run.name == "edit_file" and run.result is not None and len(run.diffs) == 1
    drained = [i for i in first.items if isinstance(i, Message)]
    assert [m.kind for m in drained] == ["x-ci"]
    assert (first.usage.requests, first.usage.tool_calls, first.usage.failed_calls) == (2, 1, 0)
    assert second.reason == "error" and second.reason_message == "model gave up"
    failed = next(i for i in second.items if isinstance(i, ToolRun))
    assert failed.call_id == "call-1#t2s1" and failed.is_error
    assert second.usage.failed_calls == 1


def test_a_turn_left_open_is_shown_open() -> None:
    items = [*events()[:8]]  # two contexts, turn 1 up to its first tool result
    (turn,) = build(HEADER, entries(items)).turns
    assert turn.reason == "open" and turn.ended is None and turn.usage.duration_ms is None


def test_html_is_only_our_markup_whatever_the_journal_holds() -> None:
    page = sample_html()
    tags = parsed(page)
    assert {tag for tag, _ in tags.tags} <= ALLOWED_TAGS
    for tag, attrs in tags.tags:
        assert not [name for name, _ in attrs if name.startswith("on")], (tag, attrs)
        if tag == "img":
            assert (dict(attrs)["src"] or "").startswith("data:image/png;base64,")
    assert page.count("<script") == 0 and "\x1b" not in page and "\x07" not in page
    text = "".join(tags.text)
    assert HOSTILE.replace("\x1b", "\\x1b").replace("\x07", "\\x07") in text
    assert "</title><script>alert(1)</script>\\x1b]0;pwned\\x07 title" in text


def test_html_allows_its_own_style_sheet_and_nothing_else() -> None:
    page = sample_html()
    digest = base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in CSP and "default-src 'none'" in CSP
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in page
    assert f"<style>{CSS}</style>" in page
    assert not re.search(r"\b(?:src|href)=\"(?:https?:|//|file:)", page)


def test_html_has_the_structure() -> None:
    page = sample_html()
    assert '<article class="turn" id="turn-1">' in page and 'id="turn-2"' in page
    assert page.count('<details class="thought">') == 1
    assert '<pre class="diff">' in page and '<span class="add">+TWO</span>' in page
    for anchor in ("#seq-1", "#seq-2", "#turn-1", "#seq-15", "#seq-16", "#turn-2"):
        assert f'href="{anchor}"' in page
    assert (
        "2 model requests · 1 tool call · 2,600 in, 120 out tokens (30 reasoning, 1,000 cached)"
        " · $0.0030 · 1.6 s"
    ) in page
    assert "1 tool call (1 failed)" in page


@pytest.mark.parametrize(
    ("mime", "data"),
    [
        ("image/svg+xml", base64.b64encode(b"<svg onload='alert(1)'/>").decode()),
        ("image/png", 'AAAA" onerror="alert(1)'),
        ('image/png" onerror="x', "AAAA"),
    ],
)
def test_an_image_that_is_not_checked_base64_raster_is_named_not_shown(
    mime: str, data: str
) -> None:
    prompt = UserMessage(
        "p", [TextContent(text="look"), ImageContent(data=data, mimeType=mime)], source("user")
    )
    page = render(build(HEADER, entries([prompt])), Format.HTML)
    assert "<img" not in page and "onerror=" not in page.replace("onerror=&quot;", "")
    assert "not shown" in page


def test_markdown_holds_the_same_content_escaped() -> None:
    text = render(build(HEADER, entries(), title=HOSTILE_TITLE), Format.MARKDOWN)
    outside_code = re.sub(r"(`{3,})[^\n]*\n.*?\n\1\n", "", text, flags=re.DOTALL)
    assert not re.search(r"(?<!\\)<(?:script|img)", outside_code)  # \< is an escaped <
    assert "\x1b" not in text and "\x07" not in text
    assert "&lt;script&gt;" in text
    assert text.startswith("# \\<")
    assert "## Turn 1" in text and "## Turn 2" in text
    assert "source `x-ci` (job=main)" not in text and "source `x-ci` (job=lint)" in text
    assert "<details><summary>Thought</summary>" in text
    assert "```diff\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO" in text
    assert "![image image/png](data:image/png;base64," in text
    # the result holds ``` itself: its fence is longer
    assert "````text\n" in text and "\nfenced\n```\n````" in text
    assert "[Turn 2](#turn-2) — error" in text


@pytest.mark.timeout(60)
def test_a_large_session_exports_in_bounded_time() -> None:
    """10k+ events (the per-test timeout is the bound; bench/ would hold a figure)."""
    big = entries(large_events(1200))
    assert len(big) > 10_000
    page = export_text(HEADER, big, Format.HTML)
    assert page.count('<article class="turn"') == 1200
    markdown = export_text(HEADER, big, Format.MARKDOWN)
    assert markdown.count("\n## Turn ") == 1200


def test_turn_numbers_come_from_the_journal() -> None:
    (turn,) = build(HEADER, entries([TurnStart(7)])).turns
    assert isinstance(turn, Turn) and turn.number == 7


def test_control_characters_are_written_out() -> None:
    from acp_agent.export.text import one_line, visible

    assert visible("a\x00b\x1b[1m\x7f\x85\x9b\tc\nd") == "a\\x00b\\x1b[1m\\x7f\\x85\\x9b\tc\nd"
    assert visible("x\ud800y") == "x\ufffdy"
    assert visible("a\r\nb\rc") == "a\nb\\x0dc"
    assert one_line(" a\n\tb\r\n c ") == "a b c"
