"""Slash commands over ACP: what a ``session/prompt`` that is a command does (``session/commands.py``).

``SlashCommands.run`` is asked first for every prompt; ``None`` means "an ordinary prompt"
(``/compact`` too: the actor serves it). Otherwise it answers with either

- a ``PromptResult`` at once, with no turn, no model request and nothing journaled:
  ``/status``, ``/model``, ``/mode``. Their answer is an agent message marked
  ``_meta.acp_agent.command`` (``AcpObserver.command_answer``), sent before the prompt's
  response. ``/status`` is not journaled on purpose: it is a snapshot of live state (all of it
  derivable, or process-local like token counts), history holds only what the model saw or
  did, and a status kept there would go to the model with every later request. It is answered
  even while a turn runs (it waits for nothing; the running turn's answer comes later).
  ``/model NAME`` and ``/mode NAME`` do what ``session/set_config_option`` does, and tell the
  client as a change it did not ask for: ``config_option_update`` (``/mode``: also
  ``current_mode_update``). An unknown name is -32602 (``data.path = "$.prompt"``) whose
  message lists the names there are; no name lists them as the answer.
- a ``PendingPrompt``: a normal, queued turn. ``/init`` sends ``INIT_INSTRUCTION`` as the
  prompt (the edits it makes ask as the mode says). ``/review`` reads the working tree's
  changes (``review.py``), injects them, then sends ``REVIEW_INSTRUCTION`` in a turn whose
  tools are decided as in read-only mode; with nothing to review, it answers at once saying so
  and asks no model. ``/<skill> REST`` injects the skill's body, source ``{"kind": "skill",
  "name"}``, then sends the prompt ``REST``.

Context goes in through ``inject`` and the prompt through ``send``, as for every producer
(the design note: ``send`` carries no context): idle, the context is an out-of-turn
``user/message`` just before the turn's ``turn/start``; with a turn running, it is staged
into that turn (its model sees it at the next step) and the prompt queues behind it. Either
way it reaches the model before the prompt. A prompt hook that blocks the prompt leaves the
injected context in history, as the design note says of inject-then-send.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from acp_agent.acp.mode_option import choose_mode
from acp_agent.acp.model_option import MODEL_OPTION, ModelOption
from acp_agent.acp.observer import AcpObserver
from acp_agent.acp.schema import PromptResult, SessionConfigSelect
from acp_agent.commands.commands import (
    INIT_INSTRUCTION,
    REVIEW_INSTRUCTION,
    Command,
    Invocation,
    parse_invocation,
    skill_prompt,
    with_notes,
)
from acp_agent.content import ContentBlock
from acp_agent.errors import InvalidParams
from acp_agent.journal.events import SourceKind, source
from acp_agent.session.errors import UnknownModel
from acp_agent.session.service import PendingPrompt, Session
from acp_agent.tools.permissions import MODES

AcpSession = Session[AcpObserver]
ConfigOptions = Callable[[AcpSession], list[SessionConfigSelect]]
PROMPT_PATH = {"path": "$.prompt"}


class SlashCommands:
    def __init__(self, models: ModelOption, config_options: ConfigOptions) -> None:
        self.models = models
        self.config_options = config_options

    async def run(
        self, session: AcpSession, content: list[ContentBlock]
    ) -> PromptResult | PendingPrompt | None:
        """What the prompt ``content`` does if it is a command (None: it is no command here)."""
        invocation = parse_invocation(content)
        if invocation is None:
            return None
        match invocation.name:
            case Command.STATUS:
                return await self._answer(session, Command.STATUS, status_text(session))
            case Command.MODEL:
                return await self._model(session, invocation.rest)
            case Command.MODE:
                return await self._mode(session, invocation.rest)
            case Command.INIT:
                return await session.send(with_notes(INIT_INSTRUCTION, invocation.rest))
            case Command.REVIEW:
                return await self._review(session, invocation)
        skill = session.skill(invocation.name)
        if skill is None:
            return None
        await session.inject(skill.body, source(SourceKind.SKILL, name=skill.name))
        return await session.send(skill_prompt(skill, invocation.rest))

    async def _answer(self, session: AcpSession, command: str, text: str) -> PromptResult:
        await session.observer.command_answer(text, command)
        return PromptResult(stop_reason="end_turn")

    async def _model(self, session: AcpSession, name: str) -> PromptResult:
        choices = self.models.catalog.choices() if self.models.catalog.offers_selector() else []
        if not choices:
            raise InvalidParams("this server offers no model to switch to", PROMPT_PATH)
        if not name:
            listed = "\n".join(f"- {spec}" for spec in choices)
            return await self._answer(session, Command.MODEL, f"Models:\n{listed}")
        self.models.check_option(MODEL_OPTION)
        try:
            await session.set_model(name)
        except UnknownModel as exc:
            raise InvalidParams(str(exc), PROMPT_PATH) from exc
        await session.observer.config_changed(self.config_options(session))
        return await self._answer(session, Command.MODEL, f"Model: {name} (from the next request)")

    async def _mode(self, session: AcpSession, name: str) -> PromptResult:
        if not name:
            listed = "\n".join(f"- {m.id}: {m.description}" for m in MODES)
            return await self._answer(session, Command.MODE, f"Modes:\n{listed}")
        mode = choose_mode(name, PROMPT_PATH["path"])
        await session.set_mode(mode)
        await session.observer.mode_changed(str(mode), self.config_options(session))
        return await self._answer(session, Command.MODE, f"Mode: {mode}")

    async def _review(
        self, session: AcpSession, invocation: Invocation
    ) -> PromptResult | PendingPrompt:
        # Here, not at the top: only a /review runs it (and git, which costs far more), and a
        # process's first session/new is answered without it (tests/integration/test_startup.py).
        from acp_agent.commands.review import REVIEW_SOURCE, NothingToReview, working_tree_changes

        try:
            changes = await anyio.to_thread.run_sync(working_tree_changes, session.header.cwd)
        except NothingToReview as exc:
            return await self._answer(session, Command.REVIEW, str(exc))
        await session.inject(changes.context(), REVIEW_SOURCE)
        return await session.send_read_only(with_notes(REVIEW_INSTRUCTION, invocation.rest))


def status_text(session: AcpSession) -> str:
    """``/status``: the session as it stands, from live state only."""
    window, used = session.context_window, session.context_used
    context = (
        f"{used} of {window} tokens ({used * 100 // max(window, 1)}%) at the last request"
        if used is not None
        else f"no request reported usage yet (window {window} tokens)"
    )
    total, cost = session.usage_total, session.observer.cost
    tokens = (
        f"{total.input_tokens} in, {total.output_tokens} out"
        + (f", {total.reasoning_tokens} reasoning" if total.reasoning_tokens else "")
        + (f", {total.cached_tokens} cached" if total.cached_tokens else "")
        if total is not None
        else "none reported"
    )
    level = (session.thought_level or "default") if session.thinks else "not offered here"
    lines = [
        f"Session: {session.id}",
        f"Journal: {session.journal_path}",
        f"Working directory: {session.header.cwd}",
        f"Model: {session.model or 'the default'}",
        f"Mode: {session.mode}",
        f"Thinking level: {level}",
        f"Context: {context}",
        f"Tokens since this process opened the session: {tokens}",
        f"Cost: {f'${cost:.4f}' if cost else 'none reported'}",
        f"Turns: {session.turns}",
        f"Skills: {', '.join('/' + s.name for s in session.skills) or 'none'}",
    ]
    return "\n".join(lines)
