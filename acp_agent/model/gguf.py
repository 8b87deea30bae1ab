"""``gguf:/abs/path/model.gguf``: a GGUF model run by llama.cpp inside the agent's process.

Theory of operation
-------------------
The optional extra ``acp-agent-server[local]`` installs xllamacpp, which packages llama.cpp together
with llama.cpp's own server. ``xllamacpp.Server(params)`` loads the model and starts that
server's HTTP listener on threads of this process, here bound to ``127.0.0.1`` on a port the OS
picks (``params.port = 0``; ``Server.listening_address`` says which). ``GgufModel`` then is an
``OpenAICompatible`` provider pointed at ``<listening_address>/v1``: the same wire code (httpx,
SSE parsing, the chunk reader, cancellation by closing the stream) that talks to OpenAI talks to
llama.cpp, so a ``gguf:`` session exercises all of it. xllamacpp also offers an in-process
``Server.handle_chat_completions(body, callback)``, but it blocks its caller and calls back once
per chunk; using it would bypass everything between the provider and the socket and would need a
second, callback-polled cancellation path. llama.cpp stops a generation when its client closes
the connection, which is exactly what the provider does when a turn is cancelled.

Access: a port on 127.0.0.1 is open to every local user, so the server gets a random API key
(``params.api_keys``) that only the provider's ``Authorization`` header carries.

When: the server starts at the first request, not when the provider is made. The catalog makes
providers when sessions are created or loaded; loading a model takes seconds and its size in RAM, and a
process that only lists or loads sessions should pay neither. The load holds the GIL (xllamacpp
builds the server without releasing it; measured: the event loop does not run meanwhile), so it
runs in a worker thread only to stay correct should that change: either way the first prompt of
a process waits for the load. A load that fails is not remembered: the next request tries again
(after the user fixed the file, say). ``aclose()`` drops the server, whose destructor stops
llama.cpp's loop and joins its threads; the next request would start a new one.

Defaults, chosen for a small model on a laptop CPU: a 4096-token window (``n_ctx``, docs/contract.md §8),
2 CPU threads, one slot (requests queue; on a CPU a second slot only halves each one's speed),
at most 1024 generated tokens per request (``n_predict``: a hard cap on the server side, so a
small model that loops cannot run until the window is full), no warm-up decode (it would hold
the GIL during the load; the first request pays it instead), llama.cpp logging errors only (to
stderr), a fixed sampling seed instead of llama.cpp's random one, so a run can be repeated (as
far as llama.cpp's CPU arithmetic is deterministic), and the DRY sampler on (multiplier 0.8,
llama.cpp's other DRY defaults: a repeat of more than 2 tokens within the last 64, cut at
newlines and quotes): small models fall into loops ("I'm going to help you with your coding."
until ``n_predict``). Measured with SmolLM2-135M and the agent's system prompt, 12 prompts
with varied cwds: 1 of 12 ran to the cap without DRY, 0 of 12 with it; the other answers were
token for token the same.

Tools: llama.cpp renders ``tools`` through the model's own chat template; a template without
tool support makes llama.cpp drop them silently (ggml-org/llama.cpp#27129): SmolLM2's is one.
``ACP_AGENT_GGUF_CHAT_TEMPLATE=/abs/file.jinja`` replaces the template (llama-server's
``--chat-template-file``); ``acp-agent doctor`` says whether the model's template has tools.
``ACP_AGENT_GGUF_TOOL_CHOICE=auto|required|none`` sends ``tool_choice`` (a ``gguf:`` model has
no ``[providers]`` table for per-model options). llama.cpp's template auto-parser lets free text
come before a call even under ``"required"`` unless the template wraps answer text in markers;
``tests/live/chatml_tools.jinja`` does, and with it ``"required"`` forces a call (test (d)). The window (``context_window``, which the
session reads) and ``max_output_tokens`` go to the provider too, so every request carries a
``max_tokens`` that fits what is left of the 4096 tokens, and one that cannot fit is refused
before it is sent (``ContextOverflow``, as llama.cpp's own 400 would be).

Signals: llama.cpp's server sets SIGINT/SIGTERM handlers in some versions; the pinned xllamacpp
leaves the agent's in place (tests/live, test (a): SIGTERM after a load stops the agent, exit 0).
"""

