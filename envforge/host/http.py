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
from collections.abc import Mapping

import requests
from requests.adapters import HTTPAdapter
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

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


def retry_rule() -> Retry:
    """The retry rule every session mounts."""
    return _Retry(total=RETRIES, connect=RETRIES, read=RETRIES, status=RETRIES, other=0,
                  backoff_factor=BACKOFF, status_forcelist=RETRY_STATUS,
                  allowed_methods=frozenset({"GET", "HEAD"}), raise_on_status=False,
                  respect_retry_after_header=True)


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
