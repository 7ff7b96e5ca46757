"""A project's files as a package index lists them (PEP 691 JSON): for init's proposals and
for error messages, never for resolution (uv does that)."""

from __future__ import annotations

from collections.abc import Mapping
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