from __future__ import annotations

import dataclasses
import importlib
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, get_args

import anyio

from acp_agent.logs import get_logger
from acp_agent.model.base import Capabilities, ModelError, ModelRequest, StreamEvent
from acp_agent.model.openai.provider import OpenAICompatible
from acp_agent.model.openai.settings import (
    Endpoint,
    ModelSettings,
    RetryPolicy,
    Secret,
    ToolChoice,
)

log = get_logger("acp_agent.model")

SCHEME = "gguf"
LOOPBACK = "http://127.0.0.1"
"""Where its requests go: the llama.cpp server it starts (on a port the OS picks)."""
GGUF_CONTEXT_WINDOW = 4096
"""The default window of a ``gguf:`` model (docs/contract.md §8), which is also llama.cpp's ``n_ctx``."""
MISSING_EXTRA = "gguf: models need the optional extra: pip install 'acp-agent-server[local]'"
CHAT_TEMPLATE_ENV = "ACP_AGENT_GGUF_CHAT_TEMPLATE"
TOOL_CHOICE_ENV = "ACP_AGENT_GGUF_TOOL_CHOICE"
GGUF_MAGIC = b"GGUF"
LOG_ERRORS_ONLY = 1
"""llama.cpp's ``verbosity``: 1 errors, 2 also warnings, 3 also per-request timings."""


@dataclass(frozen=True)
class GgufSettings:
    context_window: int = GGUF_CONTEXT_WINDOW
    threads: int = 2
    max_output_tokens: int = 1024
    seed: int = 1
    dry_multiplier: float = 0.8
    """llama.cpp's DRY sampler (0 is off): it penalizes a token that would extend a repeat."""
    chat_template: Path | None = None
    """A Jinja chat template file that replaces the model's own (for tools, say)."""
    tool_choice: ToolChoice | None = None
    """Sent as ``tool_choice`` beside the tools; ``None``: not sent (llama.cpp: ``auto``)."""

    @classmethod
    def from_spec(
        cls, rest: str, env: Mapping[str, str], context_window: int | None = None
    ) -> GgufSettings:
        """The settings of ``gguf:REST``: its query (``ctx``, ``threads``, ``seed``), else
        ``--context-window`` for the window, else the defaults; the environment's for the
        rest (``from_env``). ``ValueError`` if any is bad."""
        options: dict[str, Any] = {"context_window": context_window} if context_window else {}
        options.update(spec_options(rest))
        return dataclasses.replace(cls.from_env(env), **options)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GgufSettings:
        """The settings a ``gguf:`` model has no config table for yet; ``ValueError`` if bad."""
        template = env.get(CHAT_TEMPLATE_ENV, "").strip()
        choice = env.get(TOOL_CHOICE_ENV, "").strip() or None
        choices = get_args(ToolChoice)
        if choice is not None and choice not in choices:
            raise ValueError(
                f"{TOOL_CHOICE_ENV}: expected one of {', '.join(choices)}, got {choice!r}"
            )
        return cls(
            chat_template=Path(template).expanduser() if template else None,
            tool_choice=cast(ToolChoice | None, choice),
        )


SPEC_OPTIONS = {"ctx": "context_window", "threads": "threads", "seed": "seed"}
"""``gguf:PATH?ctx=N&threads=N&seed=N``: the query of a spec, and the settings it sets."""


