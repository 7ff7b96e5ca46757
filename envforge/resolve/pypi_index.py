"""A project's files as a package index lists them (PEP 691 JSON): for init's proposals and
for error messages, never for resolution (uv does that)."""

from __future__ import annotations

import zipfile
from collections.abc import Mapping, Sequence
from email.message import Message
from typing import Any

from envforge.resolve.releases import Release, releases_from_files

_JSON = "application/vnd.pypi.simple.v1+json"


def index_files(index: str, name: str, *, timeout: float = 30) -> list[Mapping[str, Any]] | None:
    """Every file of ``name`` on ``index`` (filename, requires-python, upload-time, yanked);
    [] when the index has no such project, None when it cannot say (HTML only, unreachable)."""
    import requests
    from packaging.utils import canonicalize_name

    from envforge.host.http import session

    url = f"{index.rstrip('/')}/{canonicalize_name(name)}/"
    try:
        with session() as http:
            response = http.get(url, headers={"Accept": _JSON}, timeout=timeout)
        if response.status_code == 404:
            return []
        response.raise_for_status()
        if not response.headers.get("Content-Type", "").startswith(_JSON):
            return None
        files = response.json().get("files", [])
    except (requests.RequestException, ValueError):
        return None
    return [f for f in files if isinstance(f, dict)]


def index_releases(index: str, name: str) -> list[Release] | None:
    """The releases of ``name``; None when the index cannot say: a message then goes without
    the list rather than fail a second time."""
    files = index_files(index, name)
    return None if files is None else releases_from_files(files)


def metadata_parses(files: Sequence[Mapping[str, Any]], *, timeout: float = 30) -> bool:
    """Whether a release's metadata is one today's resolvers read: its first wheel's core
    metadata (``core_metadata``) has every Requires-Dist and its Requires-Python valid
    under PEP 508 and PEP 440 (pandas 0.23.2-0.24.2 require ``pytz (>=2011k)``, which uv
    refuses: "has invalid metadata"). True where it cannot be told: the resolver then says."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    wheel = next((f for f in files if str(f.get("filename", "")).endswith(".whl")
                  and f.get("url")), None)
    if wheel is None:
        return True
    message = core_metadata(str(wheel["url"]), wheel.get("size"), timeout=timeout,
                            listed=bool(wheel.get("core-metadata",
                                                  wheel.get("dist-info-metadata"))))
    if message is None:
        return True
    try:
        for line in message.get_all("Requires-Dist") or ():
            Requirement(line)
        if message.get("Requires-Python"):
            SpecifierSet(message["Requires-Python"])
    except (InvalidRequirement, InvalidSpecifier):
        return False
    return True


def wheel_requirements(url: str, size: int | None, *, timeout: float = 30
                       ) -> list[str] | None:
    """A wheel's Requires-Dist lines (``core_metadata``); None where they cannot be read."""
    message = core_metadata(url, size, timeout=timeout, listed=True)
    return None if message is None else list(message.get_all("Requires-Dist") or ())


def core_metadata(url: str, size: Any, *, timeout: float = 30, listed: bool
                  ) -> Message | None:
    """A wheel's core metadata: the index's PEP 658 ``URL.metadata`` file where the index
    lists one (``listed``), else read from the wheel by byte ranges
    (``resolve/remotewheel.py``), never the whole wheel; None where neither can be had."""
    from email.parser import HeaderParser

    import requests

    from envforge.host.http import session
    from envforge.resolve.remotewheel import wheel_metadata

    try:
        with session() as http:
            text: str | None = None
            if listed:
                response = http.get(f"{url}.metadata", timeout=timeout)
                if response.status_code != 404:
                    response.raise_for_status()
                    text = response.content.decode("utf-8", "replace")
            if text is None and isinstance(size, int):
                text = wheel_metadata(http, url, size, timeout=timeout)
    except (requests.RequestException, OSError, ValueError, zipfile.BadZipFile):
        return None
    return None if text is None else HeaderParser().parsestr(text)
