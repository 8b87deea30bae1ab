from __future__ import annotations

from pathlib import Path

import anyio

from acp_agent.api import reference_session
from acp_agent.journal.events import UserMessage
from acp_agent.journal.invariant import check
from acp_agent.journal.reader import load_journal
from acp_agent.turn.vocabulary import Finished, StopReason
from tests.session.support import lines, requests, scripted_agent, types


async def test_reference_is_two_plain_messages_and_immune_to_later_changes(
    tmp_path: Path,
) -> None:
    script = lines('{"text": "the answer is 42"}', '{"text": "noted"}', '{"text": "later"}')
    async with scripted_agent(tmp_path, script) as (agent, log):
        other = await agent.new_session(tmp_path, "other")
        await (await other.send("what is the answer?")).outcome()
        await other.when_idle()
        target = await agent.new_session(tmp_path, "target")
        injected, pending = await reference_session(
            target, tmp_path / "state", "other", "Summarise what session other found."
        )
        assert await pending.outcome() == Finished(StopReason.END_TURN)
        # the referenced session changes afterwards; the target's history must not
        await (await other.send("something else")).outcome()
        await target.when_idle()
        assert types(target.entries)[:3] == ["user/message", "turn/start", "user/message"]
        ref = target.entries[0].event
        assert isinstance(ref, UserMessage)
        assert ref.id == injected.message_id
        assert ref.source == {"kind": "session-ref", "sessionId": "other", "seq": 6}
        text = ref.content[0].text  # type: ignore[union-attr]
        assert "[user] what is the answer?" in text
        assert "[assistant] the answer is 42" in text
        assert "something else" not in text
        second_request = requests(log)[1]
        kinds = [m["source"]["kind"] for m in second_request["messages"] if m["role"] == "user"]
        assert kinds == ["session-ref", "user"]
    loaded = load_journal(tmp_path / "state" / "sessions" / "target" / "journal.jsonl")
    assert check(loaded.header, loaded.entries) == []


async def test_snapshot_stops_before_an_open_turn(tmp_path: Path) -> None:
    from acp_agent.session.crossref import snapshot

    script = lines('{"text": "done"}', '{"text": "partial", "hang": true}')
    async with scripted_agent(tmp_path, script) as (agent, log):
        other = await agent.new_session(tmp_path, "other")
        await (await other.send("first")).outcome()
        await other.inject("between")
        await other.when_idle()  # the snapshot reads what is durable
        await other.send("second (hangs)")
        while len(requests(log)) < 2:  # noqa: ASYNC110 - the log file has no event to await
            await anyio.sleep(0.01)
        assert '"turn":2' in (tmp_path / "state/sessions/other/journal.jsonl").read_text()
        snap = snapshot(tmp_path / "state", "other")
        assert "between" in snap.content[0].text  # type: ignore[union-attr]
        assert "second" not in snap.content[0].text  # type: ignore[union-attr]
        await other.cancel()