def spec_options(rest: str) -> dict[str, int]:
    """The settings a spec's query sets (``ValueError`` naming a bad one)."""
    _, mark, query = rest.partition("?")
    chosen: dict[str, int] = {}
    for pair in query.split("&") if mark and query else []:
        key, _, value = pair.partition("=")
        if key not in SPEC_OPTIONS:
            raise ValueError(f"gguf: unknown option {key!r}; expected {', '.join(SPEC_OPTIONS)}")
        least = 0 if key == "seed" else 1
        if not value.isdigit() or int(value) < least:
            raise ValueError(
                f"gguf: {key} expects a whole number of at least {least}, got {value!r}"
            )
        chosen[SPEC_OPTIONS[key]] = int(value)
    return chosen


def spec_path(rest: str) -> Path:
    """The model file of a ``gguf:`` spec; ``ValueError`` unless it is an absolute path.

    Absolute only: an agent started by an editor has no cwd a relative path could rely on.
    ``~`` is expanded (no shell expands it after ``gguf:``). Whether the file exists is checked
    when the model is first used (and by ``acp-agent doctor``), so a missing file reaches the
    user as the answer to a prompt rather than as an agent that does not start.
    """
    rest = rest.partition("?")[0]
    path = Path(rest).expanduser()
    if not rest.strip() or not path.is_absolute():
        raise ValueError(f"gguf: expects an absolute path to a .gguf file, got {rest!r}")
    return path


# -- loading ----------------------------------------------------------------------------------


@dataclass
class LocalServer:
    """A running llama.cpp server: the xllamacpp object that owns it, and how to reach it."""

    server: Any
    base_url: str
    key: Secret
    load_s: float


def xllamacpp() -> Any:
    """The xllamacpp module (typed ``Any``: it ships no type information), imported now."""
    try:
        return importlib.import_module("xllamacpp")
    except ImportError as exc:
        raise ModelError(MISSING_EXTRA) from exc


def check_file(path: Path) -> None:
    """Fail with a sentence a user can act on when ``path`` cannot be a GGUF model."""
    if not path.exists():
        raise ModelError(f"gguf: model file {path} not found")
    if not path.is_file():
        raise ModelError(f"gguf: {path} is not a file")
    try:
        with path.open("rb") as file:
            magic = file.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise ModelError(f"gguf: cannot read {path}: {exc.strerror or exc}") from exc
    if magic != GGUF_MAGIC:
        raise ModelError(f"gguf: {path} is not a GGUF file (it does not start with 'GGUF')")


def server_params(xlc: Any, path: Path, settings: GgufSettings, key: str) -> Any:
    """llama.cpp's ``common_params`` for one model served on 127.0.0.1 (see the module doc)."""
    params = xlc.CommonParams()
    params.model.path = str(path)
    params.n_ctx = settings.context_window
    params.n_predict = settings.max_output_tokens
    params.n_parallel = 1
    params.cpuparams.n_threads = settings.threads
    params.cpuparams_batch.n_threads = settings.threads
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.api_keys = [key]
    params.ui = False
    params.warmup = False
    params.verbosity = LOG_ERRORS_ONLY
    params.sampling.seed = settings.seed
    params.sampling.dry_multiplier = settings.dry_multiplier
    if settings.chat_template is not None:
        params.chat_template = _read_template(settings.chat_template)
    return params


