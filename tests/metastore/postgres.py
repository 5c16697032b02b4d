"""A throw-away PostgreSQL server on 127.0.0.1 (a random free port, data in a temp dir).

Debian's server binaries (``/usr/lib/postgresql/<major>/bin``; ``make test-metastores`` installs
them with ``apt-get install -y postgresql`` when missing). ``initdb`` refuses to run as root, so as
root the server runs as the ``postgres`` user the package creates. Password authentication
(scram-sha-256) for user ``lake``, so the catalog's ``jdbc.user``/``jdbc.password`` are exercised.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

USER = "lake"
PASSWORD = "s3cret pass'word"  # a quote and a space: the password is a bound argument, not SQL
DATABASE = "catalog"


@dataclass(frozen=True)
class Server:
    host: str
    port: int

    @property
    def uri(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{DATABASE}"

    def options(self) -> dict[str, str]:
        return {"metastore": "jdbc", "uri": self.uri, "jdbc.user": USER, "jdbc.password": PASSWORD}


def binaries() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise RuntimeError(
            "PostgreSQL's server binaries are not installed (/usr/lib/postgresql/<major>/bin); "
            "run `make test-metastores`, which installs them (apt-get install -y postgresql)"
        )
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running() -> Iterator[Server]:
    bindir = binaries()
    root = tempfile.mkdtemp(prefix="stratalake-pg-")
    as_user: list[str] = []
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(root, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, pwfile = f"{root}/data", f"{root}/pw"
    with open(pwfile, "w") as f:
        f.write(PASSWORD + "\n")
    if as_user:
        os.chown(pwfile, pwd.getpwnam("postgres").pw_uid, -1)

    def run(*cmd: str) -> None:
        proc = subprocess.run([*as_user, *cmd], capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd[0]} failed: {proc.stdout[-2000:]} {proc.stderr[-2000:]}")

    port = _free_port()
    run(
        f"{bindir}/initdb", "-D", data, "-U", USER, f"--pwfile={pwfile}", "--auth=scram-sha-256", "-E", "UTF8"
    )
    opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off"
    run(f"{bindir}/pg_ctl", "-D", data, "-l", f"{root}/log", "-o", opts, "-w", "-t", "60", "start")
    try:
        env = {**os.environ, "PGPASSWORD": PASSWORD}
        proc = subprocess.run(
            [f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", USER, DATABASE],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"createdb failed: {proc.stderr}")
        yield Server("127.0.0.1", port)
    finally:
        subprocess.run(
            [*as_user, f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"],
            capture_output=True,
            timeout=60,
        )
        time.sleep(0.1)
        shutil.rmtree(root, ignore_errors=True)
