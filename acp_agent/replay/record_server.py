"""The server the recorder drives: ``acp-agent serve`` with its model wrapped for recording.

    python -m acp_agent.replay.record_server --record-to FILE [serve options] --model SPEC

Everything is the real server (``acp_agent.app.run_server``); only the provider differs:
``make_model(SPEC)`` wrapped in a ``RecordingProvider`` that writes script lines to FILE.
``run_server`` looks ``make_model`` up in ``acp_agent.app`` when it starts, which is the seam
used here (the one process-wide provider is made there); if that changes, change this too.

Besides every spec ``make_model`` knows, the recorder accepts ``python:MODULE:FACTORY``: a
callable returning a ``ModelProvider`` (a provider under development, a test double), imported
in the server process.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from acp_agent import app
from acp_agent.model.base import ModelProvider
from acp_agent.model.registry import BadModelSpec, make_model
from acp_agent.options import add_server_options, options_from
from acp_agent.replay.recording import RecordingProvider, ScriptSink

PYTHON_SPEC = "python:"


def resolve_model(spec: str | None) -> ModelProvider:
    """``make_model(spec)``, or the factory a ``python:MODULE:FACTORY`` spec names."""
    if spec and spec.startswith(PYTHON_SPEC):
        module, _, factory = spec.removeprefix(PYTHON_SPEC).partition(":")
        if not module or not factory:
            raise BadModelSpec(f"bad model spec {spec!r}; expected python:MODULE:FACTORY")
        try:
            made: ModelProvider = getattr(importlib.import_module(module), factory)()
        except (ImportError, AttributeError) as exc:
            raise BadModelSpec(f"model spec {spec!r}: {exc}") from exc
        return made
    return make_model(spec)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acp_agent.replay.record_server")
    parser.add_argument("--record-to", type=Path, required=True, metavar="FILE")
    add_server_options(parser)
    args = parser.parse_args(argv)
    sink = ScriptSink(args.record_to)

    def recording_model(spec: str | None) -> ModelProvider:
        return RecordingProvider(resolve_model(spec), sink)

    vars(app)["make_model"] = recording_model  # the seam described in the module docstring
    return app.run_server(options_from(args))


if __name__ == "__main__":
    sys.exit(main())
