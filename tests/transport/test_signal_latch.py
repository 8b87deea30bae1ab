"""``transport.prelude.SignalLatch``: each signal before the event loop's receiver is taken once.

The handoff it must survive is asyncio's ``add_signal_handler`` (CPython 3.11,
``Lib/asyncio/unix_events.py``): ``signal.set_wakeup_fd(self._csock.fileno())`` first, then
``signal.signal(sig, _sighandler_noop)``. The C-level handler writes the signal's number to the
wakeup fd set at that instant (``Modules/signalmodule.c``, ``trip_signal``) and runs the Python
handler installed when the interpreter next checks (``signal`` docs: "Python signal handlers
are always executed in the main Python thread ... between bytecode instructions"). A signal
between the two steps reaches the loop through its wakeup fd *and* the old handler. Each check
runs in a fresh interpreter (a signal handler and a wakeup fd are process-wide).
"""

from __future__ import annotations

import signal

import pytest

from tests.support.process import python_output

pytestmark = pytest.mark.subprocess


PREAMBLE = """
import os, signal
from acp_agent.transport.prelude import Interrupted, SignalLatch
latch = SignalLatch()
"""


def test_signals_before_the_loop_are_taken_once_in_order() -> None:
    out = python_output(
        PREAMBLE
        + "os.kill(os.getpid(), signal.SIGTERM)\n"
        + "os.kill(os.getpid(), signal.SIGINT)\n"
        + "print(latch.take(), latch.take())\n"
    )
    assert out == f"[{int(signal.SIGTERM)}, {int(signal.SIGINT)}] []"


def test_a_signal_in_the_loops_handoff_is_the_loops_alone() -> None:
    # asyncio's two steps, done by hand with the signal in between: the loop's wakeup fd has
    # it; the latch, whose handler still ran, does not count it (a list kept by the handler did)
    out = python_output(
        PREAMBLE
        + "ran = []\n"
        + "signal.signal(signal.SIGTERM, lambda n, f: (ran.append(n), latch._on_signal(n, f)))\n"
        + "r, w = os.pipe(); os.set_blocking(w, False)\n"
        + "signal.set_wakeup_fd(w)\n"
        + "os.kill(os.getpid(), signal.SIGTERM)\n"
        + "signal.signal(signal.SIGTERM, lambda n, f: None)\n"
        + "print(len(ran), latch.take(), list(os.read(r, 64)))\n"
    )
    assert out == f"1 [] [{int(signal.SIGTERM)}]"


def test_while_blocking_a_signal_interrupts() -> None:
    out = python_output(
        PREAMBLE
        + "latch.blocking = True\n"
        + "try:\n"
        + "    os.kill(os.getpid(), signal.SIGINT)\n"
        + "    print('not interrupted')\n"
        + "except Interrupted as exc:\n"
        + "    print('interrupted', exc.signum == signal.SIGINT)\n"
    )
    assert out == "interrupted True"
