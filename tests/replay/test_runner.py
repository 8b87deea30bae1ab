"""The replay runner itself: steps, normalization, the diff on a mismatch, the CLI's verdicts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from acp_agent.cli import main
from acp_agent.replay.fixture import FRAMES, Fixture, Places
from acp_agent.replay.normalize import Normalizer
from acp_agent.replay.runner import replay
from acp_agent.replay.steps import StepError, Wait, WaitKind, parse_step, subset_matches

REPLAYS = Path(__file__).resolve().parents[2] / "fixtures" / "replays"
HEX = "0123456789abcdef0123456789abcdef"
OTHER_HEX = "fedcba9876543210fedcba9876543210"


def test_steps_parse_and_bad_steps_name_their_line() -> None:
    wait = parse_step({"wait": {"update": {"sessionUpdate": "tool_call"}, "timeoutMs": 50}}, "x")
    assert wait == Wait(WaitKind.UPDATE, {"sessionUpdate": "tool_call"}, 50)
    with pytest.raises(StepError, match=r"client.jsonl:3: unknown step 'sned'"):
        parse_step({"sned": {}}, "client.jsonl:3")
    with pytest.raises(StepError, match="exactly one key"):
        parse_step({"send": {}, "wait": {}}, "client.jsonl:1")
    with pytest.raises(StepError, match="unknown wait 'reply'"):
        parse_step({"wait": {"reply": 3}}, "client.jsonl:2")
    with pytest.raises(StepError, match="respond takes"):
        parse_step({"respond": {"value": 1}}, "client.jsonl:4")


def test_subsets_match_objects_recursively_and_lists_exactly() -> None:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}}
    assert subset_matches({"content": {"text": "a"}}, update)
    assert not subset_matches({"content": {"text": "b"}}, update)
    assert subset_matches({"xs": [{"a": 1}]}, {"xs": [{"a": 1, "b": 2}]})
    assert not subset_matches({"xs": [{"a": 1}]}, {"xs": [{"a": 1}, {"a": 2}]})
    assert not subset_matches({"n": 1}, {"n": True})


def test_normalizer_names_ids_times_and_paths(tmp_path: Path) -> None:
    places = Places(tmp_path / "w", tmp_path / "s", tmp_path / "f", tmp_path)
    normalize = Normalizer(places, frozenset({OTHER_HEX}))
    frame = {
        "messageId": HEX,
        "sessionId": OTHER_HEX,
        "note": f"message {HEX} of {OTHER_HEX} in {tmp_path / 'w'}/a.txt",
        "updatedAt": "2026-01-01T00:00:00Z",
    }
    assert normalize(frame) == {
        "messageId": "<id-1>",
        "sessionId": "<session-1>",
        "note": "message <id-1> of <session-1> in {cwd}/a.txt",
        "updatedAt": "<time>",
    }
    line = {"seq": 1, "time": 1700000000000, "type": "turn/start", "data": {"turn": 1}}
    assert normalize.journal_line({**line, "crc": "0badf00d"}) == {
        **line,
        "time": "<time>",
        "crc": "<crc>",
    }


@pytest.fixture
def copied(tmp_path: Path) -> Path:
    """A private copy of a small committed fixture."""
    target = tmp_path / "streamed-text"
    shutil.copytree(REPLAYS / "streamed-text", target)
    return target


@pytest.mark.subprocess
def test_a_mismatch_is_a_readable_diff_and_exit_1(
    copied: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", "run", str(copied)]) == 0
    assert capsys.readouterr().out.startswith("replay: 1/1 fixtures matched in ")

    frames = copied / FRAMES
    frames.write_text(frames.read_text().replace('"text":"wor"', '"text":"WOR"'))
    assert main(["replay", "run", str(copied)]) == 1
    out = capsys.readouterr().out
    assert "=== streamed-text: FAILED" in out
    assert "--- expected/frames.jsonl\n+++ actual/frames.jsonl\n" in out
    removed = [line for line in out.splitlines() if line.startswith("-{")]
    added = [line for line in out.splitlines() if line.startswith("+{")]
    assert len(removed) == len(added) == 1
    assert '"WOR"' in removed[0] and '"wor"' in added[0]
    assert out.rstrip().endswith("failed: streamed-text")

    assert main(["replay", "run", str(copied), "--update"]) == 0
    assert main(["replay", "run", str(copied)]) == 0


@pytest.mark.subprocess
async def test_a_wait_that_never_matches_fails_with_the_last_frames(copied: Path) -> None:
    steps = (copied / "client.jsonl").read_text().splitlines()
    never = {"wait": {"update": {"sessionUpdate": "plan"}, "timeoutMs": 300}}
    (copied / "client.jsonl").write_text("\n".join([*steps, json.dumps(never)]) + "\n")
    result = await replay(copied)
    assert not result.ok
    assert result.error is not None
    assert result.error.startswith('wait for update {"sessionUpdate": "plan"}: timed out')
    assert "last frames of this run" in result.error
    assert Fixture.load(copied).steps[-1] == Wait(WaitKind.UPDATE, {"sessionUpdate": "plan"}, 300)


def test_a_directory_without_fixtures_is_a_bad_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", "run", str(tmp_path / "nothing")]) == 2
    assert "no such fixture directory" in capsys.readouterr().err
