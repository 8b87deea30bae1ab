"""What a prompt that is a slash command does, for every door alike (``words.py`` knows the words).

``run`` is asked first for every prompt a session is sent (``Session.send``); ``None`` means "an
ordinary prompt". Otherwise it answers with either

- an ``Answer`` at once, with no turn, no model request and nothing journaled: ``/status``,
  ``/tasks``, ``/export`` (naming the file it wrote, ``export.py``), ``/model``, ``/mode``,
  ``/permissions`` (``permissions.py``; a misuse is ``CommandRefused``) (and ``/review``
  with nothing to review). The session hands its text to its observer (``command_answer``:
  over ACP, an agent message marked ``_meta.acp_agent.command``, sent before the prompt's
  response). It is answered even while a
  turn runs (it waits for nothing; the running turn's answer comes later). ``/model NAME`` and
  ``/mode NAME`` do what the session's settings do, and the door announces the change
  (``Sessions.on_settings_changed``: over ACP ``config_option_update``, and for the mode
  ``current_mode_update``). An unknown name is ``CommandRefused`` whose message lists the names
  there are (over ACP -32602, ``data.path = "$.prompt"``); no name lists them as the answer.
- what the session answers a queued prompt with (``P``): a normal turn, or a compaction.
  ``/compact`` queues a compaction. ``/init`` sends ``INIT_INSTRUCTION`` as the prompt (the
  edits it makes ask as the mode says). ``/review`` reads the working tree's changes
  (``review.py``), injects them, then sends ``REVIEW_INSTRUCTION`` in a turn whose tools are
  decided as in read-only mode. ``/<skill> REST`` injects the skill's body, source ``{"kind":
  "skill", "name"}``, then sends the prompt ``REST``. ``/undo`` (``undo.py``) waits for the
  session to be idle and for the client's answer, so the session answers it later, like a
  queued prompt, with the answer as an agent message.

Context goes in through ``inject`` and the prompt through ``submit``, as for every producer (the
design note: a prompt carries no context): idle, the context is an out-of-turn ``user/message``
just before the turn's ``turn/start``; with a turn running, it is staged into that turn (its
model sees it at the next step) and the prompt queues behind it. Either way it reaches the model
before the prompt. A prompt hook that blocks the prompt leaves the injected context in history,
as the design note says of inject-then-send.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

import anyio
import msgspec

from acp_agent.commands.export import ExportRefused, ExportSource, export_session
from acp_agent.commands.permissions import PermissionsMisuse, permissions_command
from acp_agent.commands.skills import Skill
from acp_agent.commands.status import SessionStatus, status_text, tasks_text
from acp_agent.commands.words import (
    INIT_INSTRUCTION,
    REVIEW_INSTRUCTION,
    Command,
    Invocation,
    parse_invocation,
    skill_prompt,
    with_notes,
)
from acp_agent.content import ContentBlock
from acp_agent.journal.events import Source, SourceKind, source
from acp_agent.permissions.book import SessionRules
from acp_agent.tools.permissions import MODES, Mode, UnknownMode, require_mode

P = TypeVar("P")
P_co = TypeVar("P_co", covariant=True)


class CommandRefused(Exception):
    """A command the session cannot do as typed; the message says why, and what there is."""


class Answer(msgspec.Struct, frozen=True):
    """A command answered by the agent itself: no turn, nothing journaled."""

    command: str
    text: str


class CommandSession(ExportSource, Protocol[P_co]):
    """What a command may do with a session (``session.service.Session`` is one); what
    ``/export`` reads of it is ``ExportSource``'s."""

    @property
    def cwd(self) -> str: ...

    def status(self) -> SessionStatus: ...

    @property
    def rules(self) -> SessionRules:
        """The permission rules in force (``/permissions``)."""
        ...

    def skill(self, name: str) -> Skill | None: ...

    def model_choices(self) -> list[str]: ...

    async def inject(self, content: str | Sequence[ContentBlock], src: Source) -> object: ...

    async def submit(self, prompt: list[ContentBlock], *, read_only: bool = False) -> P_co: ...

    async def compact(self, instructions: str = "") -> P_co: ...

    async def undo(self) -> P_co:
        """``/undo`` (``undo.py``), answered once the session is idle and the client answered."""
        ...

    async def switch_mode(self, mode: Mode) -> None:
        """Set the mode and announce it as a change the client did not ask for."""
        ...

    async def switch_model(self, spec: str) -> None:
        """Set the model and announce it; ``LookupError`` for a model not on offer."""
        ...


