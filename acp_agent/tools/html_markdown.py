"""HTML as Markdown, for ``web_fetch``: the ``html-to-markdown`` library (imported when a page
is HTML, never at start-up).

Chosen by measurement on saved pages (``bench/html_markdown.py``, ``docs/tools.md``): of
markdownify, html2text and html-to-markdown, only html-to-markdown kept every heading, link,
fenced code block and table of a Python docs page, a GitHub README page and an MDN page, and it
is the fastest by far (a Rust core). What is dropped: scripts, styles, forms and hidden
content (its preprocessing), images, and the page's chrome: ``EXCLUDED`` names navigation,
footers, sidebars, search boxes and site banners, by element and ARIA role. Not ``header``:
an article's own header holds its title (MDN's ``h1``), and this library's ``:not(...)``
selectors did not match when tried, so only a header with ``role=banner`` goes. Relative links are made
absolute against the page URL. The page's ``<title>`` becomes the first line, ``# title``,
unless the text already starts with it (the library reports it in a leading metadata block,
which is cut off). The caller bounds the input (``web_fetch.MAX_BYTES``) and the output.
"""

from __future__ import annotations

import html_to_markdown

EXCLUDED = [
    "nav", "aside", "form", "footer", "[role=navigation]", "[role=banner]", "[role=contentinfo]",
    "[role=search]",
]  # fmt: skip
_OPTIONS = html_to_markdown.ConversionOptions(
    preprocessing=html_to_markdown.PreprocessingOptions(),
    skip_images=True,
    extract_metadata=True,
    exclude_selectors=EXCLUDED,
)


class ConversionFailed(Exception):
    """The library could not convert the page."""


def html_to_markdown_text(html: str, base_url: str = "") -> str:
    options = _OPTIONS
    if base_url:
        import dataclasses

        options = dataclasses.replace(_OPTIONS, base_url=base_url)
    try:
        result = html_to_markdown.convert(html, options)
    except html_to_markdown.ConversionError as exc:
        raise ConversionFailed(str(exc) or type(exc).__name__) from exc
    text = _without_front_matter(result.content or "").strip()
    title = result.metadata.document.title if result.metadata is not None else None
    title = " ".join(title.split()) if title else None
    if title and not text.startswith(f"# {title}"):
        return f"# {title}\n\n{text}" if text else f"# {title}"
    return text


def _without_front_matter(text: str) -> str:
    """The text without the ``---`` metadata block the library puts first."""
    if not text.startswith("---\n"):
        return text
    end = text.find("\n---\n", 4)
    return text[end + 5 :] if end >= 0 else text
