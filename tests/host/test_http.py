"""The one retry rule, against a real HTTP server on localhost that fails, then answers."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from envforge.errors import ResolveError
from envforge.host import http
from envforge.host.fetch import FileRef, download
from envforge.resolve.deb.mirror import HttpFetch

BODY = b"the real answer\n"
Serve = Callable[..., str]  # (script, port=0, tls=None) -> the server's base URL


@dataclass
class Script:
    """What the server does for each request in turn, then 200 with BODY for the rest:
    a status (with an empty body), "drop" (close without answering) or "stall" (answer
    after ``stall`` seconds)."""

    steps: list[int | str]
    stall: float = 1.0
    retry_after: str | None = None
    seen: list[dict[str, str]] = field(default_factory=list)


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            script.seen.append({"path": self.path, **dict(self.headers.items())})
            step = script.steps.pop(0) if script.steps else 200
            if step == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if step == "stall":
                time.sleep(script.stall)
                step = 200
            assert isinstance(step, int)
            body = BODY if step == 200 else b""
            self.send_response(step)
            if step == 429 and script.retry_after is not None:
                self.send_header("Retry-After", script.retry_after)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def serve() -> Iterator[Serve]:
    servers: list[ThreadingHTTPServer] = []

    def start(script: Script, port: int = 0, tls: ssl.SSLContext | None = None) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", port), _handler(script))
        if tls is not None:
            server.socket = tls.wrap_socket(server.socket, server_side=True)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("steps", [[503, 502], [500], ["drop"], ["drop", 504]],
                         ids=["503-502", "500", "dropped", "dropped-504"])
def test_server_errors_and_dropped_connections_are_retried(serve: Serve,
                                                          steps: list[int | str]) -> None:
    script = Script(list(steps))
    url = serve(script)

    with http.session() as client:
        response = client.get(f"{url}/x")

    assert (response.status_code, response.content) == (200, BODY)
    assert len(script.seen) == len(steps) + 1


def test_429_waits_as_long_as_retry_after_says(serve: Serve) -> None:
    script = Script([429], retry_after="1")
    url = serve(script)
    start = time.monotonic()

    with http.session() as client:
        response = client.get(f"{url}/x")

    assert response.status_code == 200
    assert len(script.seen) == 2
    assert time.monotonic() - start >= 1.0


def test_a_404_is_an_answer_not_retried(serve: Serve) -> None:
    script = Script([404])
    url = serve(script)

    with http.session() as client:
        assert client.get(f"{url}/x").status_code == 404
    assert len(script.seen) == 1


def test_a_server_that_keeps_failing_is_given_up_on_with_its_last_answer(serve: Serve) -> None:
    """1 + RETRIES tries, with backoff between them; the caller sees the 503 itself."""
    script = Script([503] * 10)
    url = serve(script)
    start = time.monotonic()

    with http.session() as client:
        response = client.get(f"{url}/x")

    assert response.status_code == 503
    assert len(script.seen) == 1 + http.RETRIES
    assert time.monotonic() - start >= http.BACKOFF * (1 + 2)  # no sleep before the first retry


def test_a_refused_connection_is_retried_until_the_server_is_up(serve: Serve) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = Script([])
    threading.Timer(0.5, serve, args=(script, port)).start()

    with http.session() as client:
        response = client.get(f"http://127.0.0.1:{port}/x")

    assert (response.status_code, response.content) == (200, BODY)


def test_a_request_without_a_timeout_gets_the_default(serve: Serve,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The stalled first answer times out (TIMEOUT's read part) and is tried again."""
    monkeypatch.setattr(http, "TIMEOUT", (5.0, 0.3))
    script = Script(["stall"], stall=2.0)
    url = serve(script)
    start = time.monotonic()

    with http.session() as client:
        response = client.get(f"{url}/x")

    assert response.content == BODY
    assert len(script.seen) == 2
    assert time.monotonic() - start < 2.0


def test_every_request_carries_envforges_user_agent(serve: Serve) -> None:
    script = Script([])
    url = serve(script)

    with http.session() as client:
        client.get(f"{url}/x")

    assert script.seen[0]["User-Agent"].startswith("envforge/")


