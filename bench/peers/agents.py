"""The agents compared, how each is installed, configured and started against the fake model.

Each peer runs from its own pinned install under ``.cache/peers/`` (``make bench-peers`` puts it
there): a venv per Python peer, an npm prefix for codex-acp, whose platform package ships the
native binary, which is started directly (the npm package's ``bin`` is a node wrapper that
only spawns it). Each gets a home of its own under the run's scratch directory (``HOME`` and the
agent's own home variable), so a user's configuration changes nothing, and a config file that
points it at the fake model's ``/<agent>/v1`` with a dummy key:

- acp-agent: ``--model openai:gpt-test``, ``OPENAI_BASE_URL``, an empty ``--config``; run as a
  user's install has it, from a venv where it is a plain package (``bench/installed.py``, made
  under ``.cache/peers/acp-agent``), not from the development venv's editable install.
- fast-agent: ``fast-agent-acp -x`` (its ACP stdio server with the local shell tool), the
  ``generic`` (OpenAI-compatible Chat Completions) provider in ``fastagent.config.yaml``.
- kimi-cli: ``kimi acp``, ``KIMI_SHARE_DIR/config.toml`` with an ``openai_legacy`` (Chat
  Completions) provider. Its ACP server refuses ``session/new`` without a Kimi login token on
  disk whatever the provider (``kimi_cli/acp/server.py``, ``_check_auth``), so a dummy token
  file is written; nothing reads it with a non-Kimi provider.
- codex-acp: ``CODEX_HOME/config.toml`` with a ``model_providers.bench`` entry
  (``wire_api = "responses"``, ``env_key``); a provider other than ``openai`` needs no login
  (``codex-acp`` ``src/codex_agent.rs``, ``check_auth``).
- the SDK echo agent (``bench/sdk_agent.py``): no model at all, the protocol's floor.
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PEERS_DIR = REPO / ".cache" / "peers"

OURS_HOME = PEERS_DIR / "acp-agent"
"""Where ``bench/installed.py`` makes the venv ours runs from (``installed_python``, called by
``bench/peers/__main__.py`` before the rounds)."""
OURS_PYTHON = OURS_HOME / "installed-venv" / "bin" / "python"

FAST_AGENT_VERSION = "0.10.48"
KIMI_CLI_VERSION = "1.51.0"
CODEX_ACP_VERSION = "0.16.0"


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]


@dataclass(frozen=True)
class Agent:
    key: str
    """Also the fake model's path prefix for this agent."""
    label: str
    launch: Callable[[Path, str], Launch]
    """``(home, base_url)`` → how to start it."""
    interpreter: list[str] | None
    """The interpreter it runs on (for the ``-c pass`` floor), ``None`` for a native binary."""
    model: bool = True
    """Whether it talks to the model (the SDK echo agent does not)."""
    loads: bool = True
    """Whether it can ``session/load``."""
    tools: bool = True
    installed: Path | None = None
    """A file whose absence means ``make bench-peers`` did not install it."""


def _ours(home: Path, base_url: str) -> Launch:
    empty = home / "empty-config.toml"
    empty.touch()
    argv = [str(OURS_PYTHON), "-m", "acp_agent", "--model", "openai:gpt-test"]
    argv += ["--state-dir", str(home / "state"), "--config", str(empty)]
    return Launch(argv, {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "bench"})


def _fast_agent(home: Path, base_url: str) -> Launch:
    config = home / "fastagent.config.yaml"
    config.write_text(
        "default_model: generic.gpt-test\n"
        "generic:\n"
        "  api_key: bench\n"
        f"  base_url: {base_url}\n"
        "logger:\n"
        "  level: error\n"
        "  progress_display: false\n"
        "  show_chat: false\n"
        "  show_tools: false\n",
        encoding="utf-8",
    )
    exe = PEERS_DIR / "fast-agent" / "bin" / "fast-agent-acp"
    argv = [str(exe), "-x", "--model", "generic.gpt-test", "--config-path", str(config)]
    argv += ["--home", str(home / "fast-agent-home")]
    return Launch(argv, {"HOME": str(home)})


