"""Which journal store a state dir uses: decided at start-up, opened at first use.

Deliberately light (it imports nothing of the journal): the process chooses its store while it
checks its configuration, before the first ``initialize`` is answered, and that answer must
not wait for the journal's modules (``tests/integration/test_startup.py``). ``choose_store``
checks the URL's shape and that the PostgreSQL driver is installed (without importing it);
``store.journal_store`` opens the chosen store when a session first needs it.

The order, as for every option: the ``--journal-store`` flag (which carries
``ACP_AGENT_JOURNAL_STORE`` as its default), then ``[journal] store`` of the config file, then
``file``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from acp_agent.config_file import ConfigError

FILE_STORE: Final = "file"
STORE_ENV: Final = "ACP_AGENT_JOURNAL_STORE"
POSTGRES_INSTALL_HINT: Final = "pip install 'acp-agent-server[postgres]'"
"""How to get the PostgreSQL store's driver: the one place that names the distribution."""
POSTGRES_SCHEMES: Final = ("postgresql", "postgres")
DRIVER: Final = "psycopg"

_chosen: dict[Path, str] = {}


class StoreConfigError(ConfigError):
    """A journal store URL that cannot be used (the message says why and what to do)."""


def choose_store(
    state_dir: Path, flag: str | None, config: dict[str, Any], config_path: Path | None
) -> str:
    """Check and remember the store of ``state_dir`` for this process (``StoreConfigError``)."""
    url = checked_url(store_url(flag, config, config_path))
    remember_choice(state_dir, url)
    return url


def remember_choice(state_dir: Path, url: str) -> None:
    _chosen[state_dir] = url


def chosen(state_dir: Path) -> str:
    return _chosen.get(state_dir, FILE_STORE)


def forget_choice(state_dir: Path) -> None:
    _chosen.pop(state_dir, None)


def store_url(flag: str | None, config: dict[str, Any], config_path: Path | None) -> str:
    if flag:
        return flag
    table = config.get("journal", {})
    if not isinstance(table, dict):
        raise StoreConfigError(f"{config_path}: [journal] must be a table")
    value = table.get("store", FILE_STORE)
    if not isinstance(value, str) or not value:
        raise StoreConfigError(f"{config_path}: journal.store must be a non-empty string")
    return value


def is_postgres(url: str) -> bool:
    return "://" in url and url.partition("://")[0].lower() in POSTGRES_SCHEMES


def checked_url(url: str) -> str:
    if url == FILE_STORE:
        return url
    if not is_postgres(url):
        raise StoreConfigError(
            f"unknown journal store {redacted(url)!r}: expected {FILE_STORE!r} or a libpq URI "
            "(postgresql://USER@/DB?host=/socket/dir or postgresql://USER:PASS@HOST:PORT/DB)"
        )
    if importlib.util.find_spec(DRIVER) is None:
        raise missing_driver(url, DRIVER)
    return url


def missing_driver(url: str, module: str | None) -> StoreConfigError:
    return StoreConfigError(
        f"the journal store {redacted(url)} needs the postgres extra ({module or DRIVER} is "
        f"missing): {POSTGRES_INSTALL_HINT}"
    )


def redacted(url: str) -> str:
    """``url`` without its password."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<unparsable URL>"
    if password is None:
        return url
    netloc = parts.netloc.replace(f":{password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
