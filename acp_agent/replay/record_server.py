"""The server the recorder drives: ``acp-agent serve`` with its model wrapped for recording.

    python -m acp_agent.replay.record_server --record-to FILE [serve options]

Everything is the real server (``acp_agent.launch.run_server``); only the providers differ: each
provider the server obtains is wrapped in a ``RecordingProvider`` writing script lines to FILE.
The wrapper is installed at the one place the server turns a model spec into a provider:
``ModelCatalog.provider`` when the registry has a catalog, else ``make_model`` as
``acp_agent.app`` imported it. If model selection moves, move this seam with it (the recorder's
end-to-end test, ``tests/replay/test_record.py``, fails when it is not found).

``ACP_AGENT_RECORD_PROVIDER=MODULE:FACTORY`` (the recorder sets it for ``--model
python:MODULE:FACTORY``) replaces whatever the spec names with ``FACTORY()``, a ``ModelProvider``
imported here: a provider under development, or a test double. The server itself is then
started with a script spec, so it takes no network or key set-up.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from acp_agent import app, launch
from acp_agent.model import registry
from acp_agent.model.base import ModelProvider
from acp_agent.options import add_server_options, options_from
from acp_agent.replay.recording import PROVIDER_ENV, RecordingProvider, ScriptSink


class SeamNotFound(RuntimeError):
    """The server builds its providers somewhere this module does not know."""


def load_factory(target: str) -> ModelProvider:
    """``MODULE:FACTORY`` -> ``FACTORY()``."""
    module, _, factory = target.partition(":")
    if not module or not factory:
        raise ValueError(f"{PROVIDER_ENV}={target!r}: expected MODULE:FACTORY")
    made: ModelProvider = getattr(importlib.import_module(module), factory)()
    return made


class Wrapping:
    """One ``RecordingProvider`` per inner provider (so a provider's state stays shared)."""

    def __init__(self, sink: ScriptSink, override: ModelProvider | None) -> None:
        self.sink = sink
        self.override = override
        self._wrapped: dict[int, RecordingProvider] = {}

    def __call__(self, inner: ModelProvider) -> ModelProvider:
        inner = self.override or inner
        if id(inner) not in self._wrapped:
            self._wrapped[id(inner)] = RecordingProvider(inner, self.sink)
        return self._wrapped[id(inner)]


def install(wrap: Callable[[ModelProvider], ModelProvider]) -> None:
    catalog: Any = getattr(registry, "ModelCatalog", None)
    if catalog is not None and callable(getattr(catalog, "provider", None)):
        original = catalog.provider

        def provider(self: Any, spec: str | None) -> ModelProvider:
            return wrap(original(self, spec))

        seam = "provider"
        setattr(catalog, seam, provider)
        return
    make_model = vars(app).get("make_model")
    if not callable(make_model):
        raise SeamNotFound("the recorder found neither ModelCatalog.provider nor make_model")

    def recording_model(spec: str | None) -> ModelProvider:
        return wrap(make_model(spec))

    vars(app)["make_model"] = recording_model


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acp_agent.replay.record_server")
    parser.add_argument("--record-to", type=Path, required=True, metavar="FILE")
    add_server_options(parser)
    args = parser.parse_args(argv)
    target = os.environ.get(PROVIDER_ENV)
    try:
        override = load_factory(target) if target else None
        install(Wrapping(ScriptSink(args.record_to), override))
    except (ImportError, AttributeError, ValueError, SeamNotFound) as exc:
        print(f"acp-agent replay record: {exc}", file=sys.stderr)
        return 2
    return launch.run_server(options_from(args))


if __name__ == "__main__":
    sys.exit(main())
