from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.journal.paths import (
    InvalidSessionId,
    default_state_dir,
    session_dir,
    validate_session_id,
)


@pytest.mark.parametrize("good", ["a", "0", "s1", "A.b_c-d", "x" * 128, "sess..ion", "9-9"])
def test_valid_session_ids(good: str) -> None:
    assert validate_session_id(good) == good
    assert session_dir(Path("/state"), good) == Path("/state/sessions") / good


@pytest.mark.parametrize(
    "bad",
    [
        "",
        ".",
        "..",
        "../x",
        "a/b",
        "/abs",
        ".hidden",
        "-x",
        "_x",
        "x" * 129,
        "a b",
        "a\n",
        "é",
        "\u0661",  # ARABIC-INDIC DIGIT ONE: a digit, but not an ASCII one
        "a\x00",
        "a\\b",
    ],
)
def test_invalid_session_ids_never_reach_a_path(bad: str) -> None:
    with pytest.raises(InvalidSessionId) as caught:
        session_dir(Path("/state"), bad)
    assert caught.value.session_id == bad
    assert isinstance(caught.value, ValueError)
    assert repr(bad) in str(caught.value)


def test_default_state_dir_follows_xdg() -> None:
    assert default_state_dir({"XDG_STATE_HOME": "/xdg", "HOME": "/home/u"}) == Path(
        "/xdg/acp-agent"
    )
    assert default_state_dir({"HOME": "/home/u"}) == Path("/home/u/.local/state/acp-agent")
    assert default_state_dir({"XDG_STATE_HOME": "", "HOME": "/home/u"}) == Path(
        "/home/u/.local/state/acp-agent"
    )
    assert default_state_dir({"XDG_STATE_HOME": "rel", "HOME": "/home/u"}) == Path(
        "/home/u/.local/state/acp-agent"
    )
