"""What ``acp-agent doctor`` found: findings grouped in sections, as text or as JSON.

A finding is one line of the page: a status, the check it comes from (a stable dotted name
such as ``journal.tail`` that scripts may match on) and a sentence for people. Only
``problem`` findings make the exit code 1; ``note`` findings are worth knowing but need no
action (a session in use, a turn a crash cut off that the next load closes).
"""

from __future__ import annotations

from enum import StrEnum

import msgspec


class Status(StrEnum):
    OK = "ok"
    NOTE = "note"
    PROBLEM = "problem"


class Finding(msgspec.Struct, frozen=True):
    status: Status
    check: str
    message: str
    subject: str | None = None
    """What the finding is about when a section has many (a session id)."""

    def line(self) -> str:
        about = f"{self.subject}: " if self.subject else ""
        return f"{about}{self.message}"


class Section(msgspec.Struct, frozen=True):
    name: str
    title: str
    findings: list[Finding]


class System(msgspec.Struct, frozen=True, rename="camel"):
    version: str
    python: str
    python_executable: str
    platform: str


class Report(msgspec.Struct, frozen=True):
    healthy: bool
    problems: list[str]
    """Every ``problem`` finding as ``"<section>: <line>"``: what makes the exit code 1."""
    system: System
    sections: list[Section]

    @classmethod
    def of(cls, system: System, sections: list[Section]) -> Report:
        problems = [
            f"{section.name}: {finding.line()}"
            for section in sections
            for finding in section.findings
            if finding.status is Status.PROBLEM
        ]
        return cls(not problems, problems, system, sections)

    @property
    def exit_code(self) -> int:
        return 0 if self.healthy else 1


_encoder = msgspec.json.Encoder()


def to_json(report: Report) -> bytes:
    return _encoder.encode(report) + b"\n"


_MARKS = {Status.OK: "ok", Status.NOTE: "note", Status.PROBLEM: "PROBLEM"}


def to_text(report: Report) -> str:
    system = report.system
    lines = [
        f"acp-agent {system.version}",
        f"  python    {system.python} ({system.python_executable})",
        f"  platform  {system.platform}",
    ]
    for section in report.sections:
        lines += ["", section.title]
        lines += [f"  {_MARKS[f.status]:<8} {f.line()}" for f in section.findings]
    lines.append("")
    if report.healthy:
        lines.append("healthy: no problems found")
    else:
        count = len(report.problems)
        lines.append(f"{count} problem{'s' if count > 1 else ''}:")
        lines += [f"  - {problem}" for problem in report.problems]
    return "\n".join(lines) + "\n"
