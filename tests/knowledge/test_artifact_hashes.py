"""Every artifact row's sha256 is the hash of the real file, wherever the file can be fetched
without a login (PyPI's files, Debian's archive). `make knowledge-check` runs this with the
source checks of test_data.py."""

from __future__ import annotations

import hashlib
import urllib.request
from urllib.parse import urlparse

import pytest

from envforge.knowledge import KnownArtifact, knowledge

# Hosts anyone can download from; NVIDIA's (login) and SourceForge's are checked by users.
REACHABLE = ("files.pythonhosted.org", "deb.debian.org")


def _reachable() -> list[KnownArtifact]:
    return [a for a in knowledge().artifacts.artifacts
            if a.url is not None and not a.login_required and urlparse(a.url).hostname in REACHABLE]


def test_reachable_rows_are_the_pypi_ones() -> None:
    """So that a new PyPI or Debian row is hash-checked below without anyone remembering to."""
    names = {a.filename for a in _reachable()}
    assert {"Theano-PyMC-1.0.5.tar.gz", "Theano-0.8.2.tar.gz", "Theano-1.0.5.tar.gz"} <= names
    for row in knowledge().artifacts.artifacts:
        if row not in _reachable():
            assert row.login_required or urlparse(row.url or "").hostname not in REACHABLE


def sha256_of_url(url: str) -> str:
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=120) as response:
        for block in iter(lambda: response.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@pytest.mark.network
@pytest.mark.parametrize("artifact", _reachable(), ids=lambda a: a.filename)
def test_sha256_matches_the_file(artifact: KnownArtifact) -> None:
    assert artifact.url is not None
    assert sha256_of_url(artifact.url) == artifact.sha256, artifact.source
