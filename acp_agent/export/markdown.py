"""The transcript as Markdown (CommonMark, with GitHub's ``<details>`` for folded thoughts).

The same content as the HTML page, in the same order. Escaping: every string goes through
``text.visible``; prose (prompts, context, the assistant's text) keeps its Markdown but has
``&``, ``<`` and ``>`` written as entities, so it cannot open raw HTML in a renderer; one-line
fields (titles, names, sources) are escaped character by character; code (tool input and
output, diffs, unknown events) sits in fences longer than any backtick run inside.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from acp_agent import __version__
from acp_agent.content import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)
from acp_agent.export.text import (
    blocks_preview,
    clock,
    diff_lines,
    image_src,
    one_line,
    pretty_json,
    usage_line,
    visible,
    when,
)
from acp_agent.export.view import (
    Compacted,
    Failure,
    Item,
    Message,
    Other,
    Said,
    Thought,
    ToolRun,
    Transcript,
    Turn,
    TurnItem,
)

_SPECIAL = re.compile(r"([\\`*_\[\]|<>~&])")
_TICKS = re.compile(r"`+")


def _inline(text: str) -> str:
    """One-line text with every Markdown-significant character escaped."""
    return _SPECIAL.sub(r"\\\1", one_line(text))


def _prose(text: str) -> str:
    return visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _fence(text: str, info: str = "") -> str:
    longest = max((len(run) for run in _TICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = visible(text)
    return f"{fence}{info}\n{body}{'' if body.endswith(chr(10)) else chr(10)}{fence}"


def render_markdown(transcript: Transcript) -> str:
    title = transcript.title or f"Session {transcript.session_id}"
    sections = [
        f"# {_inline(title)}",
        _header(transcript),
        "## Timeline",
        "\n".join(_timeline_row(i, item) for i, item in enumerate(transcript.items, 1))
        or "(nothing yet)",
        *(_item(item) for item in transcript.items),
        f"---\n\n_Exported by acp-agent {_inline(__version__)} from the journal of session "
        f"{_inline(transcript.session_id)}._",
    ]
    return "\n\n".join(sections) + "\n"


def _header(transcript: Transcript) -> str:
    rows = [
        ("Session", transcript.session_id),
        ("Working directory", transcript.cwd),
        ("Created", when(transcript.created)),
        ("Turns", str(len(transcript.turns))),
        ("Events", str(transcript.events)),
    ]
    if transcript.parent is not None:
        rows.append(("Forked from", f"{transcript.parent[0]} at seq {transcript.parent[1]}"))
    return "\n".join(f"- **{key}:** {_inline(value)}" for key, value in rows)


def _timeline_row(index: int, item: Item) -> str:
    match item:
        case Turn():
            return f"{index}. [Turn {item.number}](#turn-{item.number}) — {_inline(item.reason)}, {_inline(usage_line(item))}"
        case Message():
            return f"{index}. Context from `{_code(item.kind)}` (seq {item.seq}) — {_inline(blocks_preview(item.content))}"
        case Compacted():
            return f"{index}. Compaction through seq {item.through_seq}"
        case Other():
            return f"{index}. {_inline(item.type)} (seq {item.seq})"


def _code(text: str) -> str:
    """Text for inside a one-backtick code span."""
    return one_line(text).replace("`", "'")


def _item(item: Item) -> str:
    match item:
        case Turn():
            return _turn(item)
        case Message():
            return _message(item)
        case Compacted():
            return (
                f"> **History compacted** ({_inline(item.reason)}) through seq "
                f"{item.through_seq}\n\n<details><summary>Summary</summary>\n\n"
                f"{_blocks(item.summary)}\n\n</details>"
            )
        case Other():
            return _other(item)


def _turn(turn: Turn) -> str:
    reason = turn.reason + (f": {turn.reason_message}" if turn.reason_message else "")
    parts = [
        f"## Turn {turn.number}",
        f"_{_inline(reason)} · {_inline(when(turn.started))} · {_inline(usage_line(turn))}_",
    ]
    if turn.prompt is not None:
        parts.append(f"**Prompt**\n\n{_blocks(turn.prompt.content)}")
    parts += [_turn_item(item) for item in turn.items]
    return "\n\n".join(parts)


def _turn_item(item: TurnItem) -> str:
    match item:
        case Message():
            return _message(item)
        case Said(text=text):
            return f"**Assistant**\n\n{_prose(text)}"
        case Thought(text=text):
            return f"<details><summary>Thought</summary>\n\n{_prose(text)}\n\n</details>"
        case ToolRun():
            return _tool(item)
        case Failure(message=message):
            return f"> **Error:** {_inline(message)}"
        case Other():
            return _other(item)


def _message(message: Message) -> str:
    what = "Steering" if message.steering else "Context"
    extra = ", ".join(f"{k}={v}" for k, v in message.source.items() if k != "kind")
    source = f"`{_code(message.kind)}`" + (f" ({_inline(extra)})" if extra else "")
    body = _blocks(message.content)
    quoted = "\n".join(f"> {line}" if line else ">" for line in body.split("\n"))
    return f"> **{what}** · source {source} · {clock(message.time)}\n>\n{quoted}"


def _tool(run: ToolRun) -> str:
    status = "no result" if run.result is None else ("failed" if run.is_error else "completed")
    parts = [
        f"**Tool** `{_code(run.name)}` (`{_code(run.call_id)}`) — {status}",
        f"Input:\n\n{_fence(pretty_json(run.arguments), 'json')}",
    ]
    parts += [f"Diff:\n\n{_fence(chr(10).join(diff_lines(d)), 'diff')}" for d in run.diffs]
    if run.result is not None:
        parts.append(f"Result:\n\n{_blocks(run.result, code=True)}")
    return "\n\n".join(parts)


def _other(item: Other) -> str:
    return f"**{_inline(item.type)}** (seq {item.seq})\n\n{_fence(item.data, 'json')}"


def _blocks(blocks: Iterable[ContentBlock], *, code: bool = False) -> str:
    return "\n\n".join(_block(block, code=code) for block in blocks) or "_(empty)_"


def _block(block: ContentBlock, *, code: bool) -> str:
    match block:
        case TextContent(text=text):
            return _fence(text, "text") if code else _prose(text)
        case ImageContent(mimeType=mime, uri=uri):
            src = image_src(block)
            if src is not None:
                return f"![image {_inline(mime)}]({src})"
            return f"_\\[image {_inline(mime)}{' ' + _inline(uri) if uri else ''}, not shown\\]_"
        case AudioContent(mimeType=mime):
            return f"_\\[audio {_inline(mime)}\\]_"
        case ResourceLink(uri=uri, name=name):
            return f"_\\[link {_inline(name)}: {_inline(uri)}\\]_"
        case EmbeddedResource(resource=resource):
            if resource.text is None:
                return f"_\\[binary resource {_inline(resource.uri)}\\]_"
            return f"{_inline(resource.uri)}:\n\n{_fence(resource.text)}"
