"""Progress bars for long work, on stderr when it is a terminal, and nothing otherwise.

``progress(description, total, ...)`` yields a ``Progress``: call ``advance()`` per unit of
work done. The bar is tqdm's, drawn on stderr, and only when stderr is a terminal and the work
is long (``total`` at least ``long_from``): then, and only then, tqdm is imported, so a script,
a pipe, a CI log or a short run pays nothing and sees nothing. tqdm was chosen over rich for its
import cost (about 15 ms against rich's 60-100 ms for a progress bar) and because it draws on
any terminal with no markup of its own. The bar is removed when the work ends (``leave=False``):
what the command prints afterwards stands alone.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tqdm import tqdm


class Progress(Protocol):
    def advance(self, count: int = 1) -> None: ...

    def describe(self, text: str) -> None:
        """What is being worked on now (shown after the description)."""

    def note(self, line: str) -> None:
        """A line for stderr, printed above the bar when there is one."""


class _Quiet:
    def advance(self, count: int = 1) -> None:
        pass

    def describe(self, text: str) -> None:
        pass

    def note(self, line: str) -> None:
        print(line, file=sys.stderr, flush=True)


class _Bar:
    def __init__(self, bar: tqdm[Any]) -> None:
        self._bar = bar

    def advance(self, count: int = 1) -> None:
        self._bar.update(count)

    def describe(self, text: str) -> None:
        self._bar.set_postfix_str(text, refresh=False)

    def note(self, line: str) -> None:
        self._bar.write(line, file=sys.stderr)


def shows_progress(stream: IO[str] | None = None) -> bool:
    """Whether a bar would be drawn on ``stream`` (default: stderr): it is a terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # replaced by an object without it, or closed
        return False


@contextmanager
def progress(
    description: str, total: int, *, unit: str = "it", long_from: int = 1
) -> Iterator[Progress]:
    """A bar for ``total`` units of work when stderr is a terminal and ``total >= long_from``."""
    if total < long_from or not shows_progress():
        yield _Quiet()
        return
    from tqdm import tqdm

    with tqdm(
        total=total,
        desc=description,
        unit=unit,
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
        mininterval=0.1,
    ) as bar:
        yield _Bar(bar)
