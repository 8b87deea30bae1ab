"""A replay's outputs as the expected files of a fixture; comparison, diffs and ``--update``.

The files are JSON lines, keys in the order the server wrote them (readable: ``jsonrpc`` and
``id`` first, ``seq`` before ``data``). Files are compared as JSON values line by line, so a
mere change of key order matches; on a mismatch the unified diff of the text is shown. Ids are numbered in one pass in a fixed order
(frames run by run, journals by normalized name, model requests), so the numbering itself is
deterministic when the outputs are.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from acp_agent.replay.driver import Outcome
from acp_agent.replay.fixture import FRAMES, JOURNALS, REQUESTS, FixtureError
from acp_agent.replay.normalize import Normalizer
from acp_agent.replay.steps import Json

Files = dict[str, str]
"""Path relative to the fixture directory -> text."""


def dump(value: Json) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def render(outcome: Outcome) -> Files:
    """The expected-file texts for ``outcome``."""
    normalize = Normalizer(outcome.places, frozenset(outcome.journals))
    frames: list[str] = []
    for number, run in enumerate(outcome.runs, start=1):
        frames.append(dump({"run": number}))
        frames.extend(dump(normalize(frame)) for frame in run.frames)
        if run.cut:
            frames.append(dump({"cut": True}))
        frames.append(dump({"exit": run.exit_code}))
    files: Files = {FRAMES: _lines(frames)}
    for raw_id, data in _journal_order(outcome, normalize):
        name = normalize.text(raw_id).strip("<>")
        lines = [dump(normalize.journal_line(json.loads(line))) for line in data.splitlines()]
        files[f"{JOURNALS}/{name}.jsonl"] = _lines(lines)
    if outcome.requests:
        files[REQUESTS] = _lines(dump(normalize(request)) for request in outcome.requests)
    return files


def _journal_order(outcome: Outcome, normalize: Normalizer) -> list[tuple[str, bytes]]:
    """Journals by normalized name; one never named in a frame goes by its header's time."""

    def key(item: tuple[str, bytes]) -> tuple[int, str, int]:
        raw_id, data = item
        if raw_id in normalize.names or normalize.text(raw_id) == raw_id:
            return (0, normalize.text(raw_id), 0)
        header = json.loads(data.split(b"\n", 1)[0] or b"{}")
        return (1, "", int(header.get("createdAt", 0)))

    return sorted(outcome.journals.items(), key=key)


def _lines(lines: Iterable[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def read_expected(directory: Path) -> Files:
    files: Files = {}
    for name in (FRAMES, REQUESTS):
        if (directory / name).is_file():
            files[name] = (directory / name).read_text(encoding="utf-8")
    journals = directory / JOURNALS
    if journals.is_dir():
        for path in sorted(journals.glob("*.jsonl")):
            files[f"{JOURNALS}/{path.name}"] = path.read_text(encoding="utf-8")
    return files


def write_expected(directory: Path, files: Files) -> None:
    """Make the expected files of ``directory`` exactly ``files`` (stale ones are removed)."""
    for stale in read_expected(directory).keys() - files.keys():
        (directory / stale).unlink()
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class Mismatch:
    name: str
    diff: str


def compare(expected: Files, actual: Files) -> list[Mismatch]:
    if FRAMES not in expected:
        raise FixtureError(f"no expected {FRAMES}: record it with --update (UPDATE_REPLAYS=1)")
    mismatches: list[Mismatch] = []
    for name in sorted(expected.keys() | actual.keys()):
        old, new = expected.get(name), actual.get(name)
        if old == new or (old is not None and new is not None and _same_json(old, new)):
            continue
        diff = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile=f"expected/{name}" if old is not None else "/dev/null",
            tofile=f"actual/{name}" if new is not None else "/dev/null",
        )
        mismatches.append(Mismatch(name, "".join(diff)))
    return mismatches


def _same_json(old: str, new: str) -> bool:
    try:
        return _values(old) == _values(new)
    except ValueError:
        return False


def _values(text: str) -> list[Json]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
