"""A project's saved rules: ``<state-dir>/permissions/<digest of the cwd>.json``.

The "Always allow in this project" answer saves an ``allow`` rule here; every later session
whose cwd is the same directory (after ``realpath``), in this process or any other, reads it.
It lives under the state directory, never in the workspace: nothing a repository carries can
add a rule. Every change is a read-modify-write under an ``flock`` on a sibling lock file (two
processes saving at once both keep their rule), written to a temporary file, fsynced, renamed
over the old one, and the directory fsynced: after a crash the file is the old or the new one.
A file that cannot be read or decoded counts as no rules (logged ``project_rules_unreadable``).

    {"cwd": "/home/me/project", "rules": [{"effect": "allow", "pattern": "run_command(git *)"}]}
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import msgspec

from acp_agent.journal.files import fsync_dir, make_private_dirs
from acp_agent.logs import get_logger
from acp_agent.permissions.patterns import PatternError, parse_pattern
from acp_agent.permissions.rules import Effect, Rule, Source

log = get_logger("acp_agent.permissions")
DIRECTORY = "permissions"


class _Saved(msgspec.Struct, frozen=True):
    effect: Effect
    pattern: str


class _File(msgspec.Struct, frozen=True):
    cwd: str
    rules: list[_Saved] = []


_decoder = msgspec.json.Decoder(_File)
_encoder = msgspec.json.Encoder()


class ProjectStore:
    """The saved rules of the project at ``cwd``, kept under ``state_dir``."""

    def __init__(self, state_dir: Path, cwd: str) -> None:
        self.cwd = os.path.realpath(cwd)
        digest = hashlib.sha256(self.cwd.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        self.path = state_dir / DIRECTORY / f"{digest}.json"

    def inside_project(self) -> bool:
        """Does the file lie inside the project's own directory (a state dir in the repo)?"""
        real = os.path.realpath(self.path)
        return real == self.cwd or real.startswith(self.cwd.rstrip("/") + "/")

    def rules(self) -> tuple[Rule, ...]:
        return tuple(self._read())

    def add(self, rule: Rule) -> None:
        with self._locked():
            rules = self._read()
            if rule.pattern not in [r.pattern for r in rules if r.effect is rule.effect]:
                self._write([*rules, rule])
        log.info("project_rule_saved", cwd=self.cwd, rule=rule.pattern.text, effect=rule.effect)

    def remove(self, rule: Rule) -> bool:
        """Remove ``rule``; ``False`` when it was no longer saved (another process removed it)."""
        with self._locked():
            rules = self._read()
            kept = [r for r in rules if (r.effect, r.pattern) != (rule.effect, rule.pattern)]
            if len(kept) == len(rules):
                return False
            self._write(kept)
        log.info("project_rule_removed", cwd=self.cwd, rule=rule.pattern.text)
        return True

    def _read(self) -> list[Rule]:
        try:
            saved = _decoder.decode(self.path.read_bytes())
        except FileNotFoundError:
            return []
        except (OSError, msgspec.DecodeError) as exc:
            log.warning("project_rules_unreadable", path=str(self.path), error=str(exc))
            return []
        if saved.cwd != self.cwd:
            return []
        return [r for r in map(self._rule, saved.rules) if r is not None]

    def _rule(self, saved: _Saved) -> Rule | None:
        try:
            return Rule(saved.effect, parse_pattern(saved.pattern), Source.PROJECT)
        except PatternError as exc:
            log.warning("project_rule_skipped", path=str(self.path), error=str(exc))
            return None

    def _write(self, rules: list[Rule]) -> None:
        saved = _File(self.cwd, [_Saved(r.effect, r.pattern.text) for r in rules])
        temporary = self.path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, _encoder.encode(saved) + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, self.path)
        fsync_dir(self.path.parent)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        make_private_dirs(self.path.parent)
        lock = self.path.with_suffix(".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)
