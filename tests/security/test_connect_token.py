"""Item 3 of issue 36: the bearer token of the local Spark Connect server reaches only that server.

``session(remote="local[...]")`` binds the server to 127.0.0.1. A client connecting to
``localhost`` lets gRPC try ``[::1]`` first, where any local user may listen on the same port and
receive the token. The Connect server cannot share the JVM of the shared classic test session, so
the session runs in its own process (``APP`` below).
"""

from __future__ import annotations

import importlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

session_module = importlib.import_module("stratalake.spark.session")

SECRET = "tok-3f9a1c77e2"

# When the Connect client opens its gRPC channel, the server is up: like another local user who saw
# its port in `ss -ltn`, the app then listens on [::1] at that port and counts who connects there.
# It then runs one query through the Connect session.
APP = r"""
import json, os, socket, sys, threading
import grpc

seen = []
stop = threading.Event()
armed = threading.Event()

def spy_on_server_port():
    from pyspark.sql import SparkSession as Classic
    service = getattr(Classic._instantiatedSession._jvm, "org.apache.spark.sql.connect.service.SparkConnectService$")
    spy = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    spy.bind(("::1", getattr(service, "MODULE$").localPort()))
    spy.listen()
    spy.settimeout(0.2)
    def watch():
        while not stop.is_set():
            try:
                conn, peer = spy.accept()
            except OSError:
                continue
            seen.append(peer[0])
            conn.close()  # says nothing: a gRPC client that picked this address fails or retries
            threading.Timer(20, give_up).start()
    threading.Thread(target=watch, daemon=True).start()

def give_up():
    # A client stuck on [::1] retries for minutes: report it rather than wait.
    print(json.dumps({"rows": None, "spy_connections": seen}), flush=True)
    os._exit(0)

def spying(open_channel):
    def wrapper(*args, **kwargs):
        if not armed.is_set():
            armed.set()
            spy_on_server_port()
        return open_channel(*args, **kwargs)
    return wrapper

grpc.secure_channel = spying(grpc.secure_channel)
grpc.insecure_channel = spying(grpc.insecure_channel)

from stratalake.spark import session
spark = session(sys.argv[1], remote="local[1]")
rows = spark.sql("SELECT 1 AS one").collect()
from pyspark.sql import SparkSession as Classic
server = Classic._instantiatedSession
stop.set()
print(json.dumps({
    "rows": [r.one for r in rows],
    "spy_connections": seen,
    "server_token_conf": server.sparkContext.getConf().get("spark.connect.authenticate.token"),
    "server_address": server.sparkContext.getConf().get("spark.connect.grpc.binding.address"),
}))
spark.stop()
"""


def _skip_without_ipv6_loopback() -> None:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as v6:
            v6.bind(("::1", 0))
    except OSError as e:
        pytest.skip(f"IPv6 loopback [::1] is unavailable on this machine ({e}): nobody can listen there")


@pytest.mark.spark
@pytest.mark.slow
def test_local_connect_client_never_connects_to_a_listener_on_ipv6_loopback(tmp_path: Path) -> None:
    pytest.importorskip("grpc")
    from tests.spark.conftest import _build_jar_if_missing

    _build_jar_if_missing()
    _skip_without_ipv6_loopback()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_CONNECT_AUTHENTICATE_TOKEN": SECRET}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    env.pop("GRPC_DNS_RESOLVER", None)  # gRPC's default resolver gives [::1] first for localhost
    proc = subprocess.run(
        [sys.executable, "-c", APP, str(tmp_path / "wh")],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, proc.stderr[-5000:]
    result = json.loads(lines[-1])
    assert result["spy_connections"] == [], "the Connect client connected to a listener on [::1]"
    assert result["rows"] == [1]
    # The server knows its token from its own conf, not only from an inherited environment.
    assert result["server_token_conf"] == SECRET
    assert result["server_address"] == "127.0.0.1"
    assert f"token={SECRET}" not in proc.stdout + proc.stderr


def test_remote_error_does_not_show_the_token_of_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused ``sc://`` server is named in the error without the ``;token=`` of its URL."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    class NoExtensions:
        class conf:  # stands in for SparkSession.conf
            @staticmethod
            def get(key: str, default: Any = None) -> Any:
                return ""

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", lambda self: NoExtensions())
    monkeypatch.setattr(session_module, "check_spark_version", lambda version=None: None)
    with pytest.raises(Exception, match="was not started with stratalake's session extensions") as info:
        session_module.session("/wh", remote=f"sc://db.example:15002/;user_id=me;token={SECRET}")
    assert SECRET not in str(info.value)
    assert "sc://db.example:15002" in str(info.value)
