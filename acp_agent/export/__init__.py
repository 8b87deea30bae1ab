"""A session's journal as a transcript people read: one self-contained HTML page, or Markdown.

``acp-agent journal export SESSION`` (``journal_cli.py``) and the ``/export`` slash command
(``commands/export.py``) both come here. ``build.py`` makes the transcript (``view.py``) from
the journal's entries, once; ``html.py`` and ``markdown.py`` render it; ``text.py`` holds what
both need (escaping first of all). Nothing here is imported on the server's start-up path: only
an export loads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from acp_agent.export.build import build
from acp_agent.export.view import Transcript
from acp_agent.journal.events import Entry, SessionHeader
from acp_agent.progress import progress

LONG_FROM_EVENTS = 5000
"""A journal this long shows a progress bar while it is read (on a terminal)."""


class Format(StrEnum):
    HTML = "html"
    MARKDOWN = "md"

    @property
    def suffix(self) -> str:
        return f".{self.value}"


def render(transcript: Transcript, fmt: Format) -> str:
    match fmt:
        case Format.HTML:
            from acp_agent.export.html import render_html

            return render_html(transcript)
        case Format.MARKDOWN:
            from acp_agent.export.markdown import render_markdown

            return render_markdown(transcript)


def export_text(
    header: SessionHeader, entries: Sequence[Entry], fmt: Format, *, title: str | None = None
) -> str:
    """The transcript of a session's history in ``fmt`` (a progress bar for a long one)."""
    with progress("export", len(entries), unit="event", long_from=LONG_FROM_EVENTS) as bar:
        transcript = build(header, entries, title=title, tick=bar.advance)
    return render(transcript, fmt)
