"""HTML reduced to readable text (light markdown), for ``web_fetch``; stdlib ``html.parser`` only.

What is dropped: ``script``, ``style``, ``noscript``, ``template``, ``svg``, ``head`` (its
``title`` is kept, as the first line ``# title``), comments, and every attribute but ``href``.
What is kept: text, with runs of white space collapsed; block elements (``p``, ``div``,
headings, list items, table rows, ``br`` ...) break lines; headings become ``#`` lines, list
items ``- `` lines, links ``[text](href)`` (relative ``href``s joined to the page URL), ``pre``
text as it is, inside a fenced block. Three or more newlines collapse to two. The parser never
raises on bad markup (``html.parser`` is lenient), and its input is already bounded by the
caller.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe"})
_BLOCKS = frozenset(
    {"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "ul", "ol",
     "table", "tr", "blockquote", "form", "hr", "dl", "dt", "dd", "figure", "figcaption"}
)  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_SPACES = re.compile(r"[ \t\r\n\f\v]+")
_BLANKS = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


def html_to_text(html: str, base_url: str = "") -> str:
    parser = _Reducer(base_url)
    parser.feed(html)
    parser.close()
    return parser.text()


class _Reducer(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.out: list[str] = []
        self.dropped = 0  # depth inside dropped elements
        self.pre = 0
        self.title: list[str] | None = None
        self.titles: list[str] = []
        self.links: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.title = []
        if tag in _DROPPED:
            self.dropped += 1
        if self.dropped:
            return
        if tag in _BLOCKS or tag == "br":
            self._newline()
        elif tag in _HEADINGS:
            self._newline(2)
            self.out.append("#" * _HEADINGS[tag] + " ")
        elif tag == "li":
            self._newline()
            self.out.append("- ")
        elif tag == "pre":
            self.pre += 1
            self._newline(2)
            self.out.append("```\n")
        elif tag in ("td", "th"):
            self.out.append(" | ")
        elif tag == "a":
            href = dict(attrs).get("href")
            useful = href and not href.startswith(("#", "javascript:"))
            self.links.append(urljoin(self.base_url, href) if useful and href else None)
            if useful:
                self.out.append("[")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.title is not None:
            self.titles.append(" ".join("".join(self.title).split()))
            self.title = None
        if tag in _DROPPED:
            self.dropped = max(0, self.dropped - 1)
            return
        if self.dropped:
            return
        if tag in _HEADINGS or tag in _BLOCKS:
            self._newline(2 if tag in _HEADINGS or tag == "p" else 1)
        elif tag == "pre" and self.pre:
            self.pre -= 1
            self.out.append("\n```")
            self._newline(2)
        elif tag == "a" and self.links:
            href = self.links.pop()
            if href is not None:
                self.out.append(f"]({href})")

    def handle_data(self, data: str) -> None:
        if self.title is not None:
            self.title.append(data)
        if self.dropped:
            return
        self.out.append(data if self.pre else _SPACES.sub(" ", data))

    def _newline(self, count: int = 1) -> None:
        self.out.append("\n" * count)

    def text(self) -> str:
        text = _BLANKS.sub("\n\n", "\n".join(_tidy("".join(self.out).split("\n")))).strip()
        title = next((t for t in self.titles if t), None)
        if title and not text.startswith(f"# {title}"):
            return f"# {title}\n\n{text}"
        return text


def _tidy(lines: list[str]) -> list[str]:
    """Lines stripped, except inside fenced (``pre``) blocks, which keep their indentation."""
    tidy, fenced = [], False
    for line in lines:
        if line.strip() == "```":
            fenced = not fenced
            tidy.append("```")
        else:
            tidy.append(line.rstrip() if fenced else line.strip())
    return tidy
