"""The DNS stub resolver's options for the network tools envforge runs (uv).

glibc waits 5 s for a lost UDP reply before it asks again (resolv.conf(5): ``timeout``,
default 5). uv opens a connection, and looks its host up, per concurrent request: 19 for a
cold resolution of the bench's ml30 set, 26 warm, two platforms at once. On a network that
drops a few replies (here: 3% of lookups one at a time, 15% four at a time, each exactly
5.006 s) most locks then wait 5 s or more on one lookup. ``timeout:1 attempts:5`` asks again
after 1 s and still gives a slow server its 5 s: glibc resends the same query, so a late
answer to the first is taken too. The host's own choice wins: a ``RES_OPTIONS`` already set
(even empty) or a ``timeout`` in resolv.conf leaves the environment as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import assert_never

from envforge.platforms import Os, host_platform

QUICK_RETRY = "timeout:1 attempts:5"
RESOLV_CONF = Path("/etc/resolv.conf")
_TIMEOUT_SET = re.compile(r"^\s*options\s+(?:.*\s)?timeout:\d+", re.MULTILINE)


def retry_options(environ: Mapping[str, str], resolv_conf: str | None) -> dict[str, str]:
    """The variables to add to a child's environment: ``RES_OPTIONS`` unless the user or
    the host already chose (``resolv_conf``: the file's text, None where there is none)."""
    if "RES_OPTIONS" in environ:
        return {}
    if resolv_conf is not None and _TIMEOUT_SET.search(resolv_conf):
        return {}
    return {"RES_OPTIONS": QUICK_RETRY}


def host_retry_options(environ: Mapping[str, str]) -> dict[str, str]:
    """``retry_options`` for this host: glibc reads ``RES_OPTIONS``; Windows has no such
    resolver."""
    target = host_platform()
    match target.os:
        case Os.LINUX:
            try:
                text: str | None = RESOLV_CONF.read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = None
            return retry_options(environ, text)
        case Os.WINDOWS:
            return {}
        case _:
            assert_never(target.os)
