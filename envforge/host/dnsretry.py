"""The DNS stub resolver's options for the network tools envforge runs (uv).

glibc waits 5 s for a lost UDP reply before it asks again (resolv.conf(5): ``timeout``,
default 5). uv opens a connection, and looks its host up, per concurrent request: tens per
resolution, two platforms at once. On a network that drops a few replies most locks then
wait 5 s or more on one lookup (``bench/dns.py`` measures a host's loss and uv's lookups).
``timeout:1 attempts:5`` asks again after 1 s and still gives a slow server its 5 s: glibc
resends the same query, so a late answer to the first is taken too. The host's own choice
wins: a ``RES_OPTIONS`` already set (even empty), or a ``timeout`` or ``attempts`` in
resolv.conf (the variable would replace both), leaves the environment as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import assert_never

from envforge.platforms import Os, host_platform

QUICK_RETRY = "timeout:1 attempts:5"
RESOLV_CONF = Path("/etc/resolv.conf")
_RETRY_SET = re.compile(r"^[ \t]*options[ \t]+(?:.*[ \t])?(?:timeout|attempts):\d+",
                        re.MULTILINE)


def retry_options(environ: Mapping[str, str], resolv_conf: str | None) -> dict[str, str]:
    """The variables to add to a child's environment: ``RES_OPTIONS`` unless the user or
    the host already chose (``resolv_conf``: the file's text, None where there is none)."""
    if "RES_OPTIONS" in environ:
        return {}
    if resolv_conf is not None and _RETRY_SET.search(resolv_conf):
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
