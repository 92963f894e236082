"""A throw-away PostgreSQL server (`postgres_server.PostgresServer`) that can also be stopped
and started again on the same data folder and socket, as a restart or a failover does to a
running job."""

from __future__ import annotations

import subprocess

from .postgres_server import START_TIMEOUT_S, STOP_TIMEOUT_S, PostgresServer, _binary


class RestartablePostgresServer(PostgresServer):
    def _options(self) -> str:
        # As PostgresServer.start gives them: the socket in its folder, no TCP port.
        return (f"-k {self.folder} -c listen_addresses='' -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")

    def halt(self) -> None:
        """Stop the server (fast shutdown: its sessions are ended with AdminShutdown), keeping
        its data."""
        done = self._run(_binary("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w",
                         "-t", str(STOP_TIMEOUT_S), "stop", timeout=STOP_TIMEOUT_S + 10)
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl stop failed ({done.returncode}): {done.stderr.strip()}")

    def resume(self) -> None:
        """Start the halted server again on its data folder and socket."""
        done = self._run(_binary("pg_ctl"), "-D", str(self.data), "-o", self._options(),
                         "-l", str(self.folder / "server.log"), "-w",
                         "-t", str(START_TIMEOUT_S), "start", timeout=START_TIMEOUT_S + 10)
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed ({done.returncode}): {done.stderr.strip()}")

    def running(self) -> bool:
        try:
            done = self._run(_binary("pg_ctl"), "-D", str(self.data), "status", timeout=30)
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0
