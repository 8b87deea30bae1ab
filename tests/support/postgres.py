"""A real PostgreSQL for the tests: ``initdb`` in a temporary directory, a Unix socket only.

``start_postgres()`` finds Debian's server binaries (``/usr/lib/postgresql/<major>/bin``, or
``initdb`` on PATH), runs ``initdb`` in a fresh directory and starts ``postgres`` with
``listen_addresses=''`` (no TCP at all) and its socket in that directory. PostgreSQL refuses to
run as root, so as root the directory is given to the ``postgres`` system user (Debian's package
creates it) and both programs run as that user through ``runuser``. ``PostgresUnavailable``
says why it cannot start (the fixture turns that into a skip). ``new_database`` makes a fresh,
empty database and returns its libpq URI (``postgresql://USER@/DB?host=/socket/dir``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "acp"
START_TIMEOUT_S = 30


class PostgresUnavailable(Exception):
    """Why no PostgreSQL can be started here."""


@dataclass
class PostgresServer:
    directory: Path
    bin_dir: Path
    run_as: str | None
    process: subprocess.Popen[bytes]

    @property
    def socket_dir(self) -> Path:
        return self.directory

    def uri(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@/{database}?host={self.socket_dir}"

    def new_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        self.psql(f"CREATE DATABASE {name}")
        return self.uri(name)

    def psql(self, sql: str, database: str = "postgres") -> str:
        done = subprocess.run(
            [str(self.bin_dir / "psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1"]
            + ["-d", self.uri(database), "-c", sql],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(f"psql {sql!r} failed: {done.stderr}")
        return done.stdout

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # "smart" shutdown would wait for clients; SIGTERM does not
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if found:
        return Path(found[0]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise PostgresUnavailable(
            "PostgreSQL's server is not installed (no initdb): apt-get install -y postgresql"
        )
    return Path(initdb).parent


def _runner() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailable(
            "running as root and there is no 'postgres' user to run the server as"
        ) from None
    if shutil.which("runuser") is None:
        raise PostgresUnavailable("running as root and runuser is missing")
    return "postgres"


def _as(user: str | None, argv: list[str]) -> list[str]:
    return argv if user is None else ["runuser", "-u", user, "--", *argv]


def start_postgres() -> PostgresServer:
    bin_dir = _bin_dir()
    user = _runner()
    directory = Path(tempfile.mkdtemp(prefix="acp-pg-", dir="/tmp"))
    data = directory / "data"
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(directory, entry.pw_uid, entry.pw_gid)
    try:
        init = subprocess.run(
            _as(user, [str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER])
            + ["--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"],
            capture_output=True,
            text=True,
            check=False,
        )
        if init.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {init.stderr.strip()}")
        argv = [str(bin_dir / "postgres"), "-D", str(data), "-k", str(directory)]
        argv += ["-c", "listen_addresses=", "-c", "fsync=on", "-c", "max_connections=200"]
        with (directory / "server.log").open("wb") as log:
            process = subprocess.Popen(_as(user, argv), stdout=log, stderr=log)
        server = PostgresServer(directory, bin_dir, user, process)
        _wait_ready(server)
    except BaseException:
        with contextlib.suppress(NameError):
            server.stop()
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return server


def _wait_ready(server: PostgresServer) -> None:
    """Until ``pg_isready`` says the server accepts connections (it answers "no response" at
    once while the socket does not exist yet), or the server exits, or the time is up."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and server.process.poll() is None:
        ready = subprocess.run(
            [str(server.bin_dir / "pg_isready"), "-q", "-h", str(server.socket_dir)]
            + ["-U", SUPERUSER, "-t", "5"],
            check=False,
        )
        if ready.returncode == 0:
            return
        time.sleep(0.05)
    log = (server.directory / "server.log").read_text(errors="replace")
    raise PostgresUnavailable(f"postgres did not start: {log}".strip())