def _read_template(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        message = f"gguf: cannot read the chat template {path} ({CHAT_TEMPLATE_ENV}): {reason}"
        raise ModelError(message) from exc


def start_server(path: Path, settings: GgufSettings) -> LocalServer:
    """Load ``path`` and start llama.cpp's server; blocking (seconds), holds the GIL throughout."""
    check_file(path)
    xlc = xllamacpp()
    key = secrets.token_urlsafe(32)
    params = server_params(xlc, path, settings, key)
    started = time.monotonic()
    try:
        server = xlc.Server(params)
    except RuntimeError as exc:
        raise ModelError(
            f"gguf: llama.cpp could not load {path} ({exc}); llama.cpp logged why on stderr"
        ) from exc
    return LocalServer(server, server.listening_address, Secret(key), time.monotonic() - started)


# -- the provider -----------------------------------------------------------------------------


class GgufModel:
    """A ``ModelProvider`` for one GGUF file, served by an in-process llama.cpp on first use."""

    def __init__(self, path: Path, settings: GgufSettings | None = None) -> None:
        self.path = path
        self.settings = settings or GgufSettings()
        self.name = f"{SCHEME}:{path}"
        self.capabilities = Capabilities(
            writes_titles=False,  # a title request would compete with the next turn's
            images=False,  # no multimodal projector is loaded
            context_window=self.settings.context_window,
            local_cpu=True,
            thinking_levels=True,  # passed on to its llama.cpp server
            http_endpoint=LOOPBACK,  # the server it starts on first use, its port not known yet
        )
        """Read by the session: it compacts and bounds for this window, asks no titles."""
        self._lock = anyio.Lock()
        self._local: LocalServer | None = None
        self._client: OpenAICompatible | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        client = await self._started()
        # Closed here, at once, when the caller closes this generator (cancel): an inner one
        # left suspended would hold its HTTP response, and so llama.cpp's slot, until GC.
        events = cast(AsyncGenerator[StreamEvent, None], client.stream(request))
        async with aclosing(events):
            async for event in events:
                yield event

    async def aclose(self) -> None:
        """Close the HTTP client, then stop llama.cpp (its destructor joins its threads)."""
        async with self._lock:
            client, local = self._client, self._local
            self._client = self._local = None
            if client is not None:
                await client.aclose()
            if local is not None:
                local.server = None  # the last reference: llama.cpp stops here
                log.info("gguf_server_stopped", model=str(self.path))

    async def start(self) -> None:
        """Load the model and start its server now, not at the first request (a benchmark
        that times requests, not the load)."""
        await self._started()

    async def _started(self) -> OpenAICompatible:
        async with self._lock:
            if self._client is None:
                local = await anyio.to_thread.run_sync(start_server, self.path, self.settings)
                self._local, self._client = local, self._provider(local)
                log.info(
                    "gguf_server_started",
                    model=str(self.path),
                    base_url=local.base_url,
                    load_ms=round(local.load_s * 1000),
                    context_window=self.settings.context_window,
                    threads=self.settings.threads,
                )
            return self._client

    def _provider(self, local: LocalServer) -> OpenAICompatible:
        endpoint = Endpoint(SCHEME, f"{local.base_url}/v1", local.key, None)
        settings = ModelSettings(
            context_window=self.settings.context_window,
            max_output_tokens=self.settings.max_output_tokens,
            tool_choice=self.settings.tool_choice,
            images=False,  # no multimodal projector is loaded
        )
        # A local server has no passing failures worth a backoff; a retry only redoes the work.
        return OpenAICompatible(
            endpoint, str(self.path), RetryPolicy(max_retries=0), settings=settings
        )


# -- doctor -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadReport:
    """What loading a model once told: how long it took and whether its template has tools."""

    load_s: float
    supports_tools: bool | None
    version: str


def try_load(path: Path, settings: GgufSettings) -> LoadReport:
    """Load ``path`` as the agent would, ask the server's ``/props``, stop it (``ModelError``)."""
    local = start_server(path, settings)
    try:
        return LoadReport(local.load_s, _supports_tools(local), str(xllamacpp().__version__))
    finally:
        local.server = None


def _supports_tools(local: LocalServer) -> bool | None:
    import httpx

    headers = {"Authorization": f"Bearer {local.key.reveal()}"}
    try:
        props = httpx.get(f"{local.base_url}/props", headers=headers, timeout=10).json()
    except (httpx.HTTPError, ValueError):
        return None
    caps = props.get("chat_template_caps") if isinstance(props, dict) else None
    value = caps.get("supports_tools") if isinstance(caps, dict) else None
    return value if isinstance(value, bool) else None
