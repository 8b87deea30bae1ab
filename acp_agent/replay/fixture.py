"""A fixture directory on disk: its inputs, its expected outputs, and the placeholders.

Inputs (``docs/replays.md`` has the full format):

- ``client.jsonl`` — the client side, one step per line (``acp_agent.replay.steps``);
- ``model.jsonl`` — script-model lines, consumed in order across every server run of the fixture;
- ``config.toml`` — optional config (hooks); ``env.json`` — optional extra environment;
- ``files/`` — optional workspace content, copied into the session cwd before the first run.

Expected outputs, written by ``--update`` and compared otherwise: ``frames.jsonl`` (every frame
the agent wrote, normalized, runs separated by ``{"run": N}`` / ``{"exit": CODE}`` lines),
``journal/<session>.jsonl`` (every journal of the state dir, normalized) and ``requests.jsonl``
(what the model was asked, normalized; absent when the model was never asked).

Placeholders ``{cwd}`` (the session workspace), ``{state}`` (the state dir), ``{fixture}`` (the
fixture directory), ``{python}`` (this interpreter) and ``{tmp}`` (the run's scratch directory)
are substituted in every string of the client frames, the model lines and ``env.json``, and in
the text of ``config.toml``; normalization maps the paths back to them.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from acp_agent.replay.steps import Json, Step, StepError, parse_step

CLIENT: Final = "client.jsonl"
MODEL: Final = "model.jsonl"
CONFIG: Final = "config.toml"
ENV: Final = "env.json"
FILES: Final = "files"
FRAMES: Final = "frames.jsonl"
JOURNALS: Final = "journal"
REQUESTS: Final = "requests.jsonl"


class FixtureError(ValueError):
    """A fixture directory cannot be read: the message names the file."""


@dataclass(frozen=True)
class Places:
    """The concrete paths behind the placeholders, for one replay."""

    cwd: Path
    state: Path
    fixture: Path
    tmp: Path
    python: str = sys.executable

    def pairs(self) -> list[tuple[str, str]]:
        """``(placeholder, value)``, longest value first (so nested paths map to the inner one)."""
        pairs = [
            ("{cwd}", str(self.cwd)),
            ("{state}", str(self.state)),
            ("{fixture}", str(self.fixture)),
            ("{tmp}", str(self.tmp)),
            ("{python}", self.python),
        ]
        return sorted(pairs, key=lambda pair: len(pair[1]), reverse=True)

    def fill_text(self, text: str) -> str:
        for placeholder, value in self.pairs():
            text = text.replace(placeholder, value)
        return text

    def fill(self, value: Json) -> Json:
        """``value`` with every placeholder in its strings (keys too) substituted."""
        if isinstance(value, str):
            return self.fill_text(value)
        if isinstance(value, list):
            return [self.fill(item) for item in value]
        if isinstance(value, dict):
            return {self.fill_text(k): self.fill(v) for k, v in value.items()}
        return value


@dataclass(frozen=True)
class Fixture:
    path: Path
    steps: list[Step]
    model_lines: list[Json] = field(default_factory=list)
    config: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def files(self) -> Path | None:
        files = self.path / FILES
        return files if files.is_dir() else None

    @classmethod
    def load(cls, path: Path) -> Fixture:
        path = path.resolve()
        if not (path / CLIENT).is_file():
            raise FixtureError(f"{path}: not a replay fixture (no {CLIENT})")
        steps = [
            parse_step(line, f"{path / CLIENT}:{number}")
            for number, line in read_jsonl(path / CLIENT)
        ]
        model = path / MODEL
        model_lines = [line for _, line in read_jsonl(model)] if model.is_file() else []
        config = path / CONFIG
        return cls(
            path,
            steps,
            model_lines,
            config.read_text(encoding="utf-8") if config.is_file() else None,
            _read_env(path / ENV),
        )


def read_jsonl(path: Path) -> list[tuple[int, Json]]:
    """``(line number, value)`` of every non-blank line; split at ``\\n`` bytes only."""
    out: list[tuple[int, Json]] = []
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            out.append((number, json.loads(raw)))
        except ValueError as exc:
            raise FixtureError(f"{path}:{number}: not JSON: {exc}") from None
    return out


def _read_env(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    try:
        env = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise FixtureError(f"{path}: not JSON: {exc}") from None
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise FixtureError(f"{path}: expected an object of strings")
    return dict(env)


def find_fixtures(paths: list[Path]) -> list[Path]:
    """Each path that is a fixture, or the fixtures directly inside it, sorted by name."""
    found: list[Path] = []
    for path in paths:
        if (path / CLIENT).is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(p for p in path.iterdir() if (p / CLIENT).is_file()))
        else:
            raise FixtureError(f"{path}: no such fixture directory")
    return found


__all__ = [
    "CLIENT",
    "CONFIG",
    "ENV",
    "FILES",
    "FRAMES",
    "JOURNALS",
    "MODEL",
    "REQUESTS",
    "Fixture",
    "FixtureError",
    "Places",
    "StepError",
    "find_fixtures",
    "read_jsonl",
]
