"""The transcript as one self-contained HTML page.

Self-contained: the style sheet is inline and allowed by its hash in a Content-Security-Policy
``<meta>`` (``style.py``) that allows nothing else but ``data:`` images, so the page opens with
no network request and runs no script, whatever the journal holds. Every string from the journal
goes through ``_esc`` (``text.visible``, then ``html.escape`` with quotes) and nothing from it is
ever put into a URL but an image's base64 data, which is checked first; an image that is not
base64 of a known raster type is named, not shown.

Layout: the session's header, a timeline (every turn and every out-of-turn message, linked to
its block), then the blocks in journal order. Thoughts are folded (``<details>``); tool calls
show their input, diff and result.
"""

from __future__ import annotations

import html
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
from acp_agent.export.style import CSP, CSS
from acp_agent.export.text import (
    blocks_preview,
    clock,
    diff_lines,
    image_src,
    one_line,
    plural,
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


def _esc(text: str) -> str:
    return html.escape(visible(text), quote=True)


def _line(text: str) -> str:
    return html.escape(one_line(text), quote=True)


def render_html(transcript: Transcript) -> str:
    title = transcript.title or f"Session {transcript.session_id}"
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_line(title)} · acp-agent</title>",
        f"<style>{CSS}</style></head>",
        '<body><div class="page">',
        _header(transcript, title),
        _timeline(transcript.items),
        '<main id="transcript">',
        *(_item(item) for item in transcript.items),
        "</main>",
        f'<footer class="page-end">Exported by acp-agent {_esc(__version__)} from the journal '
        f"of session {_line(transcript.session_id)}.</footer>",
        "</div></body></html>\n",
    ]
    return "\n".join(parts)


# -- header and timeline --------------------------------------------------------------------


def _header(transcript: Transcript, title: str) -> str:
    turns = transcript.turns
    rows = [
        ("Session", transcript.session_id),
        ("Working directory", transcript.cwd),
        ("Created", when(transcript.created)),
        ("Turns", str(len(turns))),
        ("Events", str(transcript.events)),
    ]
    if transcript.parent is not None:
        rows.append(("Forked from", f"{transcript.parent[0]} at seq {transcript.parent[1]}"))
    meta = "".join(f"<div><dt>{_esc(k)}</dt><dd>{_line(v)}</dd></div>" for k, v in rows)
    return f'<header class="session"><h1>{_line(title)}</h1><dl class="meta">{meta}</dl></header>'


def _timeline(items: Iterable[Item]) -> str:
    rows = [_timeline_row(item) for item in items]
    return f'<nav class="timeline"><h2>Timeline</h2><ol>{"".join(rows)}</ol></nav>'


def _timeline_row(item: Item) -> str:
    match item:
        case Turn():
            link, css = f"Turn {item.number}", "t-turn"
            sub = f"{item.reason} · {usage_line(item)}"
        case Message():
            link, css = "Context", "t-message"
            sub = f"{item.kind} · {blocks_preview(item.content)}"
        case Compacted():
            link, css, sub = "Compaction", "t-compaction", f"through seq {item.through_seq}"
        case Other():
            link, css, sub = item.type, "t-other", f"seq {item.seq}"
    anchor = _anchor(item)
    return (
        f'<li class="{css}"><a href="#{anchor}">{_line(link)}</a>'
        f'<span class="sub">{_line(sub)}</span></li>'
    )


def _anchor(item: Item) -> str:
    return f"turn-{item.number}" if isinstance(item, Turn) else f"seq-{item.seq}"


# -- blocks ---------------------------------------------------------------------------------


def _item(item: Item) -> str:
    match item:
        case Turn():
            return _turn(item)
        case Message():
            return _message(item, anchor=True)
        case Compacted():
            return _compaction(item)
        case Other():
            return _other(item)


def _turn(turn: Turn) -> str:
    reason = turn.reason + (f": {turn.reason_message}" if turn.reason_message else "")
    head = (
        f"<header><h2>Turn {turn.number}</h2>"
        f'<span class="reason {_esc(turn.reason)}">{_line(reason)}</span>'
        f'<span class="when">{_esc(when(turn.started))}</span>'
        f'<span class="usage">{_esc(usage_line(turn))}</span></header>'
    )
    prompt = ""
    if turn.prompt is not None:
        prompt = f'<div class="prompt"><div class="label">Prompt</div>{_blocks(turn.prompt.content)}</div>'
    body = "".join(_turn_item(item) for item in turn.items)
    return f'<article class="turn" id="turn-{turn.number}">{head}{prompt}{body}</article>'


