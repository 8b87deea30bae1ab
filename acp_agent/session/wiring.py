"""What a front door gives the session layer to equip each session: the deps builder's parts.

A front door (the ACP server, the Python API) differs from another only in *what* it hands a
session — which tools and client services, which admission, which observer, which models — never
in *how* a session is created, opened, forked, restored or closed: that is ``service.py``'s, for
every door alike. ``Wiring`` names those parts; ``Sessions`` calls them once per session it starts.

``Models`` is what the session layer needs to know of the models on offer: the default spec, the
specs a session may switch to, their providers and whether a key is missing.
``model.registry.ModelCatalog`` is one; ``OneModel`` is a single provider with no choices (the
Python API's ``Agent.open(state_dir, provider)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import msgspec

from acp_agent.journal.events import Entry, SessionHeader, ToolCallPart
from acp_agent.model.base import ModelProvider, Usage
from acp_agent.model.registry import KeyNeeded
from acp_agent.model.window import DEFAULT_CONTEXT_WINDOW
from acp_agent.session.system_prompt import PromptConfig
from acp_agent.turn.admission import Admission
from acp_agent.turn.compaction import CompactionProgress
from acp_agent.turn.ports import Notice, SessionObserver
from acp_agent.turn.toolrun import ToolRunner

Obs = TypeVar("Obs", bound=SessionObserver)


class Models(Protocol):
    @property
    def default(self) -> str | None: ...

    def choices(self) -> list[str]: ...

    def offers_selector(self) -> bool:
        """Whether a client is offered the choice (a script-only catalog is not)."""
        ...

    def provider(self, spec: str | None) -> ModelProvider: ...

    def key_needed(self, spec: str | None) -> KeyNeeded | None: ...


class OneModel:
    """One provider for every session, with nothing to choose from."""

    default = None

    def __init__(self, provider: ModelProvider) -> None:
        self._provider = provider

    def choices(self) -> list[str]:
        return []

    def offers_selector(self) -> bool:
        return False

    def provider(self, spec: str | None) -> ModelProvider:
        return self._provider

    def key_needed(self, spec: str | None) -> KeyNeeded | None:
        return None


class Wiring(msgspec.Struct, Generic[Obs], frozen=True):
    """The parts of each session's ``SessionDeps`` that depend on the front door."""

    models: Models
    tools: Callable[[SessionHeader], ToolRunner]
    admission: Callable[[SessionHeader], Admission]
    observer: Callable[[SessionHeader, ToolRunner], Obs]
    context_window: int = DEFAULT_CONTEXT_WINDOW
    max_steps: int = 64
    prompt: PromptConfig = msgspec.field(default_factory=PromptConfig)
    """The instructions every session starts from (built-in, or the config file's)."""

    def __post_init__(self) -> None:
        if self.max_steps < 1:  # a turn needs a step (the turn table and the invariant)
            raise ValueError(f"max_steps must be at least 1, got {self.max_steps}")


class NullObserver:
    """Observes nothing; the journal (``Session.entries``) is the record."""

    async def appended(self, entry: Entry) -> None:
        pass

    async def text_delta(self, message_id: str, text: str) -> None:
        pass

    async def thought_delta(self, message_id: str, text: str) -> None:
        pass

    async def tool_started(self, call: ToolCallPart) -> None:
        pass

    async def journal_error(self, error: str, unflushed: int) -> None:
        pass

    async def titled(self, title: str) -> None:
        pass

    async def compaction_progress(
        self, compaction_id: str, progress: CompactionProgress, error: str | None
    ) -> None:
        pass

    async def usage(self, usage: Usage, context_window: int) -> None:
        pass

    async def note(self, text: str) -> None:
        pass

    async def notice(self, notice: Notice) -> None:
        pass

    async def command_answer(self, text: str, command: str) -> None:
        pass
