"""A throw-away PostgreSQL server for the cache tests: initdb into a temporary folder, listening
on a Unix socket in that folder only (no TCP port), started and stopped with pg_ctl under
bounded waits.

initdb and postgres refuse to run as root: as root they are run as the `postgres` user
(`runuser -u postgres --`), the folder made writable for it. `missing()` says what is lacking
where a server cannot be started, so that its tests skip with that message (or fail, where
RUBRICLAB_REQUIRE_POSTGRES=1 says the machine must have one, as CI does).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
SUPERUSER = "rubriclab"
SEARCH = ["/usr/local/bin", *sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for folder in SEARCH:
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _as_server_user() -> list[str] | None:
    """The command prefix that runs the server's programs as a user they accept; None when
    there is none (root without a `postgres` user or runuser)."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return None
    runuser = shutil.which("runuser")
    return [runuser, "-u", "postgres", "--"] if runuser else None


def missing() -> str | None:
    """Why no server can be started here, or None."""
    lacking = [name for name in ("initdb", "pg_ctl", "postgres") if _binary(name) is None]
    if lacking:
        return (f"no PostgreSQL server binaries {', '.join(lacking)} on PATH or in "
                f"{', '.join(SEARCH)} (install PostgreSQL's server package, e.g. "
                "apt-get install postgresql)")
    if _as_server_user() is None:
        return ("running as root, and initdb refuses root: there is no `postgres` user (or no "
                "runuser) to run it as")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'psycopg[binary]')"
    return None


class PostgresServer:
    """One server in a temporary folder; `url(database)` reaches it over its socket."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="rubriclab-pg-"))
        self.data = self.folder / "data"
        self._prefix = _as_server_user() or []
        self.started = False

    def _run(self, *argv: str, timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run([*self._prefix, *argv], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def start(self) -> PostgresServer:
        os.chmod(self.folder, 0o777)  # the postgres user writes its data and socket here
        done = self._run(_binary("initdb"), "-D", str(self.data), "-U", SUPERUSER,
                         "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions",
                         timeout=START_TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed ({done.returncode}): {done.stderr.strip()}")
        options = (f"-k {self.folder} -c listen_addresses='' -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        done = self._run(_binary("pg_ctl"), "-D", str(self.data), "-o", options,
                         "-l", str(self.folder / "server.log"), "-w",
                         "-t", str(START_TIMEOUT_S), "start", timeout=START_TIMEOUT_S + 10)
        if done.returncode != 0:
            log = (self.folder / "server.log")
            raise RuntimeError(f"pg_ctl start failed ({done.returncode}): {done.stderr.strip()}"
                               f" {log.read_text()[-2000:] if log.exists() else ''}")
        self.started = True
        return self

    def url(self, database: str = "postgres", schema: str | None = None) -> str:
        url = f"postgresql://{SUPERUSER}@/{database}?host={self.folder}"
        if schema is not None:
            url += f"&options=-csearch_path%3D{schema}"
        return url

    def stop(self) -> None:
        if self.started:
            for mode in ("fast", "immediate"):
                try:
                    done = self._run(_binary("pg_ctl"), "-D", str(self.data), "-m", mode, "-w",
                                     "-t", str(STOP_TIMEOUT_S), "stop",
                                     timeout=STOP_TIMEOUT_S + 10)
                except subprocess.TimeoutExpired:
                    continue
                if done.returncode == 0:
                    break
            self.started = False
        shutil.rmtree(self.folder, ignore_errors=True)
