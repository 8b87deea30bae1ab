"""Skills: ``SKILL.md`` files that become slash commands.

A skill is a directory holding a ``SKILL.md``: front matter between ``---`` lines with
``name`` and ``description`` (``key: value`` lines; a value may be quoted), then the body, the
instructions the model gets when the user invokes ``/<name> REST``. They are looked up in two
places, the workspace's first (it is the more specific, so it wins a name both define):

- ``<cwd>/.agents/skills/<dir>/SKILL.md``
- ``<user dir>/<dir>/SKILL.md``, the user dir being ``skills/`` beside the config file
  (default ``~/.config/acp-agent/skills/``).

The model sees the name and description of each skill in its system prompt
(``system_prompt.py``), never the body, which is injected only when the skill is used, as a
``user/message`` with source ``{"kind": "skill", "name"}`` before the prompt (``commands.py``).

A bad skill (no front matter, no name or description, a name that cannot be a command, a
body too large, an unreadable file) is logged ``skill_skipped`` with the path and the reason
and left out; it never stops a session. Skills are read when a session is set up (new, load,
resume, fork), in a worker thread, so an edit shows at the next of those.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import msgspec

from acp_agent.logs import get_logger

log = get_logger("acp_agent.skills")

SKILL_FILE: Final = "SKILL.md"
WORKSPACE_DIR: Final = Path(".agents") / "skills"
MAX_SKILL_BYTES: Final = 256 * 1024
NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_QUOTED: Final = re.compile(r"""^(["'])(.*)\1$""")


class Skill(msgspec.Struct, frozen=True):
    name: str
    description: str
    body: str
    path: Path


class BadSkill(ValueError):
    """Why a ``SKILL.md`` was not taken (the message says it; the path is the caller's)."""


def parse_skill(text: str, path: Path) -> Skill:
    """The skill a ``SKILL.md``'s text defines; ``BadSkill`` if it defines none."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise BadSkill("no front matter (the file must start with a '---' line)")
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        raise BadSkill("the front matter has no closing '---' line") from None
    fields = _front_matter(lines[1:end])
    name, description = fields.get("name", ""), fields.get("description", "")
    if not name:
        raise BadSkill("the front matter has no 'name'")
    if not NAME.match(name):
        raise BadSkill(f"name {name!r} cannot be a command (letters, digits, '.', '_', '-')")
    if not description:
        raise BadSkill("the front matter has no 'description'")
    body = "\n".join(lines[end + 1 :]).strip()
    if not body:
        raise BadSkill("the skill has no body")
    return Skill(name, " ".join(description.split()), body, path)


def _front_matter(lines: list[str]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#") or line[0].isspace():
            continue  # blank, comment, or a nested / continued value (not ours)
        key, colon, value = line.partition(":")
        if not colon:
            raise BadSkill(f"front matter line {line!r} is not 'key: value'")
        value = value.strip()
        quoted = _QUOTED.match(value)
        fields[key.strip()] = quoted.group(2) if quoted else value
    return fields


def read_skill(path: Path) -> Skill:
    try:
        if path.stat().st_size > MAX_SKILL_BYTES:
            raise BadSkill(f"larger than {MAX_SKILL_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadSkill(f"cannot read it: {exc}") from exc
    return parse_skill(text, path)


def skill_dirs(cwd: str, user_dir: Path | None) -> list[Path]:
    """Where a session's skills live, the workspace's first."""
    dirs = [Path(cwd) / WORKSPACE_DIR]
    return [*dirs, user_dir] if user_dir is not None else dirs


def find_skills(dirs: list[Path], reserved: frozenset[str] = frozenset()) -> list[Skill]:
    """Every good skill under ``dirs`` (each ``<dir>/*/SKILL.md``), by name; a name taken by
    an earlier dir, or ``reserved`` (the built-in commands), is skipped with a log line."""
    found: dict[str, Skill] = {}
    for root in dirs:
        for path in _candidates(root):
            skill = _take(path)
            if skill is None:
                continue
            if skill.name in reserved or skill.name in found:
                taken = "a built-in command" if skill.name in reserved else found[skill.name].path
                _skip(path, f"the name {skill.name!r} is already {taken}")
                continue
            found[skill.name] = skill
    return sorted(found.values(), key=lambda s: s.name)


def _candidates(root: Path) -> list[Path]:
    try:
        return sorted(p / SKILL_FILE for p in root.iterdir() if (p / SKILL_FILE).is_file())
    except OSError:
        return []  # no such directory: no skills there


def _take(path: Path) -> Skill | None:
    try:
        return read_skill(path)
    except BadSkill as exc:
        _skip(path, str(exc))
        return None


def _skip(path: Path, reason: str) -> None:
    log.warning("skill_skipped", path=str(path), reason=reason)


def skills_prompt(skills: list[Skill]) -> str:
    """The system prompt's lines about skills (``""``: none)."""
    if not skills:
        return ""
    lines = [
        "Skills the user can invoke as slash commands (its instructions reach you as context "
        'with source "skill" when they do):'
    ]
    lines += [f"- /{skill.name}: {skill.description}" for skill in skills]
    return "\n".join(lines)