async def run(session: CommandSession[P], content: list[ContentBlock]) -> Answer | P | None:
    """What the prompt ``content`` does if it is a command (None: it is no command here)."""
    invocation = parse_invocation(content)
    if invocation is None:
        return None
    match invocation.name:
        case Command.STATUS:
            return Answer(Command.STATUS, status_text(session.status()))
        case Command.TASKS:
            return Answer(Command.TASKS, tasks_text(session.status()))
        case Command.EXPORT:
            return await _export(session, invocation.rest)
        case Command.MODEL:
            return await _model(session, invocation.rest)
        case Command.MODE:
            return await _mode(session, invocation.rest)
        case Command.PERMISSIONS:
            return _permissions(session, invocation.rest)
        case Command.COMPACT:
            return await session.compact(invocation.rest)
        case Command.INIT:
            return await session.submit(with_notes(INIT_INSTRUCTION, invocation.rest))
        case Command.REVIEW:
            return await _review(session, invocation)
        case Command.UNDO:
            return await session.undo()
    skill = session.skill(invocation.name)
    if skill is None:
        return None
    await session.inject(skill.body, source(SourceKind.SKILL, name=skill.name))
    return await session.submit(skill_prompt(skill, invocation.rest))


async def _export(session: CommandSession[P], rest: str) -> Answer:
    try:
        return Answer(Command.EXPORT, await export_session(session, rest))
    except ExportRefused as exc:
        raise CommandRefused(str(exc)) from exc


async def _model(session: CommandSession[P], name: str) -> Answer:
    choices = session.model_choices()
    if not choices:
        raise CommandRefused("this server offers no model to switch to")
    if not name:
        listed = "\n".join(f"- {spec}" for spec in choices)
        return Answer(Command.MODEL, f"Models:\n{listed}")
    try:
        await session.switch_model(name)
    except LookupError as exc:
        raise CommandRefused(str(exc)) from exc
    return Answer(Command.MODEL, f"Model: {name} (from the next request)")


async def _mode(session: CommandSession[P], name: str) -> Answer:
    if not name:
        listed = "\n".join(f"- {m.id}: {m.description}" for m in MODES)
        return Answer(Command.MODE, f"Modes:\n{listed}")
    try:
        mode = require_mode(name)
    except UnknownMode as exc:
        raise CommandRefused(str(exc)) from exc
    await session.switch_mode(mode)
    return Answer(Command.MODE, f"Mode: {mode}")


def _permissions(session: CommandSession[P], rest: str) -> Answer:
    try:
        return Answer(Command.PERMISSIONS, permissions_command(session.rules, rest))
    except PermissionsMisuse as exc:
        raise CommandRefused(str(exc)) from exc


async def _review(session: CommandSession[P], invocation: Invocation) -> Answer | P:
    # Here, not at the top: only a /review runs it (and git, which costs far more), and a
    # process's first session/new is answered without it (tests/integration/test_startup.py).
    from acp_agent.commands.review import REVIEW_SOURCE, NothingToReview, working_tree_changes

    try:
        changes = await anyio.to_thread.run_sync(working_tree_changes, session.cwd)
    except NothingToReview as exc:
        return Answer(Command.REVIEW, str(exc))
    await session.inject(changes.context(), REVIEW_SOURCE)
    return await session.submit(with_notes(REVIEW_INSTRUCTION, invocation.rest), read_only=True)
