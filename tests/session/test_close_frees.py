"""A closed session is freed as soon as nobody holds it, by reference counting alone: its
history is not tracked by the cyclic garbage collector (``journal/events.py``), so a reference
cycle through its actor would keep every entry alive until some later collection. The actor
held its ``Session``'s bound methods (``system_prompt``, the permissions' ``on_switch``), and
the ``Session`` its actor; ``Sessions.close`` drops them (``session/service.py``, ``_unlink``).
Found by the replay benchmark: the previous session's history was freed inside the next
``session/load`` (``docs/benchmarks.md``, "Replay <= 2.5x raw decoding")."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import anyio.lowlevel

from acp_agent.api import Agent
from acp_agent.model.script import ScriptModel
from tests.session.support import lines


async def test_a_closed_session_and_its_history_go_without_the_cyclic_collector(
    tmp_path: Path,
) -> None:
    model = ScriptModel.from_lines(lines('{"text": "hello"}'), tmp_path / "requests.jsonl")
    async with Agent.open(tmp_path / "state", model) as agent:
        session = await agent.new_session(tmp_path)
        await (await session.send("hi")).outcome()
        assert session.entries  # the history the actor holds (msgspec structs take no weakref)
        actor = weakref.ref(session.actor)
        sessions = agent._sessions  # the front door's own registry (no public close on Agent)
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            await sessions.close(session)
            del session
            for _ in range(100):  # the actor's task ends a few loop turns after the close
                if actor() is None:
                    break
                await anyio.lowlevel.checkpoint()
            assert actor() is None
        finally:
            if was_enabled:
                gc.enable()
