"""``ask_user {question, options?}``: the model asks the user a structured question.

Offered only when the client renders elicitation forms (``elicitation.form``: ``registry.py``).
The question goes out as ACP ``elicitation/create`` in form mode, tied to the session and to this
tool call (``toolCallId``), with a one-field form: ``answer``, a single choice among ``options``
when the model gave some (a titled ``oneOf``), else free text. The client's answer is the tool
result: the text the user gave or chose; a decline or a cancel says so (not an error: the
model goes on without the answer). A turn cancelled while the user thinks stops waiting, and
the connection tells the client with ``$/cancel_request``.
"""

from __future__ import annotations

import msgspec

from acp_agent.content import TextContent
from acp_agent.errors import PeerError, WireClosed
from acp_agent.tools.args import parse, string
from acp_agent.tools.base import Location, ToolContext, ToolError, ToolKind, ToolOutput

NAME = "ask_user"
ANSWER = "answer"
MAX_OPTIONS = 20


class AskArgs(msgspec.Struct, frozen=True):
    question: str
    options: list[str] | None = None


class AskUser:
    name = NAME
    description = (
        "Ask the user a question and wait for the answer, when you cannot go on without their "
        "decision (a choice between approaches, a missing requirement). Give `options` for a "
        "choice among a few answers; leave them out for a free-text answer. Ask one question "
        "at a time, and only what you cannot find out yourself."
    )
    kind = ToolKind.OTHER
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "the question, in plain words"},
            "options": {
                "type": "array",
                "items": {"type": "string"},
                "description": "the answers to choose from (leave out for free text)",
            },
        },
        "required": ["question"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        question = string(arguments, "question")
        return f"Ask: {question}" if question else "Ask the user"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = checked(parse(arguments, AskArgs, NAME))
        if ctx.elicitation is None:
            raise ToolError(f"{NAME}: this client cannot ask the user (no elicitation forms)")
        call_id = ctx.call.id if ctx.call is not None else None
        try:
            answer = await ctx.elicitation.ask(call_id, args.question, form(args.options))
        except (PeerError, WireClosed) as exc:
            raise ToolError(f"{NAME}: the client could not ask the user: {exc}") from exc
        return ToolOutput([TextContent(text=outcome(answer.action, answer.content))])


def checked(args: AskArgs) -> AskArgs:
    if not args.question.strip():
        raise ToolError(f"{NAME}: the question is empty")
    options = args.options or []
    if len(options) > MAX_OPTIONS or any(not o.strip() for o in options):
        raise ToolError(f"{NAME}: options must be 1 to {MAX_OPTIONS} non-empty strings")
    if len(set(options)) != len(options):
        raise ToolError(f"{NAME}: options must differ from each other")
    return args


def form(options: list[str] | None) -> dict[str, object]:
    """The ``requestedSchema``: one required string, a titled single choice when there are
    options (ACP ``StringPropertySchema`` with ``oneOf``)."""
    field: dict[str, object] = {"type": "string", "title": "Answer"}
    if options:
        field["oneOf"] = [{"const": option, "title": option} for option in options]
    return {"type": "object", "properties": {ANSWER: field}, "required": [ANSWER]}


def outcome(action: str, content: dict[str, object] | None) -> str:
    match action:
        case "accept":
            value = (content or {}).get(ANSWER)
            if value is None:
                return "The user accepted but gave no answer."
            shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            return f"The user answered: {shown}"
        case "decline":
            return "The user declined to answer. Go on without it, or ask differently."
        case "cancel":
            return "The user dismissed the question without answering."
        case _:
            raise ToolError(f"{NAME}: the client answered an unknown action {action!r}")
