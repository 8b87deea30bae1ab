"""Every rule in force for one session, from its three sources, numbered as ``/permissions``
shows them: the config file's (``config``: fixed while the process runs), the project's saved
rules (``project``: ``store.py``, read again at every decision so a rule another process saved
or removed counts at once), then the rules "Always allow … in this session" made (``session``:
kept with the session's tools, gone when it closes).

``RuleBook`` is the process's: the config rules and the state directory; ``for_session`` makes
the ``SessionRules`` of one session's cwd. Numbers run over the list as it is when shown:
``remove(N)`` removes the N-th of ``listed()``; a config rule cannot be removed (edit the file).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from acp_agent.logs import get_logger
from acp_agent.permissions.rules import Rule, Source, Subject, Verdict, weigh
from acp_agent.permissions.store import ProjectStore

log = get_logger("acp_agent.permissions")


class RemoveRefused(Exception):
    """The rule asked for cannot be removed; the message says why."""


class RuleBook(msgspec.Struct, frozen=True):
    config: tuple[Rule, ...] = ()
    state_dir: Path | None = None
    config_path: Path | None = None

    def for_session(self, cwd: str) -> SessionRules:
        """The rules of a session at ``cwd``. No project rules when the state directory lies
        inside the cwd: a repository could carry that file (and "Always allow in this
        project" is then not offered)."""
        store = ProjectStore(self.state_dir, cwd) if self.state_dir is not None else None
        if store is not None and store.inside_project():
            log.warning("project_rules_inside_workspace", cwd=store.cwd, path=str(store.path))
            store = None
        return SessionRules(self.config, store, self.config_path)


class SessionRules:
    def __init__(
        self,
        config: tuple[Rule, ...] = (),
        store: ProjectStore | None = None,
        config_path: Path | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.config_path = config_path
        self.session: list[Rule] = []

    def listed(self) -> list[Rule]:
        project = list(self.store.rules()) if self.store is not None else []
        return [*self.config, *project, *self.session]

    def weigh(self, subject: Subject) -> Verdict:
        return weigh(self.listed(), subject)

    def add(self, rule: Rule) -> None:
        if rule.source is Source.PROJECT and self.store is not None:
            self.store.add(rule)
        elif rule.source is Source.SESSION and rule not in self.session:
            self.session.append(rule)

    def remove(self, number: int) -> Rule:
        """Remove the rule numbered ``number`` (from 1) in ``listed()``; ``RemoveRefused``."""
        listed = self.listed()
        if not 1 <= number <= len(listed):
            raise RemoveRefused(f"there is no rule {number} (there are {len(listed)})")
        rule = listed[number - 1]
        match rule.source:
            case Source.CONFIG:
                where = f" ({self.config_path})" if self.config_path is not None else ""
                raise RemoveRefused(
                    f"rule {number} ({rule.effect} {rule.pattern.text}) comes from the config "
                    f"file{where}: edit the file to remove it"
                )
            case Source.PROJECT:
                assert self.store is not None
                if not self.store.remove(rule):
                    raise RemoveRefused(f"rule {number} was removed already")
            case Source.SESSION:
                self.session.remove(rule)
        return rule
