"""Skill files and slash-command parsing (``commands/skills.py``, ``commands/words.py``).

The front matter rules are ``skills.py``'s docstring; a bad file is skipped with a
``skill_skipped`` log line naming the path and the reason, never raised.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from acp_agent.commands.skills import (
    MAX_SKILL_BYTES,
    BadSkill,
    find_skills,
    parse_skill,
    skills_prompt,
)
from acp_agent.commands.words import RESERVED, Invocation, parse_invocation
from acp_agent.content import ImageContent, TextContent

GOOD = "---\nname: deploy\ndescription: Ship it\n---\nRun make deploy.\n"


def test_a_good_skill_has_its_name_description_and_body() -> None:
    text = "\ufeff---\n# a comment\nname: 'deploy'\ndescription: \"Ship  it\"\nx:\n  - y\n---\n\nBody\n"
    skill = parse_skill(text, Path("/s/SKILL.md"))
    assert (skill.name, skill.description, skill.body) == ("deploy", "Ship it", "Body")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("name: x\n", "no front matter"),
        ("---\nname: x\ndescription: y\n", "no closing '---'"),
        ("---\ndescription: y\n---\nbody\n", "no 'name'"),
        ("---\nname: x\n---\nbody\n", "no 'description'"),
        ("---\nname: has space\ndescription: y\n---\nbody\n", "cannot be a command"),
        ("---\nname: /x\ndescription: y\n---\nbody\n", "cannot be a command"),
        ("---\nname: x\ndescription: y\n---\n\n", "no body"),
        ("---\nname x\n---\nbody\n", "is not 'key: value'"),
    ],
)
def test_bad_front_matter_says_why(text: str, reason: str) -> None:
    with pytest.raises(BadSkill, match=reason):
        parse_skill(text, Path("/s/SKILL.md"))


def write(root: Path, name: str, text: str | bytes) -> Path:
    (root / name).mkdir(parents=True)
    path = root / name / "SKILL.md"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_bad_skills_are_logged_and_skipped_and_the_first_place_wins(tmp_path: Path) -> None:
    workspace, user = tmp_path / "ws", tmp_path / "user"
    write(workspace, "deploy", GOOD)
    write(user, "deploy", GOOD.replace("Ship it", "the user's"))
    broken = write(user, "broken", "oops")
    binary = write(user, "binary", b"---\xff\xfe\n")
    huge = write(user, "huge", GOOD + "x" * MAX_SKILL_BYTES)
    write(user, "compact", GOOD.replace("deploy", "compact"))
    with capture_logs() as logs:
        found = find_skills([workspace, user, tmp_path / "missing"], RESERVED)
    assert [(s.name, s.description) for s in found] == [("deploy", "Ship it")]
    skipped = {e["path"]: e["reason"] for e in logs if e["event"] == "skill_skipped"}
    assert "no front matter" in skipped[str(broken)]
    assert "cannot read it" in skipped[str(binary)]
    assert "larger than" in skipped[str(huge)]
    assert "already" in skipped[str(user / "deploy" / "SKILL.md")]
    assert "a built-in command" in skipped[str(user / "compact" / "SKILL.md")]


def test_the_model_is_told_names_and_descriptions_only(tmp_path: Path) -> None:
    write(tmp_path, "deploy", GOOD)
    text = skills_prompt(find_skills([tmp_path]))
    assert "- /deploy: Ship it" in text and "make deploy" not in text
    assert skills_prompt([]) == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/status", Invocation("status", "")),
        ("  /model  openai:gpt-4.1 ", Invocation("model", "openai:gpt-4.1")),
        ("/deploy to prod\nnow", Invocation("deploy", "to prod\nnow")),
        ("/review\nfocus on errors", Invocation("review", "focus on errors")),
        ("/", None),
        ("/ status", None),
        ("status", None),
        ("a /status", None),
    ],
)
def test_invocations(text: str, expected: Invocation | None) -> None:
    assert parse_invocation([TextContent(text=text)]) == expected


def test_a_prompt_with_an_image_is_no_command() -> None:
    image = ImageContent(data="AA==", mimeType="image/png")
    assert parse_invocation([TextContent(text="/status"), image]) is None
    assert parse_invocation([]) is None
