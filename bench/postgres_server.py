"""A real PostgreSQL for the tests and the benchmarks: ``initdb`` in a temporary directory, a
Unix socket only (here, in ``bench/``, because the benchmarks may not import ``tests``; the tests'
fixtures are in ``tests/conftest.py``).

``start_postgres()`` finds Debian's server binaries (``/usr/lib/postgresql/<major>/bin``, or
``initdb`` on PATH), runs ``initdb`` in a fresh directory and starts ``postgres`` with
``listen_addresses=''`` (no TCP at all) and its socket in that directory. PostgreSQL refuses to
run as root, so as root the directory is given to the ``postgres`` system user (Debian's package
creates it) and both programs run as that user through ``runuser``. ``PostgresUnavailable``
says why it cannot start (the fixture turns that into a skip). ``new_database`` makes a fresh,
empty database and returns its libpq URI (``postgresql://USER@/DB?host=/socket/dir``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
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
    fsync: bool = False

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
        argv = [str(self.bin_dir / "psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1"]
        done = subprocess.run(
            [*argv, "-d", self.uri(database), "-c", sql],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(f"psql {sql!r} failed: {done.stderr}")
        return done.stdout

    def halt(self) -> None:
        """Stop the server, keeping its data (an outage; ``resume`` starts it again)."""
        if self.process.poll() is None:
            # "fast" shutdown (SIGINT) ends every session now; sent to the postmaster itself,
            # since ``runuser`` does not pass it on
            os.kill(self.postmaster_pid(), signal.SIGINT)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def postmaster_pid(self) -> int:
        lines = (self.directory / "data" / "postmaster.pid").read_text().splitlines()
        return int(lines[0])

    def resume(self) -> None:
        """Start the server again on the same data directory and socket."""
        self.process = _spawn(self.bin_dir, self.run_as, self.directory, self.fsync)
        _wait_ready(self)

    def stop(self) -> None:
        self.halt()
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


def start_postgres(*, fsync: bool = False) -> PostgresServer:
    """``fsync``: off for the tests (what they check is our transactions, not the disk's; a
    shutdown checkpoint would otherwise sync every test database), on for the benchmarks."""
    bin_dir = _bin_dir()
    user = _runner()
    directory = Path(tempfile.mkdtemp(prefix="acp-pg-", dir="/tmp"))
    data = directory / "data"
    server: PostgresServer | None = None
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(directory, entry.pw_uid, entry.pw_gid)
    try:
        initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust"]
        init = subprocess.run(
            _as(user, [*initdb, "--no-sync", "-E", "UTF8", "--locale=C"]),
            capture_output=True,
            text=True,
            check=False,
        )
        if init.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {init.stderr.strip()}")
        process = _spawn(bin_dir, user, directory, fsync)
        server = PostgresServer(directory, bin_dir, user, process, fsync)
        _wait_ready(server)
    except BaseException:
        if server is not None:
            server.stop()
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return server


def _spawn(
    bin_dir: Path, user: str | None, directory: Path, fsync: bool
) -> subprocess.Popen[bytes]:
    argv = [str(bin_dir / "postgres"), "-D", str(directory / "data"), "-k", str(directory)]
    argv += ["-c", "listen_addresses=", "-c", f"fsync={'on' if fsync else 'off'}"]
    argv += ["-c", "max_connections=200"]
    with (directory / "server.log").open("ab") as log:
        return subprocess.Popen(_as(user, argv), stdout=log, stderr=log)


def _wait_ready(server: PostgresServer) -> None:
    """Until ``pg_isready`` says the server accepts connections (it answers "no response" at
    once while the socket does not exist yet), or the server exits, or the time is up."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and server.process.poll() is None:
        probe = [str(server.bin_dir / "pg_isready"), "-q", "-h", str(server.socket_dir)]
        ready = subprocess.run(
            [*probe, "-U", SUPERUSER, "-t", "5"],
            check=False,
        )
        if ready.returncode == 0:
            return
        time.sleep(0.05)
    log = (server.directory / "server.log").read_text(errors="replace")
    raise PostgresUnavailable(f"postgres did not start: {log}".strip())
