"""Cross-session references by plain composition (docs/design.md, "Extension points").

The host snapshots another session's committed history, injects it into the target session
with a ``session-ref`` source, then sends (or steers) a readable direct prompt. The target
journal holds two simple messages: later changes to the referenced session never change the
target's replay, and no prompt envelope is needed to tell them apart.

The snapshot is read from the referenced session's journal on disk (read-only; its writer may
be live) and stops at a stable boundary: the end of the last closed turn, plus any committed
out-of-turn messages after it — never inside an open turn. It is plain text: a trust boundary,
the target sees the other session's words as quoted context, not as its own history.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from acp_agent.content import ContentBlock, TextContent, plain_text
from acp_agent.journal.events import (
    AssistantMessage,
    Entry,
    SourceKind,
    SteeringMessage,
    TextPart,
    ToolCall,
    ToolResult,
    UserMessage,
    source,
    source_kind,
)
from acp_agent.journal.paths import journal_path, session_dir, validate_session_id
from acp_agent.journal.reader import parse_journal
from acp_agent.journal.store import journal_store
from acp_agent.journal.turns import last_stable_boundary


@dataclass(frozen=True)
class Snapshot:
    session_id: str
    seq: int
    content: list[ContentBlock]

    @property
    def source(self) -> dict[str, object]:
        return source(SourceKind.SESSION_REF, sessionId=self.session_id, seq=self.seq)


def stable_prefix(entries: list[Entry]) -> list[Entry]:
    """Entries up to the last stable boundary (an open turn is cut off); see ``journal/turns``."""
    return entries[: last_stable_boundary(entries)]


def _line(entry: Entry) -> str | None:
    match entry.event:
        case (
            UserMessage(content=content, source=src) | SteeringMessage(content=content, source=src)
        ):
            who = "user" if source_kind(src) == SourceKind.USER else f"context:{source_kind(src)}"
            return f"[{who}] {plain_text(content)}"
        case AssistantMessage(content=parts):
            text = "".join(p.text for p in parts if isinstance(p, TextPart))
            return f"[assistant] {text}" if text else None
        case ToolCall(name=name, arguments=arguments):
            return f"[tool call] {name} {arguments}"
        case ToolResult(content=content, is_error=is_error):
            return f"[tool {'error' if is_error else 'result'}] {plain_text(content)}"
        case _:
            return None


def snapshot(state_dir: Path, session_id: str) -> Snapshot:
    validate_session_id(session_id)
    path = journal_path(session_dir(state_dir, session_id))
    loaded = parse_journal(journal_store(state_dir).read(session_id), path=path)
    entries = stable_prefix(loaded.entries)
    seq = entries[-1].seq if entries else 0
    body = "\n".join(line for line in map(_line, entries) if line)
    header = f"Snapshot of session {session_id} (history up to seq {seq}):"
    return Snapshot(session_id, seq, [TextContent(text=f"{header}\n{body}")])