def _kimi(home: Path, base_url: str) -> Launch:
    share = home / ".kimi"
    (share / "credentials").mkdir(parents=True, exist_ok=True)
    (share / "config.toml").write_text(
        'default_model = "bench"\n'
        "[providers.bench]\n"
        'type = "openai_legacy"\n'
        f'base_url = "{base_url}"\n'
        'api_key = "bench"\n'
        "[models.bench]\n"
        'provider = "bench"\n'
        'model = "gpt-test"\n'
        "max_context_size = 128000\n",
        encoding="utf-8",
    )
    token = {"access_token": "bench", "refresh_token": "bench", "expires_at": 4102444800.0}
    token |= {"scope": "", "token_type": "Bearer", "expires_in": 0.0}
    (share / "credentials" / "kimi-code.json").write_text(json.dumps(token), encoding="utf-8")
    exe = PEERS_DIR / "kimi-cli" / "bin" / "kimi"
    return Launch([str(exe), "acp"], {"HOME": str(home), "KIMI_SHARE_DIR": str(share)})


CODEX_MODEL = "gpt-5.4"
"""A model codex has metadata for; with an unknown one it prints a warning chunk each turn."""
_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}
CODEX_PLATFORM = f"{sys.platform}-{_ARCH.get(platform.machine().lower(), platform.machine())}"
"""The suffix of codex-acp's npm platform package, as its node wrapper picks it."""
CODEX_BINARY = (
    PEERS_DIR
    / "codex-acp"
    / "node_modules"
    / "@zed-industries"
    / f"codex-acp-{CODEX_PLATFORM}"
    / "bin"
)


def _codex(home: Path, base_url: str) -> Launch:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model = "{CODEX_MODEL}"\n'
        'model_provider = "bench"\n'
        'approval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\n'
        "[model_providers.bench]\n"
        'name = "bench"\n'
        f'base_url = "{base_url}"\n'
        'env_key = "BENCH_API_KEY"\n'
        'wire_api = "responses"\n',
        encoding="utf-8",
    )
    env = {"HOME": str(home), "CODEX_HOME": str(codex_home), "BENCH_API_KEY": "bench"}
    return Launch([str(CODEX_BINARY / "codex-acp")], env)


def _sdk(home: Path, base_url: str) -> Launch:
    return Launch([sys.executable, str(REPO / "bench" / "sdk_agent.py")], {})


OURS = "acp-agent"
AGENTS: dict[str, Agent] = {
    agent.key: agent
    for agent in (
        Agent(OURS, "acp-agent (ours)", _ours, [str(OURS_PYTHON)]),
        Agent(
            "fast-agent",
            f"fast-agent-mcp {FAST_AGENT_VERSION} `-x`",
            _fast_agent,
            [str(PEERS_DIR / "fast-agent" / "bin" / "python")],
            installed=PEERS_DIR / "fast-agent" / "bin" / "fast-agent-acp",
        ),
        Agent(
            "kimi-cli",
            f"kimi-cli {KIMI_CLI_VERSION}",
            _kimi,
            [str(PEERS_DIR / "kimi-cli" / "bin" / "python")],
            installed=PEERS_DIR / "kimi-cli" / "bin" / "kimi",
        ),
        Agent(
            "codex-acp",
            f"codex-acp {CODEX_ACP_VERSION} (native)",
            _codex,
            None,
            installed=CODEX_BINARY / "codex-acp",
        ),
        Agent(
            "sdk-echo",
            "SDK echo agent",
            _sdk,
            [sys.executable],
            model=False,
            loads=False,
            tools=False,
        ),
    )
}


def own_floor(agent: Agent) -> bool:
    """Whether the agent's interpreter floor is its own (the SDK echo agent shares ours)."""
    ours = AGENTS[OURS].interpreter
    return agent.interpreter is not None and (agent.key == OURS or agent.interpreter != ours)
