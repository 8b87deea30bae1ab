"""Command-line options; each also read from an environment variable (the flag wins)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import msgspec

from acp_agent.journal.paths import default_state_dir
from acp_agent.logs import LEVELS
from acp_agent.model.window import DEFAULT_CONTEXT_WINDOW
from acp_agent.transport.framing import DEFAULT_MAX_LINE_BYTES


class Options(msgspec.Struct, frozen=True):
    model: str | None
    state_dir: Path
    config: Path | None
    log_level: str
    log_file: str | None
    max_line_bytes: int
    context_window: int = DEFAULT_CONTEXT_WINDOW
    context_window_set: bool = False
    """``--context-window`` (or its variable) was given: a ``gguf:`` model's ``n_ctx`` too."""
    journal_store: str | None = None
    """``--journal-store``: ``file`` or a ``postgresql://`` URL; ``None``: the config's, else files."""


def add_server_options(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument(
        "--model",
        default=env("ACP_AGENT_MODEL"),
        metavar="SPEC",
        help="model: openai:MODEL, deepseek:MODEL, PROVIDER:MODEL of a [providers] config "
        "table, gguf:/ABS/PATH.gguf[?ctx=N&threads=N&seed=N] (llama.cpp in process, the "
        "[local] extra), or script:PATH (env ACP_AGENT_MODEL)",
    )
    parser.add_argument(
        "--state-dir",
        default=env("ACP_AGENT_STATE_DIR"),
        metavar="DIR",
        help="root of durable state (env ACP_AGENT_STATE_DIR)",
    )
    parser.add_argument(
        "--journal-store",
        default=env("ACP_AGENT_JOURNAL_STORE"),
        metavar="URL",
        help="where journals live: 'file' (the state dir, the default) or a libpq URI "
        "postgresql://... shared by several processes and hosts; needs the postgres extra "
        "(env ACP_AGENT_JOURNAL_STORE; config [journal] store)",
    )
    parser.add_argument(
        "--config",
        default=env("ACP_AGENT_CONFIG"),
        metavar="FILE",
        help="TOML config file (env ACP_AGENT_CONFIG)",
    )
    parser.add_argument(
        "--log-level",
        default=env("ACP_AGENT_LOG_LEVEL", "info"),
        choices=LEVELS,
        help="log level (env ACP_AGENT_LOG_LEVEL)",
    )
    parser.add_argument(
        "--log-file",
        default=env("ACP_AGENT_LOG_FILE"),
        metavar="FILE",
        help="JSON log lines to FILE instead of stderr (env ACP_AGENT_LOG_FILE)",
    )
    parser.add_argument(
        "--max-line-bytes",
        type=int,
        default=int(env("ACP_AGENT_MAX_LINE_BYTES", DEFAULT_MAX_LINE_BYTES)),
        metavar="N",
        help="longest accepted JSON-RPC line (env ACP_AGENT_MAX_LINE_BYTES)",
    )
    parser.add_argument(
        "--context-window",
        type=int,
        default=int(env("ACP_AGENT_CONTEXT_WINDOW", "0")) or None,
        metavar="N",
        help="the model's context window in tokens (default: what the server names, else "
        f"{DEFAULT_CONTEXT_WINDOW}); for gguf: the window llama.cpp allocates (n_ctx); history "
        "is compacted automatically before a turn that would fill 80%% of it "
        "(env ACP_AGENT_CONTEXT_WINDOW)",
    )


def default_config() -> Path | None:
    path = Path.home() / ".config" / "acp-agent" / "config.toml"
    return path if path.exists() else None


def options_from(args: argparse.Namespace) -> Options:
    return Options(
        model=args.model,
        state_dir=Path(args.state_dir) if args.state_dir else default_state_dir(),
        config=Path(args.config) if args.config else default_config(),
        log_level=args.log_level,
        log_file=args.log_file,
        max_line_bytes=args.max_line_bytes,
        context_window=args.context_window or DEFAULT_CONTEXT_WINDOW,
        context_window_set=args.context_window is not None,
        journal_store=args.journal_store or None,
    )
