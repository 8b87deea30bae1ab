"""Structured logging: JSON lines on stderr (or ``--log-file``), never on stdout.

stderr is written by a daemon thread fed through a bounded queue, so a client that never reads
our stderr cannot freeze the agent: when the queue is full, lines are dropped and counted (the
count is logged once the queue drains). A log file is written the same way.

Importing this module does not import structlog, nor does ``configure``: modules log through
``get_logger``'s ``Logger``, which writes a plain event itself, as structlog would, and imports
and configures structlog only for an event with a traceback. So a process that logs no
traceback never imports it (with ``logging`` and ``pickle``: about a tenth of what a fresh
process's first ``session/new`` imported, ``docs/benchmarks.md``).
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import TYPE_CHECKING, Any, Final, TextIO

if TYPE_CHECKING:
    import queue

LEVELS: Final = ("debug", "info", "warning", "error", "critical")


class QueuedSink:
    """A file-like object whose ``write`` never blocks the caller."""

    def __init__(self, fd: int, capacity: int = 10_000) -> None:
        import queue  # here, as structlog is: logging is set up after ``initialize`` is answered
        import threading

        self._fd = fd
        self._queue: queue.Queue[str | None] = queue.Queue(capacity)
        self._full = queue.Full
        self.dropped = 0
        self._thread = threading.Thread(target=self._drain, name="log-writer", daemon=True)
        self._thread.start()

    def write(self, text: str) -> int:
        try:
            self._queue.put_nowait(text)
        except self._full:
            self.dropped += 1
        return len(text)

    def flush(self) -> None:
        pass

    def _drain(self) -> None:
        while (text := self._queue.get()) is not None:
            data = text.encode("utf-8", "replace")
            try:
                while data:
                    data = data[os.write(self._fd, data) :]
            except OSError:
                self.dropped += 1

    def close(self, timeout: float = 0.5) -> None:
        try:
            self._queue.put(None, timeout=timeout)
        except self._full:
            return
        self._thread.join(timeout)


_sink: QueuedSink | None = None
_target: TextIO | None = None
"""Where lines go once ``configure`` ran (the queued stderr or log file, or a test's stream)."""
_threshold = 0
"""The least level number ``configure`` lets through (0: not configured, everything goes to
structlog as it is configured)."""
_level: str | None = None
"""``configure``'s level, until structlog is configured with it (``_structlog``)."""
NUMBERS: Final = {name: 10 * (rank + 1) for rank, name in enumerate(LEVELS)}
"""``logging``'s number of each of ``LEVELS`` (debug 10 … critical 50)."""


def configure(
    level: str = "info", log_file: str | None = None, stream: TextIO | None = None
) -> None:
    """Set up logging for the process, once: the sink now (a bad ``--log-file`` fails at start
    as ever), structlog at once where it is imported already (a test process), else when an
    event needs it (``Logger``). ``stream`` is for tests."""
    global _sink, _target, _threshold, _level
    _threshold = NUMBERS[level.lower()]
    if stream is None:
        fd = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if log_file else 2
        _sink = QueuedSink(fd)
        atexit.register(_sink.close)  # a host that exits without ``shutdown`` keeps its lines
        _target = _sink  # type: ignore[assignment]
    else:
        _target = stream
    _level = level
    if "structlog" in sys.modules:
        _structlog()


def _structlog() -> None:
    """structlog, configured as ``configure`` was told (once)."""
    global _level
    if _level is None or _target is None:
        return
    level, _level = _level, None
    import logging

    import structlog

    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.dict_tracebacks,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.WriteLoggerFactory(file=_target),
        cache_logger_on_first_use=True,
    )


class Logger:
    """What every module logs through (``log = get_logger(__name__)``).

    Until something imports structlog, an event is written here, as the processors
    ``configure`` gives structlog would write it (the same JSON line: the bound context and the
    keywords, then ``event``, ``level`` and a UTC ISO ``timestamp``, ``json.dumps`` with
    ``repr`` for what JSON cannot hold), and an event below the level costs a comparison. An
    event with a traceback (``exception``, ``exc_info``) imports structlog, and from then on
    (and in every process that imported it: tests, ``capture_logs``) every event goes to
    structlog's logger for the name, bound to the context."""

    __slots__ = ("_context", "_name", "_real")

    def __init__(self, name: str, context: dict[str, Any] | None = None) -> None:
        self._name = name
        self._context = context or {}
        self._real: Any = None

    def bind(self, **context: Any) -> Logger:
        return Logger(self._name, {**self._context, **context})

    def debug(self, event: str, **kw: Any) -> None:
        self._emit(NUMBERS["debug"], "debug", event, kw)

    def info(self, event: str, **kw: Any) -> None:
        self._emit(NUMBERS["info"], "info", event, kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._emit(NUMBERS["warning"], "warning", event, kw)

    def error(self, event: str, **kw: Any) -> None:
        self._emit(NUMBERS["error"], "error", event, kw)

    def exception(self, event: str, **kw: Any) -> None:
        self._emit(NUMBERS["error"], "exception", event, kw)

    def _emit(self, number: int, method: str, event: str, kw: dict[str, Any]) -> None:
        if "structlog" not in sys.modules and _target is not None:
            if number < _threshold:
                return
            if method != "exception" and "exc_info" not in kw:
                _write_plain(self._context, kw, event, method)
                return
        real = self._real
        if real is None:
            _structlog()
            import structlog

            real = structlog.get_logger(self._name)  # a proxy: it follows the configuration
            if self._context:  # bound, as a bound logger is: at its first event, now
                real = real.bind(**self._context)
            self._real = real
        getattr(real, method)(event, **kw)


def _write_plain(context: dict[str, Any], kw: dict[str, Any], event: str, level: str) -> None:
    import json
    from datetime import UTC, datetime

    line = {**context, **kw}
    line["event"] = event
    line["level"] = level
    line["timestamp"] = datetime.now(tz=UTC).isoformat().replace("+00:00", "Z")
    assert _target is not None
    _target.write(json.dumps(line, default=repr) + "\n")


def get_logger(name: str) -> Logger:
    return Logger(name)


def shutdown() -> None:
    if _sink is not None:
        _sink.close()
