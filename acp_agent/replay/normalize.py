"""Stable placeholders for what changes from run to run.

- Generated ids (32 lowercase hex digits: session ids, message ids, compaction ids), wherever they
  appear, even inside a longer string: ``<session-N>`` for a session (a directory of the state
  dir), ``<id-N>`` for anything else, numbered in order of first appearance (frames of run 1,
  run 2, ..., then the journals, then the model requests). Ids a fixture chose itself (say
  ``"main"``) stay as they are.
- Times: ``time`` and ``createdAt`` of journal lines, ``updatedAt`` anywhere -> ``"<time>"``;
  the journal's ``crc`` -> ``"<crc>"``.
- Paths: the workspace, state dir, fixture dir, scratch dir and interpreter -> ``{cwd}``,
  ``{state}``, ``{fixture}``, ``{tmp}``, ``{python}`` (the placeholders the inputs use).
- The machine and the day in a request's system message (``session/system_prompt.py``): its
  ``Platform:`` and ``Date:`` lines -> ``Platform: <platform>``, ``Date: <date>``. The rest of
  the system message is compared as it is: a change of the prompt is a change of the fixtures.

If a new kind of run-dependent value shows up in the output, add it here and say so in
``docs/replays.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from acp_agent.replay.fixture import Places
from acp_agent.replay.steps import Json

HEX_ID = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{32}(?![0-9A-Za-z])")
TIME_KEYS = frozenset({"updatedAt"})
JOURNAL_TIME_KEYS = frozenset({"time", "createdAt"})
TIME = "<time>"
CRC = "<crc>"
MACHINE_LINES = (
    (re.compile(r"^Platform: .*$", re.M), "Platform: <platform>"),
    (re.compile(r"^Date: \d{4}-\d{2}-\d{2}$", re.M), "Date: <date>"),
)


@dataclass
class Normalizer:
    places: Places
    sessions: frozenset[str]
    """The session ids of the state dir (directory names)."""
    names: dict[str, str] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=dict)

    def name(self, raw_id: str) -> str:
        if raw_id not in self.names:
            prefix = "session" if raw_id in self.sessions else "id"
            self._counts[prefix] = self._counts.get(prefix, 0) + 1
            self.names[raw_id] = f"<{prefix}-{self._counts[prefix]}>"
        return self.names[raw_id]

    def text(self, value: str) -> str:
        value = HEX_ID.sub(lambda match: self.name(match.group(0)), value)
        for placeholder, path in self.places.pairs():
            value = value.replace(path, placeholder)
        return value

    def __call__(self, value: Json, key: str | None = None) -> Json:
        if key in TIME_KEYS and isinstance(value, int | str):
            return TIME
        if isinstance(value, dict):
            if value.get("role") == "system" and isinstance(value.get("content"), str):
                return {"role": "system", "content": self.system(str(value["content"]))}
            return {self.text(k): self(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self(item) for item in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def system(self, content: str) -> str:
        for pattern, placeholder in MACHINE_LINES:
            content = pattern.sub(placeholder, content)
        return self.text(content)

    def journal_line(self, line: Json) -> Json:
        """A journal line: its envelope times and checksum, then everything else."""
        if not isinstance(line, dict):
            return self(line)
        out: dict[str, Json] = {}
        for key, value in line.items():
            if key in JOURNAL_TIME_KEYS and isinstance(value, int):
                out[key] = TIME
            elif key == "crc":
                out[key] = CRC
            else:
                out[self.text(key)] = self(value, key)
        return out

    def register(self, values: Iterable[str]) -> None:
        """Name these ids now (in this order), before anything else mentions them."""
        for value in values:
            for match in HEX_ID.finditer(value):
                self.name(match.group(0))
