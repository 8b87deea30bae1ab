"""What both renderers need: text made safe to show, times, durations, previews.

``visible`` is applied to every string taken from a journal before any other escaping: C0 and
C1 control characters (but newline and tab) become a visible ``\\xNN``, lone surrogates become
U+FFFD, so a hostile tool output can neither drive a terminal nor hide text. The renderers then
escape for their own syntax (``html.escape``; Markdown fences and entities).
"""

from __future__ import annotations

import difflib
import json
import re
from datetime import UTC, datetime

from acp_agent.content import ContentBlock, ImageContent, plain_text
from acp_agent.export.view import Turn
from acp_agent.journal.events import StepUsage
from acp_agent.tools.display import DiffView

PREVIEW_CHARS = 80
RASTER = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_SPACE = re.compile(r"\s+")


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    return "\ufffd" if "\ud800" <= char <= "\udfff" else f"\\x{ord(char):02x}"


def visible(text: str) -> str:
    """``text`` with every control character but newline and tab written out as ``\\xNN``
    (a CR LF line end is a newline)."""
    return _CONTROL.sub(_shown, text.replace("\r\n", "\n"))


def one_line(text: str) -> str:
    """``visible`` text on one line (runs of whitespace become one space)."""
    return _SPACE.sub(" ", visible(text)).strip()


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    line = one_line(text)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def blocks_preview(blocks: tuple[ContentBlock, ...]) -> str:
    return preview(plain_text(blocks)) or "(no text)"


def when(ms: int) -> str:
    """A journal time (ms since the epoch) as UTC, to the second."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def clock(ms: int) -> str:
    """The time of day of a journal time, to the millisecond (UTC)."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]


def duration(ms: int) -> str:
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest} s"


def pretty_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def usage_line(turn: Turn) -> str:
    """What a turn cost, as far as the journal says: requests, tool calls, its duration."""
    usage = turn.usage
    parts = [plural(usage.requests, "model request"), plural(usage.tool_calls, "tool call")]
    if usage.failed_calls:
        parts[-1] += f" ({usage.failed_calls} failed)"
    if usage.tokens is not None:
        parts.append(tokens_line(usage.tokens))
        if usage.tokens.cost is not None:
            parts.append(f"${usage.tokens.cost:.4f}")
    if usage.duration_ms is not None:
        parts.append(duration(usage.duration_ms))
    return " · ".join(parts)


def tokens_line(used: StepUsage) -> str:
    line = f"{used.input_tokens:,} in, {used.output_tokens:,} out tokens"
    extra = [f"{used.reasoning_tokens:,} reasoning"] if used.reasoning_tokens else []
    extra += [f"{used.cached_tokens:,} cached"] if used.cached_tokens else []
    return line + (f" ({', '.join(extra)})" if extra else "")


def diff_lines(view: DiffView) -> list[str]:
    """A unified diff of the change ``view`` shows (a new file: every line added)."""
    old = [] if view.old_text is None else view.old_text.splitlines()
    before = "/dev/null" if view.old_text is None else f"a/{view.path}"
    lines = difflib.unified_diff(
        old, view.new_text.splitlines(), before, f"b/{view.path}", lineterm="", n=3
    )
    return list(lines)


def image_src(block: ImageContent) -> str | None:
    """The ``data:`` URI of an image block whose data is base64 of a raster type (``None``:
    anything else, which is named, not shown: nothing from the journal but checked base64
    ever goes into a URL)."""
    mime = block.mimeType.lower()
    if mime in RASTER and block.data and _BASE64.fullmatch(block.data):
        return f"data:{mime};base64,{block.data}"
    return None