def _turn_item(item: TurnItem) -> str:
    match item:
        case Message():
            return _message(item, anchor=False)
        case Said(text=text):
            return f'<div class="said"><p class="text">{_esc(text)}</p></div>'
        case Thought(text=text):
            return (
                '<details class="thought"><summary>Thought</summary>'
                f'<p class="text">{_esc(text)}</p></details>'
            )
        case ToolRun():
            return _tool(item)
        case Failure(message=message):
            return f'<div class="failure"><strong>Error:</strong> {_esc(message)}</div>'
        case Other():
            return _other(item)


def _message(message: Message, *, anchor: bool) -> str:
    what = "Steering" if message.steering else "Context"
    ident = f' id="seq-{message.seq}"' if anchor else ""
    label = (
        f'<div class="label">{what} · source <span class="source">{_line(message.kind)}</span>'
        f'{_source_details(message)} · <span class="when">{_esc(clock(message.time))}</span></div>'
    )
    return f'<section class="message"{ident}>{label}{_blocks(message.content)}</section>'


def _source_details(message: Message) -> str:
    extra = {k: v for k, v in message.source.items() if k != "kind"}
    if not extra:
        return ""
    shown = ", ".join(f"{k}={one_line(str(v))}" for k, v in extra.items())
    return f' <span class="source">{html.escape(shown, quote=True)}</span>'


def _tool(run: ToolRun) -> str:
    status = "no result" if run.result is None else ("failed" if run.is_error else "completed")
    css = "ok" if status == "completed" else "failed"
    head = (
        f'<header><span class="name">{_line(run.name)}</span>'
        f'<code class="source">{_line(run.call_id)}</code>'
        f'<span class="when">{_esc(clock(run.time))}</span>'
        f'<span class="status">{status}</span></header>'
    )
    arguments = _esc(pretty_json(run.arguments))
    parts = [f'<div class="part"><div class="label">Input</div><pre>{arguments}</pre></div>']
    parts += [_diff(lines) for lines in map(diff_lines, run.diffs)]
    if run.result is not None:
        lines = sum(_text_lines(b) for b in run.result)
        parts.append(
            f'<div class="part"><details{" open" if lines <= 40 else ""}><summary>Result · '
            f"{plural(lines, 'line')}</summary>{_blocks(run.result, pre=True)}</details></div>"
        )
    return f'<section class="tool {css}">{head}{"".join(parts)}</section>'


def _text_lines(block: ContentBlock) -> int:
    return max(len(block.text.splitlines()), 1) if isinstance(block, TextContent) else 1


def _diff(lines: list[str]) -> str:
    rows = "".join(
        f'<span class="{_diff_class(line)}">{_esc(line) or " "}</span>' for line in lines
    )
    return f'<div class="part"><div class="label">Diff</div><pre class="diff">{rows}</pre></div>'


def _diff_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    return {"+": "add", "-": "del"}.get(line[:1], "ctx")


def _compaction(item: Compacted) -> str:
    return (
        f'<section class="compaction" id="seq-{item.seq}"><div class="label">History compacted '
        f"({_esc(item.reason)}) through seq {item.through_seq}</div>"
        f"<details><summary>Summary</summary>{_blocks(item.summary)}</details></section>"
    )


def _other(item: Other) -> str:
    return (
        f'<section class="compaction" id="seq-{item.seq}"><div class="label">{_line(item.type)}'
        f" (seq {item.seq})</div><pre>{_esc(item.data)}</pre></section>"
    )


def _blocks(blocks: Iterable[ContentBlock], *, pre: bool = False) -> str:
    return "".join(_block(block, pre=pre) for block in blocks)


def _block(block: ContentBlock, *, pre: bool) -> str:
    match block:
        case TextContent(text=text):
            return f"<pre>{_esc(text)}</pre>" if pre else f'<p class="text">{_esc(text)}</p>'
        case ImageContent():
            return _image(block)
        case AudioContent(mimeType=mime):
            return f'<p class="note">[audio {_line(mime)}, not played here]</p>'
        case ResourceLink(uri=uri, name=name):
            return f'<p class="note">[link {_line(name)}: {_line(uri)}]</p>'
        case EmbeddedResource(resource=resource):
            label = f'<div class="label">{_line(resource.uri)}</div>'
            if resource.text is None:
                return f'{label}<p class="note">[binary resource]</p>'
            return f"{label}<pre>{_esc(resource.text)}</pre>"


def _image(block: ImageContent) -> str:
    src = image_src(block)
    if src is not None:
        alt = f"image ({block.mimeType})" + (f" {one_line(block.uri)}" if block.uri else "")
        return f'<img class="image" alt="{html.escape(alt, quote=True)}" src="{src}">'
    where = f" {block.uri}" if block.uri else ""
    return f'<p class="note">[image {_line(block.mimeType + where)}, not shown]</p>'
