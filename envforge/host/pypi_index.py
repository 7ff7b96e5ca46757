"""A project's releases as a package index lists them (PEP 691 JSON), for error messages."""

from __future__ import annotations

from envforge.resolve.releases import Release, releases_from_files

_JSON = "application/vnd.pypi.simple.v1+json"


def index_releases(index: str, name: str, *, timeout: float = 30) -> list[Release] | None:
    """Every release of ``name`` on ``index``; None when the index cannot say (HTML only,
    unreachable): a message then goes without the list rather than fail a second time."""
    import requests
    from packaging.utils import canonicalize_name

    url = f"{index.rstrip('/')}/{canonicalize_name(name)}/"
    try:
        response = requests.get(url, headers={"Accept": _JSON}, timeout=timeout)
        if response.status_code == 404:
            return []
        response.raise_for_status()
        if not response.headers.get("Content-Type", "").startswith(_JSON):
            return None
        files = response.json().get("files", [])
    except (requests.RequestException, ValueError):
        return None
    return releases_from_files(files)
