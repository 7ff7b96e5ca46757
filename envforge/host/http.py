"""The one HTTP client: every download and index read goes through ``session()``.

One rule for all of them (four clients had four): a connect error, a dropped connection, a
read timeout or a 429/5xx answer is tried again, ``RETRIES`` times, with urllib3's
exponential backoff (0 s, then 1 s, 2 s) or the server's ``Retry-After`` up to
``MAX_RETRY_AFTER``; after the last try the answer is returned, not raised, so each caller
words its own error. A 404 is never retried, nor a certificate that does not verify.
Requests without a timeout get ``TIMEOUT``: a server that accepts and then says nothing
cannot hang a lock. Proxies (``HTTPS_PROXY``, ``NO_PROXY``) and CA bundles
(``REQUESTS_CA_BUNDLE``, ``CURL_CA_BUNDLE``) come from the environment, read as requests
reads them. Imported only where a request is made: requests
costs 0.1 s of start-up that a no-op apply does not pay.

Every connection that verifies certificates shares one SSL context per CA bundle, loaded
once per process: urllib3 otherwise makes a context and parses the bundle (certifi's 140-odd
certificates, 25 ms of CPU under OpenSSL 3) for each connection it opens, and a cold apply of
78 wheels opened 17 (0.45 s of CPU beside uv's build, measured with the bundle's loads timed).

The first session also gives this process's own DNS lookups the quick retry uv gets
(``host/dnsretry.py``): glibc waits 5 s for a lost reply, and on this machine's network one
warm lock in two waited 5 s for the Debian archive's address (0.7 s -> 5.4 s:
bench/results/lock-dns-stall.md). glibc reads ``RES_OPTIONS`` from the C environment when a
thread first resolves, so it is set there with ``os.putenv`` before any session exists (every
lookup here goes through a session), and not in ``os.environ``, from which the commands
envforge runs for the user (``envforge run``) take their variables.
"""

from __future__ import annotations

import functools
import os
import ssl
import threading
from collections.abc import Mapping
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry
from urllib3.util.ssl_ import create_urllib3_context

from envforge import __version__
from envforge.host.dnsretry import host_retry_options

RETRIES = 3
BACKOFF = 0.5  # seconds; urllib3 sleeps BACKOFF * 2 ** (n - 1) before the n-th retry, n > 1
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 30.0  # a Retry-After longer than this is cut to it
TIMEOUT = (10.0, 60.0)  # (connect, read) seconds
USER_AGENT = f"envforge/{__version__} python-requests/{requests.__version__}"

_Timeout = float | tuple[float, float] | tuple[float, None] | None


class _Retry(Retry):
    """urllib3's Retry with the server's ``Retry-After`` capped."""

    def get_retry_after(self, response: BaseHTTPResponse) -> float | None:
        after = super().get_retry_after(response)
        return None if after is None else min(after, MAX_RETRY_AFTER)


class _Adapter(HTTPAdapter):
    """An adapter that gives requests without a timeout the default one."""

    def send(self, request: requests.PreparedRequest, stream: bool = False,
             timeout: _Timeout = None, verify: bool | str = True,
             cert: bytes | str | tuple[bytes | str, bytes | str] | None = None,
             proxies: Mapping[str, str] | None = None) -> requests.Response:
        return super().send(request, stream=stream, timeout=TIMEOUT if timeout is None else timeout,
                            verify=verify, cert=cert, proxies=proxies)

    def cert_verify(self, conn: Any, url: str, verify: bool | str,
                    cert: bytes | str | tuple[bytes | str, bytes | str] | None) -> None:
        """requests' choice of CA bundle, handed to the pool as the bundle's shared context
        (``verifying_context``) in place of a path each new connection would load again."""
        super().cert_verify(conn, url, verify, cert)  # type: ignore[no-untyped-call]
        if conn.cert_reqs != "CERT_REQUIRED" or not (conn.ca_certs or conn.ca_cert_dir):
            return
        context = verifying_context(conn.ca_certs, conn.ca_cert_dir)
        if context is not None:  # else urllib3 loads the bundle itself, and words its error
            conn.conn_kw["ssl_context"] = context
            conn.ca_certs = conn.ca_cert_dir = None


def retry_rule() -> Retry:
    """The retry rule every session mounts."""
    return _Retry(total=RETRIES, connect=RETRIES, read=RETRIES, status=RETRIES, other=0,
                  backoff_factor=BACKOFF, status_forcelist=RETRY_STATUS,
                  allowed_methods=frozenset({"GET", "HEAD"}), raise_on_status=False,
                  respect_retry_after_header=True)


_CONTEXTS: dict[tuple[str | None, str | None, tuple[int, int] | None], ssl.SSLContext] = {}
_CONTEXTS_LOCK = threading.Lock()


def verifying_context(cafile: str | None, capath: str | None) -> ssl.SSLContext | None:
    """One context per CA bundle (file or folder) and its stat, verifying certificates as
    urllib3's own would (its defaults, ``CERT_REQUIRED``); None where the bundle does not
    load. A bundle changed on disk gets a new context."""
    where = cafile or capath
    try:
        st = os.stat(where) if where else None  # noqa: PTH116 (a str, as requests gives)
    except OSError:
        return None
    key = (cafile, capath, None if st is None else (st.st_mtime_ns, st.st_size))
    with _CONTEXTS_LOCK:
        context = _CONTEXTS.get(key)
        if context is None:
            context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
            try:
                context.load_verify_locations(cafile=cafile, capath=capath)
            except (OSError, ssl.SSLError):
                return None
            _CONTEXTS[key] = context
        return context


@functools.cache
def _quick_dns_retry() -> None:
    """RES_OPTIONS for this process's resolver, before its first lookup (once: two threads
    that both set it set the same value)."""
    for name, value in host_retry_options(os.environ).items():
        os.putenv(name, value)


def session() -> requests.Session:
    """A new session with the retry rule, the default timeout and envforge's user agent.
    Not shared between threads (requests does not promise that a session is thread-safe)."""
    _quick_dns_retry()
    http = requests.Session()
    adapter = _Adapter(max_retries=retry_rule())
    http.mount("https://", adapter)
    http.mount("http://", adapter)
    http.headers["User-Agent"] = USER_AGENT
    return http
