"""A worker that reports after its session was closed must not take the process down.

Found by ``test_interleavings.py`` (about one run in forty): a prompt's admission finished just
as a ``cancel`` answered the prompt, so the session went quiet and was closed; the admission
worker then reported ``Admitted`` into the closed mailbox in the instant between ``stop`` and
the actor's loop ending, and the ``ClosedResourceError`` ended the actor's task group — in the
server, the task group of every session. That instant cannot be scheduled from outside, so the
second test hands the closed actor a late worker result directly.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from structlog.testing import capture_logs

from acp_agent.content import ContentBlock
from acp_agent.turn.admission import Allow, Decision
from acp_agent.turn.vocabulary import Blocked, Finished, StopReason
from tests.session.support import lines, scripted_agent


class LateAdmission:
    """Lets every prompt in, but only once released, whatever was cancelled meanwhile."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def admit(self, session_id: str, content: list[ContentBlock]) -> Decision:
        self.entered.set()
        with anyio.CancelScope(shield=True):
            await self.release.wait()
        return Allow(content)


async def test_a_prompt_cancelled_while_its_admission_finishes_opens_nothing(
    tmp_path: Path,
) -> None:
    admission = LateAdmission()
    async with scripted_agent(tmp_path, lines('{"text": "never"}'), admission=admission) as (
        agent,
        log,
    ):
        session = await agent.new_session(str(tmp_path))
        pending = await session.send("hello")
        await admission.entered.wait()
        await session.cancel()
        outcome = await pending.outcome()
        admission.release.set()
        await session.when_idle()
        entries = session.entries
        await session.dispose()
    assert outcome == Finished(StopReason.CANCELLED)
    assert entries == []  # the cancelled prompt opened no turn and wrote nothing
    assert not log.exists()  # the model was never asked


async def test_a_worker_result_after_close_is_dropped_not_raised(tmp_path: Path) -> None:
    with capture_logs() as logs:
        async with scripted_agent(tmp_path, []) as (agent, _):
            session = await agent.new_session(str(tmp_path))
            actor = session.actor
            await session.dispose()
            await actor._report(Blocked(ticket=1, reason="late"))  # raised ClosedResourceError
            await anyio.sleep(0.05)  # the loop has ended: the receiving side is gone too
            await actor._report(Blocked(ticket=2, reason="later"))
    dropped = [e for e in logs if e["event"] == "worker_result_after_stop"]
    assert [e["input"] for e in dropped] == ["Blocked", "Blocked"]
