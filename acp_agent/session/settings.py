"""A session's settings that outlive the process: its mode, its model, its system prompt, its
sandbox policy, and what it learned of its model's window and tokens.

They are not history, so they are not journal events: a side file ``settings.json`` in the
session directory, beside the title, rewritten whole (temp file, ``fsync``, rename) whenever the
client changes one through ``session/set_mode`` or ``session/set_config_option``. ``session/load``
and ``session/resume`` start the session with them, and ``session/fork`` copies the parent's.
A shared journal store keeps a copy for the next host to open the session (``store.py``).

Reading never fails a load: a missing file is the defaults; an unreadable or malformed one is
logged (``session_settings_unreadable``) and is the defaults too. A value that no longer applies
(a model this server does not offer) is the caller's to drop.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import msgspec

from acp_agent.journal.files import fsync_dir
from acp_agent.journal.paths import session_dir
from acp_agent.journal.store import keep_side_file
from acp_agent.logs import get_logger
from acp_agent.session.system_prompt import SessionPrompt
from acp_agent.turn.gauge import Learned

log = get_logger(__name__)

SETTINGS_FILE = "settings.json"


class SessionSettings(msgspec.Struct, frozen=True, omit_defaults=True):
    mode: str | None = None
    """A ``Mode`` value (``read-only``, ``plan``, ``ask``, ``auto-edit``, ``full-access``)."""
    model: str | None = None
    """A model spec the client chose (``openai:gpt-4.1``); ``None`` is the server's default."""
    thought_level: str | None = None
    """The thinking level the client chose (``low`` … ``high``); ``None``: the model's own."""
    system_prompt: SessionPrompt | None = None
    """The client's ``systemPrompt`` for the session (``system_prompt.py``); kept until the
    client sends another one with load, resume or fork."""
    sandbox: str | None = None
    """A ``SandboxPolicy`` value the session chose; ``None``: the process's (config or default)."""
    learned: Learned | None = None
    """What the session learned of its model's window and tokens (``turn/gauge.py``)."""


def read_settings(directory: Path) -> SessionSettings:
    path = directory / SETTINGS_FILE
    try:
        return msgspec.json.decode(path.read_bytes(), type=SessionSettings)
    except FileNotFoundError:
        return SessionSettings()
    except (OSError, msgspec.DecodeError) as exc:
        log.warning("session_settings_unreadable", path=str(path), error=str(exc))
        return SessionSettings()


def write_settings(directory: Path, settings: SessionSettings) -> None:
    """Replace the file atomically; its contents are durable before the rename, the rename
    once this returns."""
    tmp = directory / f".{SETTINGS_FILE}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, msgspec.json.encode(settings))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, directory / SETTINGS_FILE)
    fsync_dir(directory)
    keep_side_file(directory, SETTINGS_FILE, msgspec.json.encode(settings))


async def load_settings(state_dir: Path, session_id: str) -> SessionSettings:
    """``read_settings`` of a session, off the event loop."""
    return await anyio.to_thread.run_sync(read_settings, session_dir(state_dir, session_id))


async def save_settings(state_dir: Path, session_id: str, settings: SessionSettings) -> None:
    """``write_settings`` of a session, off the event loop. A failure is logged
    (``session_settings_write_failed``), not raised: the session goes on with what it has."""
    try:
        directory = session_dir(state_dir, session_id)
        await anyio.to_thread.run_sync(write_settings, directory, settings)
    except OSError as exc:
        log.warning("session_settings_write_failed", session_id=session_id, error=str(exc))