def test_the_proxy_comes_from_the_environment(serve: Serve,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY names the local server, which then sees the absolute URL of another host."""
    script = Script([])
    proxy = serve(script)
    monkeypatch.setenv("HTTP_PROXY", proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    with http.session() as client:
        response = client.get("http://mirror.example.invalid/dists/x")

    assert response.content == BODY
    assert script.seen[0]["path"] == "http://mirror.example.invalid/dists/x"


# -- the clients that use it -----------------------------------------------------------------

def test_a_download_survives_a_503_then_a_dropped_connection(serve: Serve, tmp_path: Path) -> None:
    import hashlib

    script = Script([503, "drop"])
    url = serve(script)
    ref = FileRef(url=f"{url}/f.whl", sha256=hashlib.sha256(BODY).hexdigest(), filename="f.whl")

    download(ref, tmp_path / "f.whl")

    assert (tmp_path / "f.whl").read_bytes() == BODY
    assert script.seen[-1]["User-Agent"].startswith("envforge/")


def test_the_debian_fetch_retries_then_names_the_status_it_gave_up_on(serve: Serve) -> None:
    retried, failing = Script([502]), Script([500] * 10)
    assert HttpFetch(timeout=10)(f"{serve(retried)}/InRelease") == BODY

    with pytest.raises(ResolveError, match="HTTP 500"):
        HttpFetch(timeout=10)(f"{serve(failing)}/InRelease")
    assert len(failing.seen) == 1 + http.RETRIES


def self_signed(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A certificate for 127.0.0.1, made with openssl, and a server context holding it."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    return cert, tls


@pytest.mark.skipif(shutil.which("openssl") is None, reason="makes its certificate with openssl")
def test_the_ca_bundle_comes_from_the_environment_and_a_bad_certificate_is_not_retried(
        serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, tls = self_signed(tmp_path)
    script = Script([])
    url = serve(script, tls=tls).replace("http://", "https://")
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    start = time.monotonic()

    with http.session() as client, pytest.raises(requests.exceptions.SSLError):
        client.get(f"{url}/x")
    assert time.monotonic() - start < http.BACKOFF * 2  # not tried again with backoff

    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
    with http.session() as client:
        assert client.get(f"{url}/x").content == BODY



@pytest.mark.skipif(shutil.which("openssl") is None, reason="makes its certificate with openssl")
def test_the_ca_bundle_is_loaded_once_for_every_session_and_thread(
        serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """urllib3 alone parses the bundle for each connection it opens (17 in a cold apply)."""
    cert, tls = self_signed(tmp_path)
    url = serve(Script([]), tls=tls).replace("http://", "https://")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
    loads: list[object] = []
    load = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        loads.append(args or kwargs)
        load(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    bodies: list[bytes] = []

    def fetch() -> None:
        with http.session() as client:  # a session, so a connection, of its own
            bodies.append(client.get(f"{url}/x").content)

    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert bodies == [BODY] * 4
    assert len(loads) == 1


RESOLVER_PROBE = """
import os, subprocess, sys
from envforge.host.http import session
session()
child = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('RES_OPTIONS'))"],
                       capture_output=True, text=True, check=True)
print(os.environ.get("RES_OPTIONS"), child.stdout.strip(), sep="|")
"""


@pytest.mark.posix_only("glibc's resolver reads RES_OPTIONS; Windows has none")
def test_the_first_session_gives_this_process_the_quick_dns_retry_and_leaves_os_environ(
        ) -> None:
    """Set in the C environment (what glibc, and a child spawned with no env of its own, read),
    not in os.environ, from which `envforge run` builds the user's command's variables."""
    from envforge.host.dnsretry import QUICK_RETRY, RESOLV_CONF, retry_options

    conf = RESOLV_CONF.read_text(encoding="utf-8") if RESOLV_CONF.is_file() else None
    if not retry_options({}, conf):
        pytest.skip("this host's resolv.conf sets its own timeout or attempts")
    env = {k: v for k, v in os.environ.items() if k != "RES_OPTIONS"}
    done = subprocess.run([sys.executable, "-c", RESOLVER_PROBE], env=env, capture_output=True,
                          text=True, check=True, timeout=60)
    assert done.stdout.strip() == f"None|{QUICK_RETRY}"
    kept = subprocess.run([sys.executable, "-c", RESOLVER_PROBE],
                          env={**env, "RES_OPTIONS": ""}, capture_output=True, text=True,
                          check=True, timeout=60)
    assert kept.stdout.strip() == "|"  # the user's own choice, even empty, stays
